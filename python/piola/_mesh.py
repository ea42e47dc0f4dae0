"""Meshes as numpy arrays: TetMesh (positions (N, 3) float32, tets (M, 4) int32) and TriMesh
(positions, triangles (M, 3) int32, uvs (N, 2) float32 or None), from the library's loaders and
generators or from the caller's arrays."""
import os

import numpy as np

from ._errors import LogSink, fail
from ._piola import ffi, lib


def _points(a, width, what):
    a = np.array(a, dtype=np.float32, copy=True, order="C")
    if a.ndim != 2 or a.shape[1] != width:
        fail(lib.PIOLA_ERROR_INVALID_MESH,
             "%s must be an (N, %d) array (got shape %s)" % (what, width, a.shape))
    return a


def _indices(a, width, what):
    a = np.asarray(a)
    if a.size == 0:
        a = a.astype(np.int32)
    if not np.issubdtype(a.dtype, np.integer):
        fail(lib.PIOLA_ERROR_INVALID_MESH, "%s must be integers (got %s)" % (what, a.dtype))
    if a.ndim != 2 or a.shape[1] != width:
        fail(lib.PIOLA_ERROR_INVALID_MESH,
             "%s must be an (M, %d) array (got shape %s)" % (what, width, a.shape))
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        fail(lib.PIOLA_ERROR_INVALID_MESH, "%s holds indices beyond int32" % what)
    return np.array(a, dtype=np.int32, copy=True, order="C")


def _copy_out(ptr, count, width, dtype):
    if count == 0 or ptr == ffi.NULL:
        return np.zeros((count, width), dtype=dtype)
    n = count * width * np.dtype(dtype).itemsize
    return np.frombuffer(ffi.buffer(ptr, n), dtype=dtype).reshape(count, width).copy()


def _path(p):
    return os.fsencode(os.fspath(p))


class TetMesh:
    """A tetrahedral mesh: positions (N, 3) float32 in metres and tets (M, 4) int32, 0-based
    vertex indices (copies of the arrays given). Validity (indices in range, volumes) is checked
    where the mesh is used, by World.add_tet_body()."""

    def __init__(self, positions, tets):
        self.positions = positions
        self.tets = tets

    @property
    def positions(self):
        return self._positions

    @positions.setter
    def positions(self, value):
        self._positions = _points(value, 3, "positions")

    @property
    def tets(self):
        return self._tets

    @tets.setter
    def tets(self, value):
        self._tets = _indices(value, 4, "tets")

    @property
    def vertex_count(self):
        return self._positions.shape[0]

    @property
    def tet_count(self):
        return self._tets.shape[0]

    def c_mesh(self):
        """(piola_tet_mesh cdata, the objects that must stay alive while it is used)."""
        pos = np.ascontiguousarray(self._positions, dtype=np.float32)
        tets = np.ascontiguousarray(self._tets, dtype=np.int32)
        m = ffi.new("piola_tet_mesh *")
        pb, tb = ffi.from_buffer("float[]", pos), ffi.from_buffer("int32_t[]", tets)
        m.positions, m.vertex_count = pb, pos.shape[0]
        m.tets, m.tet_count = tb, tets.shape[0]
        return m, (pos, tets, pb, tb)

    def save_tetgen(self, node_path, ele_path=None):
        """Writes the mesh as a TetGen .node/.ele pair (0-based); ele_path defaults to the
        node path with .ele."""
        if ele_path is None:
            ele_path = os.path.splitext(os.fspath(node_path))[0] + ".ele"
        m, keep = self.c_mesh()
        sink = LogSink()
        sink.check(lib.piola_mesh_save_tetgen(m, _path(node_path), _path(ele_path)))
        del keep

    def __repr__(self):
        return "TetMesh(%d vertices, %d tets)" % (self.vertex_count, self.tet_count)


