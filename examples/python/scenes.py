"""The scenes of the `piola` program (src/cli/scene.c), built with the Python package: the grid
of bodies of `piola bench` (the paper's 100 Armadillos), the funnel of Bender et al. 2014,
Sec. 6, and the cloth of its Fig. 1 right. Shared by the examples in this folder and by
bench/python_overhead.py."""
import math
import os

import numpy as np

import piola

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The paper's Armadillo, outside the repository (never copied into it).
ARMADILLO = os.path.join(REPO, "..", "shared", "data", "armadillo", "armadillo_4k.node")


def centred(mesh):
    """The mesh moved so that it is centred on x = z = 0 with its lowest point at y = 0."""
    p = mesh.positions
    lo, hi = p.min(axis=0), p.max(axis=0)
    shift = np.array([-(lo[0] + hi[0]) / 2, -lo[1], -(lo[2] + hi[2]) / 2], dtype=np.float32)
    return piola.TetMesh(positions=p + shift, tets=mesh.tets)


def scaled(mesh, height):
    """The mesh scaled uniformly to `height` m tall (about its lowest point on the axis)."""
    h = float(mesh.positions[:, 1].max() - mesh.positions[:, 1].min())
    return piola.TetMesh(positions=mesh.positions * np.float32(height / h), tets=mesh.tets)


def load_mesh(path=None, box=None):
    """(mesh, name): a TetGen (.node) or Gmsh (.msh) file, a box of 5 cm cubes (box = (nx, ny,
    nz)), or by default the Armadillo when ../shared/data holds it, else the procedural
    creature (3 m tall, as `piola bench` makes it)."""
    if box is not None:
        return centred(piola.make_box(box, [0.05 * c for c in box])), "box_%dx%dx%d" % tuple(box)
    if path is None and os.path.exists(ARMADILLO):
        path = ARMADILLO
    if path is None:
        return piola.make_creature(3.0), "creature"
    if path.lower().endswith(".msh"):
        mesh = piola.load_gmsh(path)
    else:
        mesh = piola.load_tetgen(path)
    return centred(mesh), os.path.splitext(os.path.basename(path))[0]


def bench_material():
    """`piola bench`'s material: Neo-Hookean, E = 1 MPa (StVK softens under strong
    compression)."""
    return piola.Material(model="neohookean", youngs_modulus=1.0e6)


