"""The world and its handles: bodies, colliders, attachments, render meshes."""
import numpy as np

from ._errors import ClosedError, LogSink, fail
from ._mesh import TetMesh, TriMesh
from ._piola import ffi, lib
from ._structs import (ClothMaterial, Device, Material, Stats, enum, fields, py_float, record,
                       set_field, to_python, STAGE_NAMES)

# piola_world_def's fields a caller sets, in the header's order; device_spec is `device`.
_DEF_HIDDEN = ("logger", "assert_fn", "assert_user_data", "internal_cookie")
_DEF_FIELDS = [("device" if n == "device_spec" else n, t)
               for n, t in fields("piola_world_def", _DEF_HIDDEN)]
_DEF_TYPES = dict(_DEF_FIELDS)


def _vec(v, n, what):
    try:
        v = [float(x) for x in v]
    except TypeError:
        fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "%s needs %d numbers (got %r)" % (what, n, v))
    if len(v) != n:
        fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "%s needs %d numbers (got %d)" % (what, n, len(v)))
    return ffi.new("float[%d]" % n, v)


class World:
    """A simulation world (piola_world). Keyword arguments are piola_world_def's fields:
    backend ("auto", "cpu", "opencl"), device (piola_world_def.device_spec: "P:D", "gpu",
    "cpu" or a name substring), gravity, dt, substeps, iterations, damping, iteration_scheme
    ("gauss_seidel", "jacobi", "vbd", "multigrid"), max_colors, jacobi_omega,
    vbd_chebyshev_rho, profile, fast_math, work_group_size, schedule ("auto", "stages",
    "bodies"), simd_lanes, contacts,
    edge_contacts, contact_thickness, contact_friction, cpu_threads; unset ones take
    piola_default_world_def()'s values, and all are readable as attributes (`iterations` and
    `gravity` are also writable). The library's messages go to the "piola" logger. A context
    manager: leaving the block (or close()) destroys the world; using it afterwards raises
    ClosedError. One world must be used by one thread at a time."""

    def __init__(self, **settings):
        self._ptr = None
        self._sink = LogSink()
        d = ffi.new("piola_world_def *")
        d[0] = lib.piola_default_world_def()
        self._device = None
        for k, v in settings.items():
            if k not in _DEF_TYPES:
                raise TypeError("World() got an unexpected keyword argument %r (settings: %s)"
                                % (k, ", ".join(n for n, _ in _DEF_FIELDS)))
            if k == "device":
                self._device = ffi.NULL if v is None else ffi.new("char[]", str(v).encode())
                d.device_spec = self._device
            else:
                set_field(d, k, _DEF_TYPES[k], v, "World(%s=...)" % k)
        # The world's logger and misuse hook report to its sink (a handle this world keeps).
        log, self._handle = self._sink.logger_struct()
        d.logger = log[0]
        d.assert_fn = lib.piola_py_assert
        d.assert_user_data = self._handle
        out = ffi.new("piola_world **")
        self._sink.check(lib.piola_world_create(d, out))
        self._ptr = out[0]
        self._settings = {k: (to_python(t, d.device_spec) if k == "device"
                              else to_python(t, getattr(d, k))) for k, t in _DEF_FIELDS}
        self._done = ffi.new("int32_t *")

    # ---- lifetime ----
    def close(self):
        """Destroys the world and everything in it; idempotent."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            lib.piola_world_destroy(ptr)

    @property
    def closed(self):
        return self._ptr is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _w(self):
        p = self._ptr
        if p is None:
            raise ClosedError("the world is closed", lib.PIOLA_ERROR_INVALID_ARGUMENT)
        return p

    def _check(self, status):
        if status != 0:
            self._sink.check(status)
        elif self._sink.errors:
            self._sink.errors = []

    # ---- settings ----
    def __getattr__(self, name):
        settings = self.__dict__.get("_settings")
        if settings is not None and name in settings:
            return settings[name]
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    @property
    def iterations(self):
        return self._settings["iterations"]

    @iterations.setter
    def iterations(self, value):
        self._check(lib.piola_world_set_iterations(self._w(), int(value)))
        self._settings["iterations"] = int(value)

    @property
    def gravity(self):
        return self._settings["gravity"]

    @gravity.setter
    def gravity(self, value):
        g = _vec(value, 3, "gravity")
        self._check(lib.piola_world_set_gravity(self._w(), g))
        self._settings["gravity"] = tuple(py_float(x) for x in g)

    @property
    def settings(self):
        """The world's settings as a dict (the keyword arguments World() takes)."""
        return dict(self._settings)

    # ---- stepping ----
    def step(self, n=1):
        """Advances the world by n steps of dt (the loop runs in C, one call). With OpenCL the
        steps are queued; finish() or any read waits for them."""
        n = int(n)
        if not 0 <= n < 2 ** 31:
            fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "step(n) needs 0 <= n < 2^31 (got %d)" % n)
        s = lib.piola_py_step_n(self._w(), n, self._done)
        if s != 0:
            self._sink.check(s)

    def finish(self):
        """Waits until the queued steps have finished on the device."""
        self._check(lib.piola_world_finish(self._w()))

    @property
    def stats(self):
        """The world's figures (Stats: piola_stats's fields). Reads the state back."""
        c = ffi.new("piola_stats *")
        self._check(lib.piola_world_get_stats(self._w(), c))
        return record(Stats, "piola_stats", c)

    @property
    def stage_times(self):
        """ms per stage of the last step, {stage name: ms}."""
        c = ffi.new("double[%d]" % lib.PIOLA_STAGE_COUNT)
        self._check(lib.piola_world_get_stage_times(self._w(), c))
        return dict(zip(STAGE_NAMES, c))

    @property
    def kernel_times(self):
        """Device time per OpenCL kernel of the last step: [(name, launches, ms)] (profile on)."""
        w = self._w()
        count = ffi.new("int32_t *")
        self._check(lib.piola_world_get_kernel_times(w, ffi.NULL, 0, count))
        c = ffi.new("piola_kernel_time[]", max(count[0], 1))
        self._check(lib.piola_world_get_kernel_times(w, c, count[0], count))
        return [(ffi.string(c[i].name).decode(), c[i].launches, c[i].ms)
                for i in range(count[0])]

    @property
    def color_sizes(self):
        """Tets per color, in solve order: an int32 array."""
        w = self._w()
        count = ffi.new("int32_t *")
        self._check(lib.piola_world_get_color_sizes(w, ffi.NULL, 0, count))
        a = np.zeros(count[0], dtype=np.int32)
        self._check(lib.piola_world_get_color_sizes(
            w, ffi.from_buffer("int32_t[]", a, require_writable=True), a.size, count))
        return a

    # ---- state ----
    def save_state(self):
        """Everything a step carries to the next one, as bytes (piola_world_save_state: the
        documented, versioned format), for load_state() on this world or another world of the
        same scene, on either backend: reset, rollback, replay."""
        w = self._w()
        size = ffi.new("size_t *")
        self._check(lib.piola_world_get_state_size(w, size))
        buf = bytearray(size[0])
        self._check(lib.piola_world_save_state(w, ffi.from_buffer(buf), size[0]))
        return bytes(buf)

    def load_state(self, state):
        """Loads a state from save_state() (piola_world_load_state). A buffer of another scene,
        format or size raises and changes nothing."""
        data = bytes(state)
        self._check(lib.piola_world_load_state(self._w(), ffi.from_buffer(data), len(data)))

    # ---- bodies ----
    def add_tet_body(self, mesh, material=None, translation=(0.0, 0.0, 0.0)):
        """Adds a tet body made of `mesh` (a TetMesh, copied) with `material` (a Material, or
        the default one), translated by `translation` (m). Returns its Body."""
        if not isinstance(mesh, TetMesh):
            raise TypeError("add_tet_body() needs a piola.TetMesh (got %s)" % type(mesh).__name__)
        material = Material() if material is None else material
        if not isinstance(material, Material):
            raise TypeError("material must be a piola.Material")
        w = self._w()
        m, keep = mesh.c_mesh()
        out = ffi.new("piola_body_id *")
        self._check(lib.piola_world_add_tet_body(w, m, material._c, _vec(translation, 3,
                                                 "translation"), out))
        del keep
        return Body(self, out, mesh.vertex_count, "tet")

    def add_cloth(self, mesh, material=None, translation=(0.0, 0.0, 0.0)):
        """Adds a cloth body made of `mesh` (a TriMesh, copied) with `material` (a
        ClothMaterial, or the default one), translated by `translation` (m)."""
        if not isinstance(mesh, TriMesh):
            raise TypeError("add_cloth() needs a piola.TriMesh (got %s)" % type(mesh).__name__)
        material = ClothMaterial() if material is None else material
        if not isinstance(material, ClothMaterial):
            raise TypeError("material must be a piola.ClothMaterial")
        w = self._w()
        m, keep = mesh.c_mesh()
        out = ffi.new("piola_body_id *")
        self._check(lib.piola_world_add_cloth(w, m, material._c, _vec(translation, 3,
                                              "translation"), out))
        del keep
        return Body(self, out, mesh.vertex_count, "cloth")

    # ---- colliders ----
    def add_plane(self, normal=(0.0, 1.0, 0.0), offset=0.0, friction=0.5):
        """Adds the solid half-space dot(normal, x) < offset (m) with one friction coefficient.
        Returns its Collider."""
        out = ffi.new("piola_collider_id *")
        self._check(lib.piola_world_add_plane(self._w(), _vec(normal, 3, "normal"),
                                              float(offset), float(friction), out))
        return Collider(self, out, "plane")

    def add_collider(self, type, static_friction=None, dynamic_friction=None, **shape):
        """Adds a collider of `type` ("plane", "sphere", "box", "capsule", "funnel"), its shape
        given by keyword arguments named as that shape struct's fields (plane: normal, offset;
        sphere: center, radius; box: center, half_extents, rotation; capsule: a, b, radius;
        funnel: base, axis, base_radius, top_radius, height), unset ones from
        piola_default_collider_def(). Returns its Collider."""
        d = ffi.new("piola_collider_def *")
        d[0] = lib.piola_default_collider_def()
        d.type = enum("piola_collider_type").value(type, "collider type")
        name = enum("piola_collider_type").name(d.type)
        struct = getattr(d.shape, name)
        known = dict(fields(ffi.typeof(struct).cname))
        for k, v in shape.items():
            if k not in known:
                raise TypeError("a %s collider has no field %r (fields: %s)" % (
                    name, k, ", ".join(known)))
            set_field(struct, k, known[k], v, "%s.%s" % (name, k))
        if static_friction is not None:
            set_field(d, "static_friction", ffi.typeof("float"), static_friction,
                      "static_friction")
        if dynamic_friction is not None:
            set_field(d, "dynamic_friction", ffi.typeof("float"), dynamic_friction,
                      "dynamic_friction")
        out = ffi.new("piola_collider_id *")
        self._check(lib.piola_world_add_collider(self._w(), d, out))
        return Collider(self, out, name)

    # ---- attachments ----
    def add_attachment(self, body, vertex, target, compliance=0.0):
        """Pulls vertex `vertex` of `body` towards the point `target` (m) with `compliance`
        (m/N; 0 = hard). Returns its Attachment (move it with set_target())."""
        if not isinstance(body, Body) or body._world is not self:
            raise TypeError("add_attachment() needs a Body of this world")
        t = _vec(target, 3, "target")
        out = ffi.new("piola_attachment_id *")
        self._check(lib.piola_world_add_attachment(self._w(), body._id[0], int(vertex), t,
                                                   float(compliance), out))
        return Attachment(self, out, body, int(vertex), tuple(py_float(x) for x in t))

    def __repr__(self):
        if self._ptr is None:
            return "<piola.World (closed)>"
        return "<piola.World backend=%r dt=%r substeps=%r iterations=%r>" % (
            self._settings["backend"], self._settings["dt"], self._settings["substeps"],
            self._settings["iterations"])


