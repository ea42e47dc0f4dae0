"""Piola: soft bodies and cloth with XPBD on any OpenCL device, with a double-precision CPU
reference. A Python binding of the C library's public API (include/piola/piola.h), generated
with cffi; arrays are numpy arrays, failures raise piola.Error. See docs/python.md.

    import piola
    with piola.World(backend="cpu") as world:
        body = world.add_tet_body(piola.make_creature(1.0), piola.Material(youngs_modulus=2e5),
                                  translation=(0, 0.5, 0))
        world.add_plane((0, 1, 0), 0.0, 0.6)
        world.step(200)
        print(body.positions[:, 1].min())
"""
from ._piola import ffi as _ffi, lib as _lib
from ._errors import ERRORS as _ERRORS, ClosedError, Error, status_string
from ._structs import ClothMaterial, Device, Material, Stats, STAGE_NAMES
from ._mesh import (TetMesh, TriMesh, load_gmsh, load_obj, load_tetgen, make_box, make_creature,
                    make_grid)
from ._world import Attachment, Body, Collider, RenderMesh, World, devices

for _cls in _ERRORS.values():
    globals()[_cls.__name__] = _cls
del _cls

__version__ = _ffi.string(_lib.piola_version_string()).decode()
POSITION_LIMIT = _lib.PIOLA_POSITION_LIMIT
MAX_VERTEX_CONTACTS = _lib.PIOLA_MAX_VERTEX_CONTACTS

__all__ = ["World", "Body", "Collider", "Attachment", "RenderMesh", "TetMesh", "TriMesh",
           "Material", "ClothMaterial", "Stats", "Device", "Error", "ClosedError", "devices",
           "load_tetgen", "load_gmsh", "load_obj", "make_box", "make_grid", "make_creature",
           "status_string", "STAGE_NAMES", "POSITION_LIMIT", "MAX_VERTEX_CONTACTS"] + \
          sorted(c.__name__ for c in _ERRORS.values())
