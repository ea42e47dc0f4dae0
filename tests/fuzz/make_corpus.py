#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/seed-*): small valid
files in the shapes of the loaders' unit tests and a few broken ones. Files named crash-* are
inputs the fuzzers found (each with its fix in the library) and are not touched here.
Usage: python3 tests/fuzz/make_corpus.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# A unit cube split into 6 tets around the diagonal from (0,0,0) to (1,1,1), positively oriented.
CUBE = [(x, y, z) for z in (0, 1) for y in (0, 1) for x in (0, 1)]
CUBE_TETS = [(0, 1, 3, 7), (0, 1, 7, 5), (0, 2, 7, 3), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 7, 6)]


def det(t, pts):
    a, b, c, d = (pts[i] for i in t)
    u = [b[k] - a[k] for k in range(3)]
    v = [c[k] - a[k] for k in range(3)]
    w = [d[k] - a[k] for k in range(3)]
    return (u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
            u[2] * (v[0] * w[1] - v[1] * w[0]))


CUBE_TETS = [t if det(t, CUBE) > 0 else (t[0], t[1], t[3], t[2]) for t in CUBE_TETS]


def tetgen(pts, tets, base=0):
    node = "# cube\n%d 3 0 0\n" % len(pts)
    node += "".join("%d %g %g %g\n" % ((i + base,) + p) for i, p in enumerate(pts))
    ele = "%d 4 0\n" % len(tets)
    ele += "".join("%d %d %d %d %d\n" % ((i + base,) + tuple(v + base for v in t))
                   for i, t in enumerate(tets))
    return node, ele


def msh22(pts, tets):
    s = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n%d\n" % len(pts)
    s += "".join("%d %g %g %g\n" % ((i + 1,) + p) for i, p in enumerate(pts))
    s += "$EndNodes\n$Elements\n%d\n" % (len(tets) + 1)
    s += "1 2 2 0 1 1 2 4\n"  # a triangle, ignored
    s += "".join("%d 4 2 0 1 %d %d %d %d\n" % ((i + 2,) + tuple(v + 1 for v in t))
                 for i, t in enumerate(tets))
    return s + "$EndElements\n"


def msh41(pts, tets):
    n = len(pts)
    s = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n"
    s += "$PhysicalNames\n1\n3 1 \"body\"\n$EndPhysicalNames\n"
    s += "$Entities\n0 0 0 1\n1 0 0 0 1 1 1 1 1 0\n$EndEntities\n"
    s += "$Nodes\n2 %d 1 %d\n" % (n, n)
    s += "3 1 0 %d\n" % (n - 2) + "".join("%d\n" % (i + 1) for i in range(n - 2))
    s += "".join("%g %g %g\n" % p for p in pts[:n - 2])
    s += "3 1 1 2\n%d\n%d\n" % (n - 1, n)
    s += "".join("%g %g %g 0.5 0.5 0.5\n" % p for p in pts[n - 2:])
    s += "$EndNodes\n$Elements\n1 %d 1 %d\n3 1 4 %d\n" % (len(tets), len(tets), len(tets))
    s += "".join("%d %d %d %d %d\n" % ((i + 1,) + tuple(v + 1 for v in t))
                 for i, t in enumerate(tets))
    return s + "$EndElements\n"


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data.encode("latin-1") if isinstance(data, str) else data)


def pair(node, ele):
    return node + "\0" + ele