class _Handle:
    __slots__ = ("_world", "_id")

    def _w(self):
        return self._world._w()

    def __eq__(self, other):
        return (type(self) is type(other) and self._world is other._world and
                self._id.index1 == other._id.index1 and
                self._id.generation == other._id.generation)

    def __hash__(self):
        return hash((id(self._world), self._id.index1, self._id.generation))


_from_buffer = ffi.from_buffer
_empty = np.empty
_float32 = np.float32


def _read(world, fn, ident, n, width, out=None):
    """A float32 array of n rows read by fn: a fresh one (one C read plus one numpy
    allocation), or `out` (C-contiguous float32 of that shape) filled in place. Written for a
    per-frame call: about a microsecond over the C read itself."""
    shape = (n, width) if width > 1 else (n,)
    if out is None:
        out = _empty(shape, dtype=_float32)
    elif (not isinstance(out, np.ndarray) or out.dtype != _float32 or out.shape != shape or
          not out.flags.c_contiguous or not out.flags.writeable):
        fail(lib.PIOLA_ERROR_COUNT_MISMATCH, "out must be a writable C-contiguous float32 array "
             "of shape %s" % (shape,))
    p = world._ptr
    if p is None:
        world._w()
    s = fn(p, ident, _from_buffer("float[]", out, require_writable=True), n)
    if s:
        world._sink.check(s)
    return out