def grid_positions(mesh, bodies):
    """Translations of `bodies` bodies on a square grid 1.2 body widths apart, lifted by a tenth
    of the body's height (the grid scene of `piola bench`)."""
    p = mesh.positions
    lo, hi = p.min(axis=0), p.max(axis=0)
    spacing = np.float32(1.2) * max(hi[0] - lo[0], hi[2] - lo[2])
    side = 1
    while side * side < bodies:
        side += 1
    lift = np.float32(0.1) * (hi[1] - lo[1])
    return [((b % side - 0.5 * (side - 1)) * spacing, lift,
             (b // side - 0.5 * (side - 1)) * spacing) for b in range(bodies)]


def build_grid(world, mesh, bodies, material=None, squash=0.6):
    """The grid scene: `bodies` copies of `mesh` side by side above the ground plane, started
    squashed vertically by `squash` (they spring up), as `piola bench` builds it."""
    material = material or bench_material()
    world.add_plane((0.0, 1.0, 0.0), 0.0, 0.5)
    out = []
    for at in grid_positions(mesh, bodies):
        body = world.add_tet_body(mesh, material, translation=at)
        if squash != 1.0:
            p = mesh.positions.copy()
            p[:, 1] *= np.float32(squash)
            body.positions = p + np.asarray(at, dtype=np.float32)
        out.append(body)
    return out


def build_funnel(world, mesh, bodies, material=None, opening=2.5, friction=0.2):
    """The funnel scene (paper Sec. 6, as src/cli/scene.c lays it out): layers of up to 3 x 3
    bodies, each turned by the golden angle times its index, above a funnel whose wall stands
    60 degrees from the horizontal and whose bottom opening is `opening` body widths across,
    high enough above the ground for the pile. Returns (bodies, funnel shape as a dict)."""
    material = material or bench_material()
    p = mesh.positions
    H = float(p[:, 1].max() - p[:, 1].min())
    r_body = float(np.sqrt(p[:, 0] ** 2 + p[:, 2] ** 2).max())
    t = mesh.tets
    d = np.stack([p[t[:, k]] - p[t[:, 0]] for k in (1, 2, 3)], axis=1).astype(np.float64)
    volume = float(np.abs(np.linalg.det(d)).sum() / 6.0)
    side = 3 if bodies > 4 else 2 if bodies > 1 else 1
    spacing = 2 * r_body + 0.1 * H
    half = 0.5 * (side - 1) * spacing
    reach = math.sqrt(2.0) * half + r_body
    r_bottom = opening * r_body
    r_top = max(reach + 0.1 * H, r_bottom + 0.5 * H)
    height = (r_top - r_bottom) * math.tan(math.radians(60.0))
    slope = math.tan(math.radians(30.0))
    pile = (3.0 * (bodies * volume / 0.5) * slope * slope / math.pi) ** (1.0 / 3.0)
    clearance = max(pile + H, 1.5 * H)
    first = clearance + height + 0.2 * H
    funnel = dict(base=(0.0, clearance, 0.0), axis=(0.0, 1.0, 0.0), base_radius=r_bottom,
                  top_radius=r_top, height=height)
    world.add_plane((0.0, 1.0, 0.0), 0.0, 0.5)
    world.add_collider("funnel", static_friction=friction, dynamic_friction=friction, **funnel)
    golden = math.pi * (3.0 - math.sqrt(5.0))
    out = []
    for b in range(bodies):
        layer, slot = divmod(b, side * side)
        at = (slot % side * spacing - half, first + layer * 1.2 * H, slot // side * spacing - half)
        a = math.fmod(golden * b, 2.0 * math.pi)
        c, s = np.float32(math.cos(a)), np.float32(math.sin(a))
        turned = np.stack([c * p[:, 0] + s * p[:, 2], p[:, 1], -s * p[:, 0] + c * p[:, 2]], axis=1)
        out.append(world.add_tet_body(piola.TetMesh(positions=turned, tets=t), material,
                                      translation=at))
    return out, funnel


class ClothScene:
    """The cloth scene (paper Fig. 1 right, as src/cli/scene.c builds it): a 3 m square cloth of
    cells x cells squares at 1.3 m falls over four boxes (0.3 x 1 x 0.3 m) at the corners of a
    1.5 m square; a sphere of 0.35 m moves down at 2 m/s through the cloth's centre until it is
    0.1 m above the ground. Call before_step() before each step (it stops the sphere)."""

    size, height = 3.0, 1.3
    box_half, box_offset = (0.15, 0.5, 0.15), 0.75
    radius, speed, clearance = 0.35, 2.0, 0.1

    def __init__(self, world, cells=200):
        self.world = world
        world.add_plane((0.0, 1.0, 0.0), 0.0, 0.5)
        self.boxes = []
        for i in range(4):
            centre = (self.box_offset if i & 1 else -self.box_offset, self.box_half[1],
                      self.box_offset if i & 2 else -self.box_offset)
            world.add_collider("box", center=centre, half_extents=self.box_half,
                               rotation=(0, 0, 0, 1), static_friction=0.5, dynamic_friction=0.5)
            self.boxes.append(centre)
        stop_y = self.radius + self.clearance
        per_step = self.speed * world.dt
        self.stop_step = math.ceil((self.height + self.radius + 0.05 - stop_y) / per_step)
        self.stop = (0.0, stop_y, 0.0)
        self.sphere = world.add_collider("sphere", radius=self.radius, static_friction=0.3,
                                         dynamic_friction=0.3)
        self.sphere.set_pose((0.0, stop_y + per_step * self.stop_step, 0.0),
                             linear_velocity=(0.0, -self.speed, 0.0))
        material = piola.ClothMaterial(density=0.2, stretch_weft=1000.0, stretch_warp=1000.0,
                                       shear=100.0, poisson_weft=0.3, bending_stiffness=1e-4)
        self.mesh = piola.make_grid((cells, cells), (self.size, self.size))
        self.cloth = world.add_cloth(self.mesh, material,
                                     translation=(-self.size / 2, self.height, -self.size / 2))
        self.steps = 0

    def before_step(self):
        if self.steps == self.stop_step:
            self.sphere.set_pose(self.stop)
        self.steps += 1

    def step(self, n=1):
        for _ in range(n):
            self.before_step()
            self.world.step()