def main():
    node, ele = tetgen(CUBE, CUBE_TETS)
    node1, ele1 = tetgen(CUBE, CUBE_TETS, base=1)
    good_node = "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n"
    good_ele = "1 4 0\n0 0 1 2 3\n"
    tetgen_seeds = {
        "cube": pair(node, ele),
        "cube-one-based": pair(node1, ele1),
        "attributes-markers": pair("# 0-based\n   \n5 3 2 1   # header\n0  0.0 0.0 0.0   1.5 -2 1\n"
                                   "1\t1.0\t0\t0\t0 0 0\r\n# between\n\n2 0 1.0e0 0 0.25 7 1\n"
                                   "3 0 0 +1 0 0 1 # c\n  4 1 1 1 1e-3 2 0",
                                   "2 4 1 # tets\n0 0 1 2 3 -1\n\n1 1 2 3 4 2.5 # region\n"),
        "bom-crlf": pair("\xEF\xBB\xBF# bom\r\n5 3 1 0\r\n1 0 0 0 10\r\n2 1 0 0 20\r\n"
                         "3 0 1 0 30\r\n4 0 0 1 40\r\n5 1 1 1 50\r\n",
                         "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n"),
        "short-headers": pair("5\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n",
                              "2\n0 0 1 2 3\n1 1 2 3 4\n"),
        "flat-tet": pair("4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 1 0\n", good_ele),
        "huge-coordinates": pair("4\n0 0 0 0\n1 3e38 0 0\n2 0 3e38 0\n3 0 0 3e38\n", good_ele),
        "tiny-coordinates": pair("4\n0 0 0 0\n1 1e-30 0 0\n2 0 1e-30 0\n3 0 0 1e-30\n", good_ele),
        "broken-nan": pair("4 3 0 0\n0 0 0 0\n1 1 0 0\n2 nan 1 0\n3 0 0 1\n", good_ele),
        "broken-beyond-float": pair("4 3 0 0\n0 0 0 0\n1 1e39 0 0\n2 0 1 0\n3 0 0 1\n", good_ele),
        "broken-truncated": pair("# c\n4 3 0 0\n0 0 0 0\n\n1 1 0 0\n2 0 1 0\n", good_ele),
        "broken-quadratic": pair(good_node, "1 10 0\n0 0 1 2 3 0 1 2 3 0 1\n"),
        "broken-index-range": pair(good_node, "1 4 0\n0 0 1 2 99999999999999999999999\n"),
        "broken-repeated": pair(good_node, "1 4 0\n0 0 1 1 3\n"),
        "broken-no-separator": good_node,
    }
    for k, v in tetgen_seeds.items():
        write("tetgen", k, v)

    gmsh_seeds = {
        "cube-v22.msh": msh22(CUBE, CUBE_TETS),
        "cube-v41.msh": msh41(CUBE, CUBE_TETS),
        "quadratic-v22.msh": "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n10\n" +
        "".join("%d %g %g %g\n" % (i + 1, x, y, z) for i, (x, y, z) in enumerate(
            [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (.5, 0, 0), (.5, .5, 0), (0, .5, 0),
             (0, 0, .5), (0, .5, .5), (.5, 0, .5)])) +
        "$EndNodes\n$Elements\n1\n1 11 2 0 1 1 2 3 4 5 6 7 8 9 10\n$EndElements\n",
        "skipped-sections-crlf.msh": msh22(CUBE, CUBE_TETS).replace("\n", "\r\n").replace(
            "$Nodes", "$Comments\r\nanything\r\n$EndComments\r\n$Nodes", 1),
        "broken-binary.msh": "$MeshFormat\n2.2 1 8\n$EndMeshFormat\n",
        "broken-v40.msh": "$MeshFormat\n4 0 8\n$EndMeshFormat\n",
        "broken-unknown-tag.msh": msh22(CUBE, CUBE_TETS).replace("2 4 2 0 1 1 2", "2 4 2 0 1 99 2"),
        "broken-no-end.msh": msh22(CUBE, CUBE_TETS).replace("$EndElements\n", ""),
        "broken-hexahedron.msh": msh22(CUBE, []).replace("$Elements\n1\n", "$Elements\n2\n") .replace(
            "$EndElements", "2 5 0 1 2 3 4 5 6 7 8\n$EndElements"),
    }
    for k, v in gmsh_seeds.items():
        write("gmsh", k, v)

    obj_seeds = {
        "quad.obj": "# a quad\nv 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nf 1 2 3 4\n",
        "corner-forms.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt 1 1\n"
                            "vn 0 0 1\nf 1/1/1 2/2/1 3/3/1\nf -3/-3 -1/-1 -2/-2\n",
        "seam.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt .5 .5\n"
                    "f 1/1 2/2 3/3\nf 2/4 4/2 3/1\n",
        "ignored-crlf.obj": "mtllib a.mtl\r\no thing\r\ng group\r\ns 1\r\nusemtl m\r\n"
                            "v 0 0 0 1\r\nv 1 0 0 0.5 0.5 0.5\r\nv 0 1 0\r\nl 1 2\r\np 1\r\n"
                            "f 1//1 2//1 3//1\r\n".replace("f 1//1", "vn 0 0 1\r\nf 1//1"),
        "broken-index-zero.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n",
        "broken-mixed-uvs.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/1 3/1\nf 1 2 3\n",
        "broken-inf.obj": "v 0 0 0\nv 1 inf 0\nv 0 1 0\nf 1 2 3\n",
        "broken-range.obj": "v 0 0 0\nv 1 0 0\nf 1 2 3\n",
        "broken-repeated.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 2\n",
    }
    for k, v in obj_seeds.items():
        write("obj", k, v)

    body_seeds = {
        "cube-tetgen": pair(node, ele),
        "two-tets-tetgen": pair("5\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n",
                                "2\n0 0 1 2 3\n1 1 2 3 4\n"),
        "inverted-tetgen": pair(good_node, "1 4 0\n0 0 2 1 3\n"),
        "huge-tetgen": pair("4\n0 0 0 0\n1 3e38 0 0\n2 0 3e38 0\n3 0 0 3e38\n", good_ele),
        "tiny-tetgen": pair("4\n0 0 0 0\n1 1e-30 0 0\n2 0 1e-30 0\n3 0 0 1e-30\n", good_ele),
        "far-tetgen": pair("4\n0 1e30 0 0\n1 1e30 1 0\n2 1e30 0 1\n3 1e30 1 1\n", good_ele),
        "flat-tetgen": pair("4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 1 0\n", good_ele),
        "cube-v22.msh": msh22(CUBE, CUBE_TETS),
        "cube-v41.msh": msh41(CUBE, CUBE_TETS),
    }
    for k, v in body_seeds.items():
        write("body", k, v)

    def raw(flags, pts, tets, exponent=128, translation=None, floats=False):
        b = bytes([flags, (len(pts) - 1) % 256, len(tets), exponent])
        if translation is not None:
            b += struct.pack("<3f", *translation)
        for p in pts:
            b += struct.pack("<3f", *p) if floats else struct.pack("<3b", *p)
        for t in tets:
            b += bytes(t)
        return b

    cube8 = [tuple(8 * c for c in p) for p in CUBE]
    raw_seeds = {
        "cube-grid": raw(0, cube8, CUBE_TETS),
        "cube-scaled-up": raw(1, CUBE, CUBE_TETS, exponent=128 + 120),
        "cube-scaled-down": raw(1, CUBE, CUBE_TETS, exponent=128 - 120),
        "cube-floats": raw(2, CUBE, CUBE_TETS, floats=True),
        "cube-translated": raw(4, cube8, CUBE_TETS, translation=(1e6, -2.5, 0.0)),
        "cube-nan": raw(2, CUBE[:7] + [(float("nan"), 1, 1)], CUBE_TETS, floats=True),
        "cube-inf-translation": raw(4, cube8, CUBE_TETS, translation=(float("inf"), 0, 0)),
        "bad-index": raw(0, cube8, [(0, 1, 3, 255)]),
        "no-tets": raw(0, cube8, []),
    }
    for k, v in raw_seeds.items():
        write("body_raw", k, v)
    for k, v in collider_seeds().items():
        write("collider", k, v)