class TriMesh:
    """A triangle mesh (a cloth): positions (N, 3) float32 in metres, triangles (M, 3) int32
    (counter-clockwise seen from the front), uvs (N, 2) float32 or None (u is the weft)."""

    def __init__(self, positions, triangles, uvs=None):
        self.positions = positions
        self.triangles = triangles
        self.uvs = uvs

    @property
    def positions(self):
        return self._positions

    @positions.setter
    def positions(self, value):
        self._positions = _points(value, 3, "positions")

    @property
    def triangles(self):
        return self._triangles

    @triangles.setter
    def triangles(self, value):
        self._triangles = _indices(value, 3, "triangles")

    @property
    def uvs(self):
        return self._uvs

    @uvs.setter
    def uvs(self, value):
        self._uvs = None if value is None else _points(value, 2, "uvs")

    @property
    def vertex_count(self):
        return self._positions.shape[0]

    @property
    def triangle_count(self):
        return self._triangles.shape[0]

    def c_mesh(self):
        if self._uvs is not None and self._uvs.shape[0] != self._positions.shape[0]:
            fail(lib.PIOLA_ERROR_COUNT_MISMATCH, "uvs has %d rows for %d vertices" % (
                self._uvs.shape[0], self._positions.shape[0]))
        pos = np.ascontiguousarray(self._positions, dtype=np.float32)
        tri = np.ascontiguousarray(self._triangles, dtype=np.int32)
        m = ffi.new("piola_tri_mesh *")
        pb, tb = ffi.from_buffer("float[]", pos), ffi.from_buffer("int32_t[]", tri)
        m.positions, m.vertex_count = pb, pos.shape[0]
        m.triangles, m.triangle_count = tb, tri.shape[0]
        keep = [pos, tri, pb, tb]
        if self._uvs is not None:
            uv = np.ascontiguousarray(self._uvs, dtype=np.float32)
            ub = ffi.from_buffer("float[]", uv)
            m.uvs = ub
            keep += [uv, ub]
        return m, keep

    def __repr__(self):
        return "TriMesh(%d vertices, %d triangles%s)" % (
            self.vertex_count, self.triangle_count, ", uvs" if self._uvs is not None else "")


def _tet_from_c(m):
    try:
        mesh = TetMesh.__new__(TetMesh)
        mesh._positions = _copy_out(m.positions, m.vertex_count, 3, np.float32)
        mesh._tets = _copy_out(m.tets, m.tet_count, 4, np.int32)
        return mesh
    finally:
        lib.piola_mesh_free(m)


def _tri_from_c(m):
    try:
        mesh = TriMesh.__new__(TriMesh)
        mesh._positions = _copy_out(m.positions, m.vertex_count, 3, np.float32)
        mesh._triangles = _copy_out(m.triangles, m.triangle_count, 3, np.int32)
        uvs = None if m.uvs == ffi.NULL else _copy_out(m.uvs, m.vertex_count, 2, np.float32)
        mesh._uvs = uvs
        return mesh
    finally:
        lib.piola_tri_mesh_free(m)


def load_tetgen(node, ele=None):
    """Loads a TetGen .node/.ele pair (ele defaults to node's path with .ele). Errors raise with
    the library's "path:line: what" message."""
    if ele is None:
        ele = os.path.splitext(os.fspath(node))[0] + ".ele"
    sink = LogSink()
    m = ffi.new("piola_tet_mesh *")
    log, handle = sink.logger_struct()
    sink.check(lib.piola_mesh_load_tetgen_logged(_path(node), _path(ele), log, m))
    return _tet_from_c(m)


def load_gmsh(path):
    """Loads the tetrahedra of a Gmsh .msh file (ASCII 2.2 or 4.1)."""
    sink = LogSink()
    m = ffi.new("piola_tet_mesh *")
    log, handle = sink.logger_struct()
    sink.check(lib.piola_mesh_load_gmsh_logged(_path(path), log, m))
    return _tet_from_c(m)


def load_obj(path):
    """Loads a Wavefront OBJ file as a TriMesh (uvs None when the faces have none)."""
    sink = LogSink()
    m = ffi.new("piola_tri_mesh *")
    log, handle = sink.logger_struct()
    sink.check(lib.piola_mesh_load_obj_logged(_path(path), log, m))
    return _tri_from_c(m)


def _vector(v, n, what, kind=float):
    if np.ndim(v) == 0:
        v = [v] * n
    v = [kind(x) for x in v]
    if len(v) != n:
        fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "%s needs %d values (got %d)" % (what, n, len(v)))
    return v


def make_box(cells, size):
    """A box of cells[0] x cells[1] x cells[2] cubes of 6 tets each spanning [0, size] on each
    axis (m); size may be one number for all three axes."""
    m = ffi.new("piola_tet_mesh *")
    c = ffi.new("int32_t[3]", _vector(cells, 3, "cells", int))
    s = ffi.new("float[3]", _vector(size, 3, "size"))
    LogSink().check(lib.piola_mesh_make_box(c, s, m))
    return _tet_from_c(m)


def make_grid(cells, size):
    """A flat cloth rectangle of cells[0] x cells[1] squares in the x-z plane at y = 0, spanning
    [0, size[0]] x [0, size[1]] (m), with uvs; size may be one number."""
    m = ffi.new("piola_tri_mesh *")
    c = ffi.new("int32_t[2]", _vector(cells, 2, "cells", int))
    s = ffi.new("float[2]", _vector(size, 2, "size"))
    LogSink().check(lib.piola_mesh_make_grid(c, s, m))
    return _tri_from_c(m)


def make_creature(height=1.0):
    """The procedural creature (about 1200 vertices, 3700 tets), `height` m tall, lowest point
    at y = 0, centred on x = z = 0."""
    m = ffi.new("piola_tet_mesh *")
    LogSink().check(lib.piola_mesh_make_creature(float(height), m))
    return _tet_from_c(m)
