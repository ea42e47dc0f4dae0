// A 1 x 0.5 x 0.25 m box for the Gmsh loader's tests (tests/test_gmsh.c), meshed by
// Debian's gmsh 4.8.4 (no physical groups, so every element is saved):
//   gmsh -3 -format msh41 gmsh_box.geo -o gmsh_box.msh
//   gmsh -3 -order 2 -format msh41 gmsh_box.geo -o gmsh_box_order2.msh
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 0.5, 0.25};
MeshSize{ PointsOf{ Volume{1}; } } = 0.4;
