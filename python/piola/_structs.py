"""C structs and enums as Python values, driven by the cffi type information (so the fields
follow include/piola/piola_types.h): enums as lower-case names ("neohookean", "xpbd", ...),
bools, floats, tuples for small arrays, str for char arrays."""
import os

import numpy as np

from ._errors import Error, fail
from ._piola import ffi, lib


class Enum:
    """Names of one C enum: PIOLA_MODEL_NEOHOOKEAN <-> "neohookean" (the common prefix cut,
    lower case). Accepts the short name (with "-" for "_"), the C name or the integer."""

    def __init__(self, cname, names=None):
        self.cname = cname
        elements = {v: k for v, k in ffi.typeof(cname).elements.items()
                    if not k.endswith("_COUNT")}
        prefix = os.path.commonprefix(list(elements.values()))
        prefix = prefix[:prefix.rfind("_") + 1]
        self.to_name = {v: (names(v) if names else k[len(prefix):].lower())
                        for v, k in elements.items()}
        self.to_value = {n: v for v, n in self.to_name.items()}
        for v, k in elements.items():
            self.to_value.setdefault(k, v)
            self.to_value.setdefault(k[len(prefix):].lower(), v)

    def value(self, x, what):
        if isinstance(x, bool):
            x = int(x)
        if isinstance(x, int):
            if x in self.to_name:
                return x
        elif isinstance(x, str):
            for key in (x, x.lower().replace("-", "_")):
                if key in self.to_value:
                    return self.to_value[key]
        fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "%s must be one of %s (got %r)" % (
            what, ", ".join(repr(n) for n in self.to_name.values()), x))

    def name(self, v):
        return self.to_name.get(int(v), int(v))


def _backend_name(v):
    return ffi.string(lib.piola_backend_name(v)).decode()


ENUMS = {}


def enum(cname):
    cname = cname[len("enum "):] if cname.startswith("enum ") else cname
    e = ENUMS.get(cname)
    if e is None:
        e = ENUMS[cname] = Enum(cname, _backend_name if cname == "piola_backend" else None)
    return e


def to_python(ctype, value):
    """A field's value as a Python value."""
    kind = ctype.kind
    if kind == "enum":
        return enum(ctype.cname).name(value)
    if kind == "array":
        if ctype.item.cname == "char":
            return ffi.string(value).decode("utf-8", "replace")
        return tuple(to_python(ctype.item, x) for x in value)
    if kind == "pointer":
        if ctype.item.cname == "char":
            return None if value == ffi.NULL else ffi.string(value).decode()
        return value
    if kind == "struct":
        return {n: to_python(f.type, getattr(value, n)) for n, f in ctype.fields}
    if ctype.cname == "_Bool":
        return bool(value)
    if ctype.cname == "float":
        return py_float(value)
    return value


def py_float(value):
    """A float32 as the shortest Python float that is the same float32 (0.3, not
    0.30000001192092896): what the caller wrote, where the caller wrote a float32 value."""
    return float(str(np.float32(value)))


def set_field(struct, name, ctype, value, what):
    """struct.name = value, converted (enum names, sequences for arrays); a value the field
    cannot hold raises InvalidArgumentError."""
    try:
        if ctype.kind == "enum":
            value = enum(ctype.cname).value(value, what)
        elif ctype.kind == "array":
            value = [float(x) if ctype.item.kind == "primitive" and
                     ctype.item.cname in ("float", "double") else x for x in value]
            if len(value) != ctype.length:
                raise ValueError("needs %d values" % ctype.length)
        elif ctype.cname == "_Bool":
            value = bool(value)
        elif ctype.cname in ("float", "double"):
            value = float(value)
        elif ctype.kind == "primitive":
            value = int(value)
        setattr(struct, name, value)
    except Error:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        fail(lib.PIOLA_ERROR_INVALID_ARGUMENT, "%s: %s (got %r)" % (what, e, value))


def fields(cname, skip=()):
    return [(n, f.type) for n, f in ffi.typeof(cname).fields if n not in skip]


class Def:
    """A C definition struct with its defaults (piola_default_*()) as keyword arguments and
    attributes. Subclasses set _cname, _default and _skip."""

    _cname = None
    _default = None
    _skip = ("internal_cookie",)

    def __init__(self, **kwargs):
        c = ffi.new(self._cname + " *")
        c[0] = getattr(lib, self._default)()
        known = dict(fields(self._cname, self._skip))
        for k, v in kwargs.items():
            if k not in known:
                raise TypeError("%s() got an unexpected keyword argument %r (fields: %s)" % (
                    type(self).__name__, k, ", ".join(known)))
            set_field(c, k, known[k], v, "%s.%s" % (type(self).__name__, k))
        object.__setattr__(self, "_c", c)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        known = dict(fields(self._cname, self._skip))
        if name not in known:
            raise AttributeError("%s has no field %r" % (type(self).__name__, name))
        return to_python(known[name], getattr(self._c, name))

    def __setattr__(self, name, value):
        known = dict(fields(self._cname, self._skip))
        if name not in known:
            raise AttributeError("%s has no field %r" % (type(self).__name__, name))
        set_field(self._c, name, known[name], value, "%s.%s" % (type(self).__name__, name))

    def as_dict(self):
        return {n: to_python(t, getattr(self._c, n)) for n, t in fields(self._cname, self._skip)}

    def __eq__(self, other):
        return type(self) is type(other) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.as_dict().items()))


class Material(Def):
    """A tet body's material (piola_material): model ("stvk", "neohookean"), solver ("xpbd",
    "pbd"), youngs_modulus (Pa), poisson_ratio, density (kg/m^3), handle_inversion ("off",
    "on", "always"), split ("lame", "none"), plastic_yield, plastic_creep (1/s), plastic_max,
    damping (s, the material damping). Unset fields have piola_default_material()'s values."""

    _cname = "piola_material"
    _default = "piola_default_material"


class ClothMaterial(Def):
    """A cloth body's material (piola_cloth_material): density (kg/m^2), stretch_weft,
    stretch_warp, shear (N/m), poisson_weft, bending_stiffness (N m), solver ("xpbd", "pbd"),
    damping (s, the material damping).
    Unset fields have piola_default_cloth_material()'s values."""

    _cname = "piola_cloth_material"
    _default = "piola_default_cloth_material"


class Record:
    """Read-only attributes filled from a C struct (statistics, device info)."""

    def __init__(self, values):
        self.__dict__.update(values)

    def as_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.__dict__.items()))


class Stats(Record):
    """A world's figures (piola_stats): attributes named as its fields; stage_ms is a dict from
    stage name ("solve_tets", ...) to milliseconds, backend the backend's name."""


class Device(Record):
    """One OpenCL device (piola_device_info): platform_index, device_index, platform_name, name,
    vendor, version, type, compute_units, global_memory_bytes, max_work_group_size, fp64."""


STAGE_NAMES = tuple(ffi.string(lib.piola_stage_name(i)).decode()
                    for i in range(lib.PIOLA_STAGE_COUNT))


def record(cls, cname, c):
    values = {}
    for n, t in fields(cname):
        v = getattr(c, n)
        if n == "stage_ms":
            values[n] = dict(zip(STAGE_NAMES, v))
        else:
            values[n] = to_python(t, v)
    return cls(values)
