#!/usr/bin/env python3
"""Pictures of the frames that `piola run --out DIR` writes, drawn with numpy and matplotlib.

  python3 bench/render_frames.py DIR [--frames 0,10,20,40] [--out strip.png]
  python3 bench/render_frames.py DIR --each PNG_DIR          # one PNG per frame

The default is a horizontal strip, DIR/strip.png, of 6 frames evenly spaced over those present.
Options: --width-per-panel/--height-per-panel (inches), --dpi, --elev/--azim (the camera, in
degrees as in matplotlib) and --body-vertices K (see --help).

Input, legacy ASCII VTK ("# vtk DataFile Version 3.0", a title line, "ASCII", then sections):
  DIR/frame_NNNNN.vtk, NNNNN the frame number from 0, either
    DATASET UNSTRUCTURED_GRID: POINTS n float, CELLS m 5m ("4 a b c d": tetrahedra) and
      CELL_TYPES m (all 10). Drawn is the boundary surface: the tet faces that belong to one tet
      only, each turned so that its normal points away from its tet's fourth vertex in the first
      frame of DIR (the winding is kept in later frames, where tets may be inverted);
    DATASET POLYDATA: POINTS n float and POLYGONS m 4m ("3 a b c": triangles, counter-clockwise
      seen from outside).
  DIR/scene.json (optional): "dt" and "every" give the time of frame N, N * every * dt, and
    "colliders" the shapes drawn with the bodies: "plane" (normal, offset: the points x with
    normal . x = offset; drawn as a light patch under the bodies' footprint), "funnel" (an open
    cone frustum from base_radius at base to top_radius at base + height * axis; drawn
    see-through), "sphere" (center, radius), "box" (center, half_extents, rotation as the
    quaternion [x, y, z, w]) and "capsule" (a, b, radius). Other types are skipped with a warning.
    A sphere or capsule with "velocity" moves: its centre (ends) at time t is the given one plus
    velocity * t, until "stop_time", from which it stands at "stop" (a sphere; else where the
    motion took it), as the cloth scene's sphere does (`piola run --scene cloth`).

The picture: y is up, as in the simulation. Each body (a connected part of the surface, or
vertex index // K with --body-vertices K) has its colour, shaded flat by a light from the upper
left of the camera. The projection is orthographic, and faces turned away from the camera are
left out (exact for closed, outward-turned surfaces); open surfaces (an edge of one triangle
only: cloth) are drawn from both sides. All panels of a strip, and all PNGs of
--each, share one camera and one box: the bounds of the frames shown and of the colliders.
Faces are drawn back to front by the depth of their centres (painter's algorithm), so a face
may wrongly cover another where large and small faces meet, e.g. at the funnel's wall.
"""
import argparse
import json
import os
import re
import sys
import time
import warnings

try:
    import numpy as np
except ImportError:
    sys.exit("render_frames.py: numpy is missing for %s (Debian/Ubuntu: apt-get install "
             "python3-numpy; elsewhere: python3 -m pip install numpy)" % sys.executable)

FRAME_NAME = re.compile(r"^frame_(\d+)\.vtk$")
SECTION = re.compile(r"^[ \t]*([A-Z_]+)\b([^\n]*)$", re.M)  # data lines start with numbers
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#8cd17d", "#d37295", "#a0cbe8", "#ffbe7d", "#86bcb6"]


class FrameError(Exception):
    """A frame file that cannot be read or is not one of the two formats."""


def _numbers(text, count, what, path):
    with warnings.catch_warnings():  # text that is not all numbers: fewer values, an error below
        warnings.simplefilter("ignore")
        values = np.fromstring(text, sep=" ") if text.strip() else np.zeros(0)
    if values.size != count:
        raise FrameError("%s: %s holds %d numbers, %d expected" % (path, what, values.size, count))
    return values


