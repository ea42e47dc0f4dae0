#!/usr/bin/env python3
"""Writes the closed surface of a stocky quadruped as a TetGen .poly file (bench/stand_check.c).

The body is a union of boxes on a grid of cubic voxels (--voxel m): four legs 0.35 m square and
0.8 m tall, a torso 1.4 x 0.5 x 0.8 m on them, a neck at the torso's front end and a head
0.6 x 0.25 x 0.4 m overhanging it, 1.7 m tall in all (y up, the feet at y = 0). Its surface is
the set of voxel faces between a full and an empty voxel, one quadrilateral facet each, written
with its vertices shared. The script checks that this surface is a closed 2-manifold of genus 0
(every edge in exactly two faces, every vertex's faces one fan, V - E + F = 2) and stops
otherwise, so the union never has voxels touching only along an edge or at a corner.

    python3 bench/make_quadruped.py quadruped.poly
    tetgen -pq1.2 -a0.000016 quadruped.poly    # 158960 tets, 32958 vertices: quadruped.1.node/.ele
"""

import argparse
import sys

# The boxes, in metres: (x0, x1), (y0, y1), (z0, z1). x runs from tail to head.
BOXES = [
    ((0.00, 0.35), (0.00, 0.80), (0.00, 0.35)),  # legs
    ((0.00, 0.35), (0.00, 0.80), (0.45, 0.80)),
    ((1.05, 1.40), (0.00, 0.80), (0.00, 0.35)),
    ((1.05, 1.40), (0.00, 0.80), (0.45, 0.80)),
    ((0.00, 1.40), (0.80, 1.30), (0.00, 0.80)),  # torso
    ((1.10, 1.40), (1.30, 1.45), (0.25, 0.55)),  # neck
    ((1.00, 1.60), (1.45, 1.70), (0.20, 0.60)),  # head
]


def voxels(size):
    """The set of full voxels (i, j, k): voxel (i, j, k) spans [i, i + 1] * size on x, etc."""
    full = set()
    for box in BOXES:
        lo = [round(a / size) for a, _ in box]
        hi = [round(b / size) for _, b in box]
        for axis, (a, b) in enumerate(box):
            if abs(lo[axis] * size - a) > 1e-9 or abs(hi[axis] * size - b) > 1e-9:
                sys.exit(f"make_quadruped: box side {a}..{b} is not on the {size} m grid")
        for i in range(lo[0], hi[0]):
            for j in range(lo[1], hi[1]):
                for k in range(lo[2], hi[2]):
                    full.add((i, j, k))
    return full


def boundary_faces(full):
    """Quadrilaterals between a full and an empty voxel, corners counter-clockwise seen from
    outside (the empty side), as tuples of grid points."""
    faces = []
    for v in sorted(full):
        for axis in range(3):
            for side in (0, 1):
                n = list(v)
                n[axis] += 1 if side else -1
                if tuple(n) in full:
                    continue
                u, w = (axis + 1) % 3, (axis + 2) % 3
                base = list(v)
                base[axis] += side
                quad = []
                for du, dw in ((0, 0), (1, 0), (1, 1), (0, 1)):
                    p = list(base)
                    p[u] += du
                    p[w] += dw
                    quad.append(tuple(p))
                # (u, w, axis) is right-handed: this winding faces +axis; reverse it for -axis.
                faces.append(tuple(quad) if side else tuple(reversed(quad)))
    return faces


def check_manifold(faces):
    """Exits unless the faces form a closed, oriented 2-manifold of genus 0."""
    edges = {}
    around = {}
    for f, quad in enumerate(faces):
        for c in range(4):
            a, b = quad[c], quad[(c + 1) % 4]
            edges.setdefault((a, b), []).append(f)
            around.setdefault(a, []).append(f)
    for (a, b), fs in edges.items():
        if len(fs) != 1 or len(edges.get((b, a), [])) != 1:
            sys.exit(f"make_quadruped: edge {a}-{b} is not shared by exactly two faces")
    for p, fs in around.items():
        # The faces at p must form one cycle: walk from one face to the next across the edge
        # that leaves p.
        start = fs[0]
        f, seen = start, 0
        while True:
            quad = faces[f]
            c = quad.index(p)
            prev = quad[(c + 3) % 4]
            f = edges[(p, prev)][0]
            seen += 1
            if f == start or seen > len(fs):
                break
        if seen != len(fs):
            sys.exit(f"make_quadruped: the faces at vertex {p} are not one fan")
    vertices = len(around)
    euler = vertices - len(edges) // 2 + len(faces)
    if euler != 2:
        sys.exit(f"make_quadruped: Euler characteristic {euler}, not 2")
    return vertices


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the .poly file to write")
    parser.add_argument("--voxel", type=float, default=0.025, help="voxel side, m (default 0.025)")
    args = parser.parse_args()
    full = voxels(args.voxel)
    faces = boundary_faces(full)
    check_manifold(faces)
    index = {}
    for quad in faces:
        for p in quad:
            index.setdefault(p, len(index) + 1)
    with open(args.output, "w", encoding="ascii") as out:
        out.write(f"# stocky quadruped, {len(full)} voxels of {args.voxel} m (bench/make_quadruped.py)\n")
        out.write(f"{len(index)} 3 0 0\n")
        for p, i in index.items():
            x, y, z = (c * args.voxel for c in p)
            out.write(f"{i} {x:.6f} {y:.6f} {z:.6f}\n")
        out.write(f"{len(faces)} 0\n")
        for quad in faces:
            out.write("1\n4 " + " ".join(str(index[p]) for p in quad) + "\n")
        out.write("0\n0\n")
    volume = len(full) * args.voxel**3
    print(f"{args.output}: {len(full)} voxels, {volume:.4f} m^3, {len(index)} vertices, "
          f"{len(faces)} faces; closed 2-manifold of genus 0")


if __name__ == "__main__":
    main()