def _write(world, fn, ident, n, width, value, what):
    a = np.ascontiguousarray(value, dtype=np.float32)
    if width > 1 and (a.ndim != 2 or a.shape[1] != width):
        fail(lib.PIOLA_ERROR_COUNT_MISMATCH,
             "%s must be an (N, %d) array, N = %d (got shape %s)" % (what, width, n, a.shape))
    if width == 1 and a.ndim != 1:
        fail(lib.PIOLA_ERROR_COUNT_MISMATCH,
             "%s must be an (N,) array, N = %d (got shape %s)" % (what, n, a.shape))
    world._check(fn(world._w(), ident, ffi.from_buffer("float[]", a), a.shape[0]))


class Body(_Handle):
    """A body of a world (piola_body_id). positions, velocities ((N, 3) float32) and
    inverse_masses ((N,) float32) read copies and write on assignment; kind is "tet" or
    "cloth"."""

    __slots__ = ("vertex_count", "kind", "_value")

    def __init__(self, world, ident, vertex_count, kind):
        self._world, self._id = world, ident
        self.vertex_count, self.kind = vertex_count, kind
        self._value = ident[0]  # the id by value, for the per-frame calls

    def __len__(self):
        return self.vertex_count

    @property
    def valid(self):
        """Whether the body still exists (False once removed or its world closed)."""
        p = self._world._ptr
        return p is not None and bool(lib.piola_body_is_valid(p, self._id[0]))

    def remove(self):
        """Removes the body from its world; the handle goes stale."""
        self._world._check(lib.piola_world_remove_body(self._w(), self._id[0]))

    @property
    def positions(self):
        return _read(self._world, lib.piola_body_get_positions, self._value, self.vertex_count, 3)

    def get_positions(self, out=None):
        """The positions, into `out` ((N, 3) C-contiguous float32) when given: a per-frame read
        without an allocation. Returns the array."""
        return _read(self._world, lib.piola_body_get_positions, self._value, self.vertex_count,
                     3, out)

    def get_velocities(self, out=None):
        """The velocities, into `out` when given (as get_positions())."""
        return _read(self._world, lib.piola_body_get_velocities, self._value, self.vertex_count,
                     3, out)

    @positions.setter
    def positions(self, value):
        _write(self._world, lib.piola_body_set_positions, self._id[0], self.vertex_count, 3,
               value, "positions")

    @property
    def velocities(self):
        return _read(self._world, lib.piola_body_get_velocities, self._id[0], self.vertex_count,
                     3)

    @velocities.setter
    def velocities(self, value):
        _write(self._world, lib.piola_body_set_velocities, self._id[0], self.vertex_count, 3,
               value, "velocities")

    @property
    def inverse_masses(self):
        return _read(self._world, lib.piola_body_get_inverse_masses, self._id[0],
                     self.vertex_count, 1)

    @inverse_masses.setter
    def inverse_masses(self, value):
        _write(self._world, lib.piola_body_set_inverse_masses, self._id[0], self.vertex_count, 1,
               value, "inverse_masses")

    def set_forces(self, forces):
        """Sets a constant external force per vertex ((N, 3), N); None clears them."""
        if forces is None:
            self._world._check(lib.piola_body_set_forces(self._w(), self._id[0], ffi.NULL,
                                                         self.vertex_count))
        else:
            _write(self._world, lib.piola_body_set_forces, self._id[0], self.vertex_count, 3,
                   forces, "forces")

    def _counted(self, fn, width):
        w = self._w()
        count = ffi.new("int32_t *")
        self._world._check(fn(w, self._id[0], ffi.NULL, 0, count))
        a = np.zeros((count[0], width) if width > 1 else (count[0],), dtype=np.int32)
        self._world._check(fn(w, self._id[0], ffi.from_buffer("int32_t[]", a,
                                                              require_writable=True),
                              count[0], count))
        return a

    @property
    def surface(self):
        """The collision surface: (M, 3) int32 triangles of body-local vertex indices (a
        cloth's own triangles; a tet body's boundary, outward normals)."""
        return self._counted(lib.piola_body_get_surface, 3)

    @property
    def surface_vertices(self):
        """The vertices on the collision surface, ascending: (K,) int32."""
        return self._counted(lib.piola_body_get_surface_vertices, 1)

    def set_collision_filter(self, group, mask):
        """Bodies A and B collide when A.group & B.mask and B.group & A.mask are non-zero."""
        self._world._check(lib.piola_body_set_collision_filter(self._w(), self._id[0],
                                                               int(group), int(mask)))

    def set_self_collision(self, enabled):
        self._world._check(lib.piola_body_set_self_collision(self._w(), self._id[0],
                                                             bool(enabled)))

    def attach_render_mesh(self, points):
        """Embeds detail points ((K, 3), world coordinates over the body as it is now) into the
        body's surface; returns a RenderMesh whose positions/normals follow the body."""
        a = np.ascontiguousarray(points, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != 3:
            fail(lib.PIOLA_ERROR_COUNT_MISMATCH,
                 "points must be a (K, 3) array (got shape %s)" % (a.shape,))
        out = ffi.new("piola_render_mesh_id *")
        self._world._check(lib.piola_body_attach_render_mesh(
            self._w(), self._id[0], ffi.from_buffer("float[]", a), a.shape[0], out))
        return RenderMesh(self._world, out, a.shape[0])

    def __repr__(self):
        return "<piola.Body %s #%d, %d vertices>" % (self.kind, self._id.index1,
                                                     self.vertex_count)


class Collider(_Handle):
    """A collider of a world (piola_collider_id)."""

    __slots__ = ("type",)

    def __init__(self, world, ident, type):
        self._world, self._id, self.type = world, ident, type

    def set_pose(self, position, rotation=(0.0, 0.0, 0.0, 1.0),
                 linear_velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0)):
        """Moves the collider kinematically: its frame's origin (m), rotation quaternion
        (x, y, z, w), and the velocities (m/s, rad/s) it moves with over the next steps."""
        self._world._check(lib.piola_world_set_collider_pose(
            self._w(), self._id[0], _vec(position, 3, "position"), _vec(rotation, 4, "rotation"),
            _vec(linear_velocity, 3, "linear_velocity"),
            _vec(angular_velocity, 3, "angular_velocity")))

    @property
    def pose(self):
        """{"position", "rotation", "linear_velocity", "angular_velocity"}: tuples of floats."""
        p, r = ffi.new("float[3]"), ffi.new("float[4]")
        v, a = ffi.new("float[3]"), ffi.new("float[3]")
        self._world._check(lib.piola_world_get_collider_pose(self._w(), self._id[0], p, r, v, a))
        return {"position": tuple(p), "rotation": tuple(r), "linear_velocity": tuple(v),
                "angular_velocity": tuple(a)}  # the float32 values, as doubles

    def remove(self):
        self._world._check(lib.piola_world_remove_collider(self._w(), self._id[0]))

    def __repr__(self):
        return "<piola.Collider %s #%d>" % (self.type, self._id.index1)