def read_vtk(path):
    """Returns (points (n, 3), kind, cells): kind "tets" with cells (m, 4), or "triangles" with
    cells (m, 3). Raises FrameError when the file is not one of the two formats above."""
    try:
        with open(path, "r") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise FrameError("%s: %s" % (path, e))
    lines = text.split("\n", 3)
    if len(lines) < 4 or not lines[0].startswith("# vtk DataFile") or lines[2].strip() != "ASCII":
        raise FrameError("%s: not a legacy ASCII VTK file" % path)
    heads, sections = list(SECTION.finditer(lines[3])), {}
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(lines[3])
        sections.setdefault(h.group(1), (h.group(2).split(), lines[3][h.end():end]))
    dataset = " ".join(sections.get("DATASET", ([], ""))[0])
    if dataset not in ("UNSTRUCTURED_GRID", "POLYDATA"):
        raise FrameError("%s: DATASET %r is neither UNSTRUCTURED_GRID nor POLYDATA"
                         % (path, dataset))
    kind, key, width = ("tets", "CELLS", 4) if dataset == "UNSTRUCTURED_GRID" else \
        ("triangles", "POLYGONS", 3)
    try:
        n = int(sections["POINTS"][0][0])
        m, size = (int(v) for v in sections[key][0][:2])
    except (KeyError, IndexError, ValueError):
        raise FrameError("%s: missing or malformed POINTS or %s header" % (path, key))
    points = _numbers(sections["POINTS"][1], 3 * n, "POINTS", path).reshape(n, 3)
    if size != (width + 1) * m:
        raise FrameError("%s: %s %d %d: only %s are supported" % (path, key, m, size, kind))
    cells = _numbers(sections[key][1], size, key, path).reshape(m, width + 1)
    if m and (np.any(cells[:, 0] != width) or cells[:, 1:].min() < 0 or cells[:, 1:].max() >= n):
        raise FrameError("%s: each %s row must be %d, then %d point indices below %d"
                         % (path, key, width, width, n))
    if kind == "tets" and "CELL_TYPES" in sections:
        if np.any(_numbers(sections["CELL_TYPES"][1], m, "CELL_TYPES", path) != 10):
            raise FrameError("%s: CELL_TYPES other than 10 (tetrahedron)" % path)
    return points, kind, cells[:, 1:].astype(np.int64)


def tet_boundary(tets):
    """The faces of tets (m, 4) that belong to one tet only: (faces (k, 3), opposite (k,)), with
    opposite the fourth vertex of each face's tet."""
    t = np.asarray(tets, dtype=np.int64).reshape(-1, 4)
    faces = np.concatenate([t[:, [1, 2, 3]], t[:, [0, 2, 3]], t[:, [0, 1, 3]], t[:, [0, 1, 2]]])
    opposite = t.T.ravel()
    s = np.sort(faces, axis=1)
    n = int(t.max()) + 1 if t.size else 1
    if n ** 3 < 2 ** 62:  # one integer key per face: faster than unique rows
        _, inverse, counts = np.unique((s[:, 0] * n + s[:, 1]) * n + s[:, 2],
                                       return_inverse=True, return_counts=True)
    else:
        _, inverse, counts = np.unique(s, axis=0, return_inverse=True, return_counts=True)
    once = counts[inverse.ravel()] == 1
    return faces[once], opposite[once]


def orient_outward(points, faces, opposite):
    """The faces (k, 3), each turned so that its normal points away from its opposite vertex."""
    p0, p1, p2 = (points[faces[:, i]] for i in range(3))
    inward = np.einsum("ij,ij->i", np.cross(p1 - p0, p2 - p0), points[opposite] - p0) > 0
    out = faces.copy()
    out[inward, 1], out[inward, 2] = faces[inward, 2], faces[inward, 1]
    return out


def components(triangles, n):
    """Body number per triangle: the connected parts of the n vertices that triangles join,
    numbered in the order of their smallest vertex index (so alike in every frame)."""
    labels, u, v = np.arange(n), triangles.ravel(), triangles[:, [1, 2, 0]].ravel()
    while True:  # each vertex takes its neighbours' smallest label, then labels of labels
        old = labels.copy()
        low = np.minimum(labels[u], labels[v])
        np.minimum.at(labels, u, low)
        np.minimum.at(labels, v, low)
        while not np.array_equal(labels, labels[labels]):
            labels = labels[labels]
        if np.array_equal(labels, old):
            return np.unique(labels[triangles[:, 0]], return_inverse=True)[1].ravel()