def collider_seeds():
    """Inputs of fuzz_collider.c: meshes (closed, inward, open, NaN, bad index, none) and SDFs."""

    def sb(v):
        return struct.pack("b", v)

    def mesh(flags, verts, tris, floats=False):
        out = bytes([flags, len(verts), len(tris)])
        for v in verts:
            for c in v:
                out += struct.pack("<f", c) if floats else sb(c)
        for t in tris:
            out += bytes(t)
        return out

    def sdf(flags, dims, cell_byte, origin, dist):
        out = bytes([flags] + list(dims) + [cell_byte])
        for c in origin:
            out += sb(c)
        for v in dist:
            out += sb(v)
        return out

    tet_v = [(0, 0, 0), (8, 0, 0), (0, 8, 0), (0, 0, 8)]
    tet_t = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    quad_v = [(-16, 0, -16), (16, 0, -16), (-16, 0, 16), (16, 0, 16)]
    quad_t = [(0, 2, 1), (1, 2, 3)]
    quad_f = [(-2.0, 0.0, -2.0), (2.0, 0.0, -2.0), (-2.0, 0.0, 2.0), (2.0, 0.0, 2.0)]
    floor = [max(-128, min(127, int((-2 + j + 1) * 16))) for k in range(3) for j in range(3)
             for i in range(3)]
    inf_sdf = (bytes([3, 2, 2, 2]) + struct.pack("<f", 1.0) + struct.pack("<fff", -0.5, -1.0, -0.5)
               + b"".join(struct.pack("<f", v) for v in [float("inf"), 1, 1, 1, 1, 1, 1, 1]))
    return {
        "tet-closed": mesh(0, tet_v, tet_t),
        "tet-inward": mesh(0, tet_v, [(a, c, b) for a, b, c in tet_t]),
        "tet-moving": mesh(4, tet_v, tet_t),
        "quad-open": mesh(0, quad_v, quad_t),
        "quad-open-moving": mesh(4, quad_v, quad_t),
        "quad-floats": mesh(2, quad_f, quad_t, floats=True),
        "quad-nan": mesh(2, [(-2.0, float("nan"), -2.0)] + quad_f[1:], quad_t, floats=True),
        "bad-index": mesh(0, quad_v, [(0, 2, 255), (1, 2, 3)]),
        "no-triangles": mesh(0, quad_v, []),
        "degenerate": mesh(0, quad_v, [(0, 0, 1), (1, 1, 1)]),
        "sdf-floor": sdf(1, (3, 3, 3), 64, (-8, -16, -8), floor),
        "sdf-moving": sdf(5, (3, 3, 3), 64, (-8, -16, -8), floor),
        "sdf-zero-cell": sdf(1, (3, 3, 3), 32, (-8, -16, -8), floor),
        "sdf-flat": sdf(1, (3, 1, 3), 64, (-8, -16, -8), floor[:9]),
        "sdf-inf": inf_sdf,
        # A grid libFuzzer found: one point at -4.25e37 m, finite but no distance field (its
        # neighbours change by far more than the cell); refused since.
        "sdf-far-value": bytes.fromhex(
            "03020202" "0000803f" "000000bf" "00008000" "000000bf" "000000bf" "80000080"
            "7f000080" "3f000080" "3f0000fe" "ffff7f00" "00000080" "3f000080" "3f000080" "3f"),
    }


if __name__ == "__main__":
    main()