class Attachment(_Handle):
    """An attachment (piola_attachment_id): a vertex pulled towards a target point."""

    __slots__ = ("body", "vertex", "_target")

    def __init__(self, world, ident, body, vertex, target):
        self._world, self._id = world, ident
        self.body, self.vertex, self._target = body, vertex, target

    @property
    def target(self):
        """The target last set (m)."""
        return self._target

    @target.setter
    def target(self, value):
        self.set_target(value)

    def set_target(self, target):
        t = _vec(target, 3, "target")
        self._world._check(lib.piola_attachment_set_target(self._w(), self._id[0], t))
        self._target = tuple(py_float(x) for x in t)

    def remove(self):
        self._world._check(lib.piola_world_remove_attachment(self._w(), self._id[0]))


class RenderMesh(_Handle):
    """Detail points over a body's surface (piola_render_mesh_id)."""

    __slots__ = ("count",)

    def __init__(self, world, ident, count):
        self._world, self._id, self.count = world, ident, count

    @property
    def positions(self):
        return _read(self._world, lib.piola_render_mesh_get_positions, self._id[0], self.count, 3)

    @property
    def normals(self):
        return _read(self._world, lib.piola_render_mesh_get_normals, self._id[0], self.count, 3)

    def remove(self):
        self._world._check(lib.piola_world_remove_render_mesh(self._w(), self._id[0]))


def devices():
    """The OpenCL devices (a list of Device); empty without an OpenCL runtime."""
    sink = LogSink()
    count = ffi.new("int32_t *")
    sink.check(lib.piola_list_devices(ffi.NULL, 0, count))
    c = ffi.new("piola_device_info[]", max(count[0], 1))
    sink.check(lib.piola_list_devices(c, count[0], count))
    return [record(Device, "piola_device_info", c[i]) for i in range(count[0])]