def load_surface(path, cache, body_vertices=None, reference=None):
    """Reads one frame: (points, triangles (k, 3) turned outward, body per triangle). The tet
    boundary is turned outward in the frame reference (the first one, else this one) and keeps
    that winding: a tet inverted later does not flip its face. cache keeps the boundary and the
    bodies for the next frame of the same topology."""
    points, kind, cells = read_vtk(path)
    if kind == "tets" and not np.array_equal(cache.get("tets"), cells):
        ref = read_vtk(reference) if reference and reference != path else (points, kind, cells)
        ref_points = ref[0] if np.array_equal(ref[2], cells) else points
        cache.clear()
        cache["tets"], cache["surface"] = cells, orient_outward(ref_points, *tet_boundary(cells))
    triangles = cache["surface"] if kind == "tets" else cells
    if body_vertices:
        return points, triangles, triangles[:, 0] // body_vertices
    if not np.array_equal(cache.get("triangles"), triangles):
        cache["triangles"], cache["bodies"] = triangles, components(triangles, len(points))
    return points, triangles, cache["bodies"]


# ---- colliders, as quads (k, 4, 3) in world space, counter-clockwise seen from outside ------
def _frame(axis):
    """axis as a unit vector, and two unit vectors perpendicular to it and to each other."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    u = np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0])
    u /= np.linalg.norm(u)
    return a, u, np.cross(a, u)


def _rings(centres, radii, heights, axis, segments):
    """The quads between successive rings (centre + height * axis, radius) around axis."""
    a, u, w = _frame(axis)
    phi = np.linspace(0, 2 * np.pi, segments + 1)
    circle = np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * w
    p = (np.asarray(centres, float)[:, None] + np.asarray(heights)[:, None, None] * a
         + np.asarray(radii)[:, None, None] * circle)
    return np.stack([p[:-1, :-1], p[:-1, 1:], p[1:, 1:], p[1:, :-1]], axis=2).reshape(-1, 4, 3)


def funnel_mesh(base, axis, base_radius, top_radius, height, segments=48, layers=6):
    f = np.linspace(0, 1, layers + 1)
    return _rings([base] * (layers + 1), base_radius + f * (top_radius - base_radius),
                  f * height, axis, segments)


def capsule_mesh(a, b, radius, segments=32, stacks=8):
    """A capsule (a sphere when a == b): half spheres about a and b joined by a tube."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    axis = b - a if np.linalg.norm(b - a) > 1e-9 * radius else [0, 1.0, 0]
    lat = np.linspace(-np.pi / 2, 0, stacks + 1)
    lat = np.concatenate([lat, -lat[::-1]])  # the equator twice: the tube between a and b
    centres = [a] * (stacks + 1) + [b] * (stacks + 1)
    return _rings(centres, radius * np.cos(lat), radius * np.sin(lat), axis, segments)


