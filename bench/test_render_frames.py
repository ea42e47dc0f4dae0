#!/usr/bin/env python3
"""Tests of bench/render_frames.py: the VTK readers, the tet boundary and its orientation, the
bodies, the colliders' shapes, and a rendered PNG (skipped without matplotlib).

  python3 bench/test_render_frames.py
  python3 -m unittest discover -s bench -p 'test_*.py'
"""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render_frames as rf  # noqa: E402

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

HEADER = "# vtk DataFile Version 3.0\npiola frame\nASCII\n"
CUBE = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
# The cube 0..1 as 6 tets around its diagonal 0-7 (Kuhn), corner i at (i >> 2, i >> 1 & 1, i & 1).
KUHN = np.array([[0, 4, 6, 7], [0, 6, 2, 7], [0, 2, 3, 7], [0, 3, 1, 7], [0, 1, 5, 7],
                 [0, 5, 4, 7]])
CUBE_TRIANGLES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                           [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def grid_text(points, tets):
    rows = "".join("%.7g %.7g %.7g\n" % tuple(p) for p in points)
    cells = "".join("4 %d %d %d %d\n" % tuple(t) for t in tets)
    return (HEADER + "DATASET UNSTRUCTURED_GRID\nPOINTS %d float\n%s" % (len(points), rows)
            + "CELLS %d %d\n%s" % (len(tets), 5 * len(tets), cells)
            + "CELL_TYPES %d\n%s" % (len(tets), "10\n" * len(tets)))


def poly_text(points, triangles):
    rows = "".join("%.7g %.7g %.7g\n" % tuple(p) for p in points)
    polys = "".join("3 %d %d %d\n" % tuple(t) for t in triangles)
    return (HEADER + "DATASET POLYDATA\nPOINTS %d float\n%sPOLYGONS %d %d\n%s"
            % (len(points), rows, len(triangles), 4 * len(triangles), polys))


def enclosed_volume(polys):
    """Volume inside a closed surface of triangles or quads (k, 3|4, 3): positive when the faces
    are counter-clockwise seen from outside."""
    tris = [polys[:, [0, i, i + 1]] for i in range(1, polys.shape[1] - 1)]
    t = np.concatenate(tris)
    return np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6


class Readers(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_one_tet_has_four_outward_faces(self):
        points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
        for tet in ([0, 1, 2, 3], [0, 2, 1, 3]):  # both windings
            pts, kind, tets = rf.read_vtk(self.write("t.vtk", grid_text(points, [tet])))
            self.assertEqual(kind, "tets")
            np.testing.assert_allclose(pts, points)
            faces = rf.orient_outward(pts, *rf.tet_boundary(tets))
            self.assertEqual(faces.shape, (4, 3))
            n = rf.normals(pts[faces])
            centre_to_face = pts[faces].mean(1) - pts.mean(0)
            self.assertTrue(np.all(np.einsum("ij,ij->i", n, centre_to_face) > 0))
            self.assertAlmostEqual(enclosed_volume(pts[faces]), 1 / 6)

    def test_shared_faces_are_inside(self):
        points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
        faces, _ = rf.tet_boundary([[0, 1, 2, 3], [1, 2, 3, 4]])
        self.assertEqual(len(faces), 6)
        self.assertNotIn((1, 2, 3), {tuple(sorted(f)) for f in faces})
        self.assertGreater(enclosed_volume(points[rf.orient_outward(points, *rf.tet_boundary(
            [[0, 1, 2, 3], [1, 2, 3, 4]]))]), 0)

    def test_cube_of_six_tets_and_a_block_of_two_cubes(self):
        faces = rf.orient_outward(CUBE, *rf.tet_boundary(KUHN))
        self.assertEqual(len(faces), 12)
        self.assertAlmostEqual(enclosed_volume(CUBE[faces]), 1.0)
        points = np.concatenate([CUBE, CUBE + [1, 0, 0]])  # the second cube's corners are 8..15
        points[8:12] = CUBE[4:8]  # its x = 1 face is the first cube's: corners 4..7 shared
        tets = np.concatenate([KUHN, np.where(KUHN < 4, KUHN + 4, KUHN + 8)])
        path = self.write("block.vtk", grid_text(points, tets))
        pts, triangles, bodies = rf.load_surface(path, {})
        self.assertEqual(len(triangles), 20)
        self.assertAlmostEqual(enclosed_volume(pts[triangles]), 2.0, places=5)
        self.assertEqual(set(bodies), {0})

    def test_winding_of_the_first_frame_is_kept(self):
        points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
        first = self.write("frame_00000.vtk", grid_text(points, [[0, 1, 2, 3]]))
        points[3] = [0.2, 0.2, -0.5]  # the tet inverted: vertex 3 through the face 0 1 2
        later = self.write("frame_00001.vtk", grid_text(points, [[0, 1, 2, 3]]))
        reference = rf.load_surface(first, {})[1]
        pts, kept, _ = rf.load_surface(later, {}, reference=first)
        np.testing.assert_array_equal(kept, reference)
        bottom = [i for i, f in enumerate(kept) if 3 not in f][0]
        self.assertLess(rf.normals(pts[kept])[bottom] @ [0, 0, 1], 0)  # still facing down
        self.assertFalse(np.array_equal(rf.load_surface(later, {})[1], reference))

    def test_polydata_cube_and_bodies(self):
        points = np.concatenate([CUBE, CUBE * 0.5 + 3])
        triangles = np.concatenate([CUBE_TRIANGLES, CUBE_TRIANGLES + 8])
        path = self.write("p.vtk", poly_text(points, triangles))
        pts, kind, cells = rf.read_vtk(path)
        self.assertEqual((kind, cells.shape), ("triangles", (24, 3)))
        self.assertAlmostEqual(enclosed_volume(pts[cells[:12]]), 1.0)
        _, _, bodies = rf.load_surface(path, {})
        self.assertEqual(list(bodies), [0] * 12 + [1] * 12)
        _, _, bodies = rf.load_surface(path, {}, body_vertices=4)
        self.assertEqual(sorted(set(bodies)), [0, 1, 2, 3])

    def test_malformed_files(self):
        good = grid_text(CUBE, KUHN)
        bad = {
            "not vtk": "hello\n",
            "binary": good.replace("ASCII", "BINARY"),
            "few points": good.replace("POINTS 8", "POINTS 9"),
            "text in points": good.replace("0 0 1\n", "0 zero 1\n", 1),
            "triangle cells": good.replace("4 0 4 6 7", "3 0 4 6 7"),
            "index too large": good.replace("4 0 4 6 7", "4 0 4 6 8"),
            "wedge": good.replace("CELL_TYPES 6\n10", "CELL_TYPES 6\n13"),
            "structured": good.replace("UNSTRUCTURED_GRID", "STRUCTURED_POINTS"),
            "no cells": good[:good.index("CELLS")],
        }
        for what, text in bad.items():
            with self.subTest(what):
                with self.assertRaises(rf.FrameError):
                    rf.read_vtk(self.write("bad.vtk", text))


class Colliders(unittest.TestCase):
    def test_closed_shapes_are_outward(self):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            meshes = rf.collider_meshes([
                {"type": "sphere", "center": [1, 2, 3], "radius": 0.5},
                {"type": "capsule", "a": [0, 0, 0], "b": [0, 0, 2], "radius": 0.5},
                {"type": "box", "center": [0, 1, 0], "half_extents": [1, 2, 3],
                 "rotation": [0, 0.3826834, 0, 0.9238795]},
                {"type": "funnel", "base": [0, 3.5, 0], "axis": [0, 1, 0], "base_radius": 0.9,
                 "top_radius": 2.5, "height": 2.0},
                {"type": "plane", "normal": [0, 1, 0], "offset": 0},
                {"type": "torus"}])
        self.assertIn("torus", stderr.getvalue())
        self.assertEqual([see for _, see in meshes], [False, False, False, True])
        sphere, capsule, box = (m for m, _ in meshes[:3])
        self.assertAlmostEqual(enclosed_volume(sphere), 4 / 3 * np.pi / 8, delta=0.01)
        self.assertAlmostEqual(enclosed_volume(capsule), np.pi / 4 * 2 + np.pi / 6, delta=0.02)
        self.assertAlmostEqual(enclosed_volume(box), 48, places=4)
        funnel = meshes[3][0].reshape(-1, 3)
        radius = np.hypot(funnel[:, 0], funnel[:, 2])
        np.testing.assert_allclose(radius, 0.9 + (funnel[:, 1] - 3.5) * 0.8, atol=1e-9)

    def test_moving_sphere(self):
        ball = {"type": "sphere", "center": [0, 2, 0], "radius": 0.5, "velocity": [0, -2, 0],
                "stop_time": 0.5, "stop": [0, 1, 0]}
        self.assertEqual(rf.collider_at(ball, None)["center"], [0, 2, 0])
        np.testing.assert_allclose(rf.collider_at(ball, 0.25)["center"], [0, 1.5, 0])
        np.testing.assert_allclose(rf.collider_at(ball, 3.0)["center"], [0, 1, 0])
        mesh = rf.collider_meshes([ball], 0.25)[0][0].reshape(-1, 3)
        np.testing.assert_allclose((mesh.min(0) + mesh.max(0)) / 2, [0, 1.5, 0], atol=1e-9)
        capsule = {"type": "capsule", "a": [0, 0, 0], "b": [1, 0, 0], "radius": 0.1,
                   "velocity": [0, 0, 1]}
        moved = rf.collider_at(capsule, 2.0)
        np.testing.assert_allclose([moved["a"], moved["b"]], [[0, 0, 2], [1, 0, 2]])
        box = {"type": "box", "center": [0, 0, 0], "half_extents": [1, 1, 1]}
        self.assertIs(rf.collider_at(box, 1.0), box)

    def test_open_surfaces(self):
        self.assertFalse(rf.is_open(CUBE_TRIANGLES))
        self.assertTrue(rf.is_open(CUBE_TRIANGLES[:-1]))
        self.assertTrue(rf.is_open(np.array([[0, 1, 2], [0, 2, 3]])))  # a square of cloth

    def test_plane_patch(self):
        patch = rf.plane_patch(np.array([0, 2.0, 0]), 1.0, np.array([-1, 0, 2]),
                               np.array([3, 4, 5]))
        self.assertEqual(patch.shape, (1, 4, 3))
        np.testing.assert_allclose(patch[0, :, 1], 0.5)  # 2 y = 1
        np.testing.assert_allclose(rf.normals(patch)[0], [0, 1, 0], atol=1e-12)
        self.assertAlmostEqual(np.ptp(patch[0, :, 0]), 4.4)


class Command(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.frames = os.path.join(self.dir.name, "frames")
        os.mkdir(self.frames)

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rf.main(list(args))
        return out.getvalue(), err.getvalue()

    def test_no_frames_is_an_error(self):
        with self.assertRaises(SystemExit) as e:
            self.run_main(self.frames)
        self.assertIn("no frame_NNNNN.vtk", str(e.exception.code))

    def test_malformed_frame_is_an_error(self):
        with open(os.path.join(self.frames, "frame_00000.vtk"), "w") as f:
            f.write(HEADER + "DATASET POLYDATA\nPOINTS 2 float\n0 0 0\n")
        with self.assertRaises(SystemExit) as e:
            self.run_main(self.frames)
        self.assertIn("frame_00000.vtk", str(e.exception.code))

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is missing")
    def test_non_finite_points_are_left_out_with_a_warning(self):
        points = CUBE.copy()
        points[7] = np.nan
        with open(os.path.join(self.frames, "frame_00000.vtk"), "w") as f:
            f.write(poly_text(points, CUBE_TRIANGLES))
        out, err = self.run_main(self.frames, "--width-per-panel", "2")
        self.assertIn("6 faces with non-finite points left out", err)
        self.assertTrue(os.path.exists(os.path.join(self.frames, "strip.png")))

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is missing")
    def test_strip_and_each(self):
        for frame, lift in enumerate([4.0, 2.0, 0.0]):
            with open(os.path.join(self.frames, "frame_%05d.vtk" % frame), "w") as f:
                f.write(grid_text(CUBE - [0.5, -lift, 0.5], KUHN) if frame % 2 else
                        poly_text(CUBE - [0.5, -lift, 0.5], CUBE_TRIANGLES))
        with open(os.path.join(self.frames, "scene.json"), "w") as f:
            json.dump({"dt": 0.005, "every": 20, "colliders": [
                {"type": "plane", "normal": [0, 1, 0], "offset": 0.0},
                {"type": "funnel", "base": [0, 3.5, 0], "axis": [0, 1, 0], "base_radius": 0.9,
                 "top_radius": 2.5, "height": 2.0}]}, f)
        strip = os.path.join(self.dir.name, "strip.png")
        out, _ = self.run_main(self.frames, "--out", strip, "--width-per-panel", "2")
        with open(strip, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertIn("wrote", out)
        each = os.path.join(self.dir.name, "each")
        self.run_main(self.frames, "--each", each, "--frames", "0,2", "--width-per-panel", "2")
        self.assertEqual(sorted(os.listdir(each)), ["frame_00000.png", "frame_00002.png"])
        for name in os.listdir(each):
            self.assertGreater(os.path.getsize(os.path.join(each, name)), 1000)
        with self.assertRaises(SystemExit):
            self.run_main(self.frames, "--frames", "0,7")

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is missing")
    def test_cloth_frames(self):
        # A 4 x 4 grid of cloth (POLYDATA, open), falling, with a moving sphere: drawn two-sided
        # (its faces turned away from the camera too), the sphere where its motion puts it.
        n = 5
        grid = np.array([[i / 4, 0, j / 4] for i in range(n) for j in range(n)], float)
        tris = []
        for i in range(n - 1):
            for j in range(n - 1):
                a, b, c, d = i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1
                tris += [[a, c, b], [a, d, c]]  # normals down: turned away from a camera above
        for frame, y in enumerate([1.0, 0.5]):
            with open(os.path.join(self.frames, "frame_%05d.vtk" % frame), "w") as f:
                f.write(poly_text(grid + [0, y, 0], np.array(tris)))
        with open(os.path.join(self.frames, "scene.json"), "w") as f:
            json.dump({"dt": 0.005, "every": 20, "frames": "cloth", "colliders": [
                {"type": "sphere", "center": [0.5, 2.0, 0.5], "radius": 0.2,
                 "velocity": [0, -2, 0], "stop_time": 0.1, "stop": [0.5, 1.8, 0.5]}]}, f)
        drawn = []
        original = rf.draw_panel

        def spy(ax, poly, surface, meshes, planes, view, two_sided=False):
            drawn.append((two_sided, meshes))
            return original(ax, poly, surface, meshes, planes, view, two_sided)

        rf.draw_panel = spy
        try:
            strip = os.path.join(self.dir.name, "cloth.png")
            self.run_main(self.frames, "--out", strip, "--width-per-panel", "2")
        finally:
            rf.draw_panel = original
        self.assertEqual([two for two, _ in drawn], [True, True])
        centres = [m[0][0].reshape(-1, 3) for _, m in drawn]
        np.testing.assert_allclose([(c.min(0) + c.max(0))[1] / 2 for c in centres], [2.0, 1.8],
                                   atol=1e-9)
        self.assertGreater(os.path.getsize(strip), 1000)

    def test_caption(self):
        self.assertEqual(rf.caption(25, {"dt": 0.005, "every": 10}), "t = 1.25 s")
        self.assertEqual(rf.caption(3, {}), "frame 3")


if __name__ == "__main__":
    unittest.main()