def box_mesh(center, half_extents, rotation):
    x, y, z, s = rotation
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - s * z), 2 * (x * z + s * y)],
                    [2 * (x * y + s * z), 1 - 2 * (x * x + z * z), 2 * (y * z - s * x)],
                    [2 * (x * z - s * y), 2 * (y * z + s * x), 1 - 2 * (x * x + y * y)]])
    c = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    corners = np.asarray(center) + (c * half_extents) @ rot.T
    return corners[[[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                    [1, 5, 7, 3]]]


def collider_at(c, t):
    """The collider c at time t (s): a moving sphere or capsule ("velocity", optional
    "stop_time" and "stop") moved along its motion; others as they are."""
    if t is None or "velocity" not in c or c.get("type") not in ("sphere", "capsule"):
        return c
    stop = c.get("stop_time")
    if stop is not None and t >= float(stop) and c.get("type") == "sphere" and "stop" in c:
        return dict(c, center=list(map(float, c["stop"])))
    shift = np.asarray(c["velocity"], float) * (min(t, float(stop)) if stop is not None else t)
    keys = ("center",) if c.get("type") == "sphere" else ("a", "b")
    return dict(c, **{k: list(np.asarray(c[k], float) + shift) for k in keys})


def collider_meshes(colliders, t=None):
    """(quads, see_through) for each collider of finite shape at time t (s; None: as given);
    planes are drawn apart."""
    out = []
    for c in colliders:
        kind = c.get("type")
        try:
            c = collider_at(c, t)
            if kind == "funnel":
                out.append((funnel_mesh(c["base"], c["axis"], c["base_radius"], c["top_radius"],
                                        c["height"]), True))
            elif kind in ("sphere", "capsule"):
                ends = (c["center"], c["center"]) if kind == "sphere" else (c["a"], c["b"])
                out.append((capsule_mesh(*ends, c["radius"]), False))
            elif kind == "box":
                rotation = c.get("rotation", [0, 0, 0, 1])
                out.append((box_mesh(c["center"], c["half_extents"], rotation), False))
            elif kind != "plane":
                print("render_frames.py: collider type %r not drawn" % kind, file=sys.stderr)
        except (KeyError, TypeError, ValueError) as e:
            print("render_frames.py: %s collider not drawn (%r)" % (kind, e), file=sys.stderr)
    return out


def plane_patch(normal, offset, lo, hi):
    """The rectangle (1, 4, 3) of the plane normal . x = offset that covers the box lo..hi seen
    along the normal, 5% wider on each side, counter-clockwise seen from the normal's side."""
    n, u, w = _frame(normal)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
    cu, cw = corners @ u, corners @ w
    (u0, u1), (w0, w1) = [(c.min() - 0.05 * np.ptp(c), c.max() + 0.05 * np.ptp(c))
                          for c in (cu, cw)]
    origin = offset * n / np.linalg.norm(normal)
    return np.array([[origin + p * u + q * w for p, q in [(u0, w0), (u1, w0), (u1, w1), (u0, w1)]]])


# ---- drawing -----------------------------------------------------------------------------
def need_matplotlib():
    """pyplot and Poly3DCollection, or an exit that says what to install."""
    try:
        import matplotlib
    except ImportError:
        sys.exit("render_frames.py: matplotlib is missing for %s.\nInstall it (Debian/Ubuntu: "
                 "apt-get install python3-matplotlib; elsewhere: python3 -m pip install "
                 "matplotlib) or run the script with a Python that has it." % sys.executable)
    if tuple(int(v) for v in re.findall(r"\d+", matplotlib.__version__)[:2]) < (3, 6):
        sys.exit("render_frames.py: matplotlib %s is too old, 3.6 or newer is needed"
                 % matplotlib.__version__)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    return plt, Poly3DCollection


def to_plot(xyz):
    """Simulation (x, y, z), y up, to matplotlib's (x, -z, y), z up: a rotation, no mirror."""
    return np.stack([xyz[..., 0], -xyz[..., 2], xyz[..., 1]], axis=-1)


def camera(elev, azim):
    """(towards the camera, towards the light) in simulation space for matplotlib's angles."""
    e, a = np.radians(elev), np.radians(azim)
    eye = np.array([np.cos(e) * np.cos(a), np.sin(e), -np.cos(e) * np.sin(a)])
    right = np.cross([0, 1.0, 0], eye)
    right /= max(np.linalg.norm(right), 1e-9)
    light = eye + 0.6 * np.cross(eye, right) - 0.5 * right  # from above and to the left
    return eye, light / np.linalg.norm(light)


def normals(polys):
    """Unit normals of triangles (k, 3, 3) or quads (k, 4, 3, from the diagonals)."""
    if polys.shape[1] == 3:
        n = np.cross(polys[:, 1] - polys[:, 0], polys[:, 2] - polys[:, 0])
    else:
        n = np.cross(polys[:, 2] - polys[:, 0], polys[:, 3] - polys[:, 1])
    return n / np.maximum(np.linalg.norm(n, axis=1), 1e-30)[:, None]


def shade(rgb, n, light, two_sided=False):
    d = n @ light
    d = np.abs(d) if two_sided else np.maximum(d, 0)
    return np.clip(np.asarray(rgb) * (0.4 + 0.6 * d)[:, None], 0, 1)


def is_open(triangles):
    """Whether a triangle surface has an edge of one triangle only (cloth, not a closed body)."""
    if len(triangles) == 0:
        return False
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                                    triangles[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool((counts == 1).any())


def draw_panel(ax, Poly3DCollection, surface, meshes, planes, view, two_sided=False):
    """Draws one frame: the planes facing the camera first, then the bodies' and the colliders'
    faces in one collection that matplotlib sorts back to front, then other planes. two_sided:
    the bodies' faces turned away from the camera are drawn too (open surfaces)."""
    from matplotlib.colors import to_rgb
    (eye, light), (points, triangles, bodies) = view, surface
    tris = points[triangles]
    n = normals(tris)
    if not two_sided:
        front = n @ eye > 0
        tris, n, bodies = tris[front], n[front], bodies[front]
    palette = np.array([to_rgb(c) for c in PALETTE])
    faces = [np.column_stack([shade(palette[bodies % len(palette)], n, light, two_sided),
                              np.ones(len(n))])]
    polys, edges = list(to_plot(tris)), [faces[0]]
    for mesh, see_through in meshes:
        mn = normals(mesh)
        if not see_through:  # closed and opaque: only the faces towards the camera
            mesh, mn = mesh[mn @ eye > 0], mn[mn @ eye > 0]
        rgb = shade([0.55, 0.6, 0.68] if see_through else [0.6, 0.6, 0.6], mn, light, see_through)
        face = np.column_stack([rgb, np.full(len(mn), 0.22 if see_through else 1.0)])
        polys += list(to_plot(mesh))
        faces.append(face)
        edges.append(np.column_stack([rgb * 0.7, np.full(len(mn), 0.4)]) if see_through else face)
    if two_sided:  # many small faces: edges in the faces' colours would hide the shading
        edges[0] = faces[0].copy()
        edges[0][:, 3] = 0.0
    for patch, faces_camera in planes:
        ax.add_collection3d(Poly3DCollection(
            to_plot(patch), facecolors=(0.86, 0.86, 0.82, 1 if faces_camera else 0.25),
            edgecolors="none", zorder=0 if faces_camera else 2, clip_on=False))
    ax.add_collection3d(Poly3DCollection(
        polys, facecolors=np.concatenate(faces),
        edgecolors=np.concatenate(edges), linewidths=0.25, zorder=1, clip_on=False))
    ax.set_axis_off()


def box_corners(box):
    lo, hi = to_plot(box[0]), to_plot(box[1])
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    return lo, hi, np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                             for z in (lo[2], hi[2])])


def set_box(ax, box, cell):
    """Sets the axes' limits to box, with equal scales on x, y and z, and zooms so that the box
    seen from the camera fills the panel's cell (width, height in pixels)."""
    lo, hi, c = box_corners(box)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_zlim(lo[2], hi[2])
    ax.set_box_aspect(hi - lo)
    ax.apply_aspect()
    seen = np.column_stack([c, np.ones(8)]) @ ax.get_proj().T  # homogeneous coordinates
    size = np.ptp(ax.transData.transform(seen[:, :2] / seen[:, 3:]), axis=0)
    ax.set_box_aspect(hi - lo, zoom=0.97 * min(cell[0] / size[0], cell[1] / size[1]))


def seen_aspect(box, elev, azim):
    """Height over width of the box seen from the camera."""
    e, a = np.radians(elev), np.radians(azim)
    c = box_corners(box)[2]
    up = c @ [-np.sin(e) * np.cos(a), -np.sin(e) * np.sin(a), np.cos(e)]
    return np.ptp(up) / max(np.ptp(c @ [-np.sin(a), np.cos(a), 0]), 1e-12)


def select_frames(directory, spec, count=6):
    """([(frame number, path)] of the frames asked for, or of count evenly spaced ones; the
    path of the first frame present)."""
    try:
        present = {int(m.group(1)): os.path.join(directory, m.group(0))
                   for m in map(FRAME_NAME.match, os.listdir(directory)) if m}
    except OSError as e:
        sys.exit("render_frames.py: %s" % e)
    if not present:
        sys.exit("render_frames.py: no frame_NNNNN.vtk files in %s" % directory)
    numbers = sorted(present)
    if not spec:
        idx = np.linspace(0, len(numbers) - 1, min(count, len(numbers))).round().astype(int)
        return [(numbers[i], present[numbers[i]]) for i in sorted(set(idx))], present[numbers[0]]
    try:
        wanted = [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        sys.exit("render_frames.py: --frames takes frame numbers such as 0,10,20")
    missing = [f for f in wanted if f not in present]
    if missing or not wanted:
        sys.exit("render_frames.py: frames %s not in %s (present: %d frames, %d to %d)"
                 % (missing, directory, len(numbers), numbers[0], numbers[-1]))
    return [(f, present[f]) for f in wanted], present[numbers[0]]


def frame_time(frame, scene):
    """The time (s) of frame N, N * every * dt, or None when scene.json does not say."""
    try:
        return frame * float(scene["every"]) * float(scene["dt"])
    except (KeyError, TypeError, ValueError):
        return None


def caption(frame, scene):
    t = frame_time(frame, scene)
    return "frame %d" % frame if t is None else "t = %.4g s" % t


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 3)[3])
    p.add_argument("dir", help="the directory of `piola run --out DIR`")
    p.add_argument("--frames", help="frame numbers, e.g. 0,10,20,40 (default: 6 evenly spaced)")
    p.add_argument("--out", help="the strip's PNG (default DIR/strip.png)")
    p.add_argument("--each", metavar="OUTDIR", help="one PNG per frame, OUTDIR/frame_NNNNN.png")
    p.add_argument("--width-per-panel", type=float, default=4.0, help="inches (default 4)")
    p.add_argument("--height-per-panel", type=float,
                   help="inches (default: to fit the scene as seen, at most 1.5 widths)")
    p.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")
    p.add_argument("--elev", type=float, default=20.0, help="camera elevation (default 20)")
    p.add_argument("--azim", type=float, default=-60.0, help="camera azimuth (default -60)")
    p.add_argument("--body-vertices", type=int, metavar="K",
                   help="K vertices per body: body = vertex index // K (default: connected parts)")
    a = p.parse_args(argv)
    if a.body_vertices is not None and a.body_vertices < 1:
        p.error("--body-vertices takes a positive number")
    frames, first = select_frames(a.dir, a.frames)
    scene, scene_path = {}, os.path.join(a.dir, "scene.json")
    if os.path.exists(scene_path):
        try:
            with open(scene_path) as f:
                scene = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit("render_frames.py: %s: %s" % (scene_path, e))
    plt, Poly3DCollection = need_matplotlib()
    cache, surfaces = {}, []
    for number, path in frames:
        start = time.time()
        try:
            points, triangles, bodies = load_surface(path, cache, a.body_vertices, first)
        except FrameError as e:
            sys.exit("render_frames.py: %s" % e)
        finite = np.isfinite(points[triangles]).all(axis=(1, 2))
        if not finite.all():
            print("render_frames.py: %s: %d faces with non-finite points left out"
                  % (path, np.count_nonzero(~finite)), file=sys.stderr)
        surfaces.append((points, triangles[finite], bodies[finite]))
        print("read %s: %d faces (%.1f s)" % (path, len(surfaces[-1][1]), time.time() - start))
    used = [pts[np.unique(tri)] for pts, tri, _ in surfaces if len(tri)]
    if not used:
        sys.exit("render_frames.py: the frames hold no faces")
    used = np.concatenate(used)
    view = camera(a.elev, a.azim)
    colliders = scene.get("colliders", []) if isinstance(scene, dict) else []
    scene = scene if isinstance(scene, dict) else {}
    meshes = [collider_meshes(colliders, frame_time(number, scene)) for number, _ in frames]
    planes = []
    for c in (c for c in colliders if c.get("type") == "plane"):
        normal = np.asarray(c.get("normal", [0, 1, 0]), float)
        patch = plane_patch(normal, float(c.get("offset", 0.0)), used.min(0), used.max(0))
        planes.append((patch, normal @ view[0] > 0))
    every = np.concatenate([used] + [m.reshape(-1, 3) for ms in meshes for m, _ in ms]
                           + [m.reshape(-1, 3) for m, _ in planes])
    pad = 0.02 * max(np.ptp(every, axis=0).max(), 1e-6)
    box = (every.min(0) - pad, every.max(0) + pad)
    w, band = a.width_per_panel, 0.3  # inches; the band above each panel holds its caption
    h = a.height_per_panel or band + w * min(max(seen_aspect(box, a.elev, a.azim), 0.3), 1.5)
    groups = [[i] for i in range(len(frames))] if a.each else [list(range(len(frames)))]
    if a.each:
        os.makedirs(a.each, exist_ok=True)
    for group in groups:
        start = time.time()
        fig = plt.figure(figsize=(w * len(group), h), dpi=a.dpi)
        fig.subplots_adjust(left=0, right=1, bottom=0, top=1 - band / h, wspace=0)
        for k, i in enumerate(group):
            ax = fig.add_subplot(1, len(group), k + 1, projection="3d", proj_type="ortho",
                                 computed_zorder=False)
            ax.view_init(elev=a.elev, azim=a.azim)
            draw_panel(ax, Poly3DCollection, surfaces[i], meshes[i], planes, view,
                       is_open(surfaces[i][1]))
            set_box(ax, box, (w * a.dpi, (h - band) * a.dpi))
            fig.text((k + 0.5) / len(group), 1 - 0.5 * band / h, caption(frames[i][0], scene),
                     ha="center", va="center", fontsize=11)
        out = (os.path.join(a.each, "frame_%05d.png" % frames[group[0]][0]) if a.each
               else a.out or os.path.join(a.dir, "strip.png"))
        fig.savefig(out, dpi=a.dpi)
        plt.close(fig)
        print("wrote %s (%.1f s)" % (out, time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
