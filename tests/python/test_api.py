"""The Python API: names, defaults, shapes and dtypes, errors as exceptions with the library's
logged reason, bad input leaving the world unchanged, closed worlds."""
import logging
import os

import numpy as np
import pytest

import piola

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def small_world(backend="cpu", **kw):
    world = piola.World(backend=backend, **kw)
    body = world.add_tet_body(piola.make_box((2, 2, 2), 0.2), translation=(0.0, 0.05, 0.0))
    world.add_plane()
    return world, body


# ---- defaults and settings ----

def test_material_defaults_are_the_c_defaults():
    m = piola.Material()
    assert (m.model, m.solver, m.handle_inversion, m.split) == ("stvk", "xpbd", "on", "lame")
    assert (m.youngs_modulus, m.poisson_ratio, m.density) == (1e5, 0.3, 1000.0)
    assert (m.plastic_yield, m.plastic_creep, m.plastic_max) == (0.1, 0.0, 0.3)
    assert m.damping == 0.0
    c = piola.ClothMaterial()
    assert (c.density, c.stretch_weft, c.stretch_warp, c.shear) == (0.2, 1000.0, 1000.0, 100.0)
    assert (c.poisson_weft, c.bending_stiffness, c.solver) == (0.3, 1e-4, "xpbd")
    assert c.damping == 0.0


def test_material_keywords_and_attributes():
    m = piola.Material(model="neohookean", youngs_modulus=2e5, split="none")
    assert m.model == "neohookean" and m.youngs_modulus == 2e5 and m.split == "none"
    m.poisson_ratio = 0.45
    assert m.poisson_ratio == 0.45
    assert m == piola.Material(model="neohookean", youngs_modulus=2e5, split="none",
                               poisson_ratio=0.45)
    with pytest.raises(TypeError):
        piola.Material(young=1.0)
    with pytest.raises(piola.InvalidArgumentError) as e:
        piola.Material(model="rubber")
    assert e.value.status == "PIOLA_ERROR_INVALID_ARGUMENT" and "rubber" in str(e.value)


def test_world_settings_are_keywords_and_attributes():
    with piola.World(backend="cpu", dt=0.01, substeps=3, iterations=7, gravity=(0, -1, 0),
                     contacts=False, damping=0.5, iteration_scheme="jacobi") as w:
        assert w.backend == "cpu" and w.device is None
        assert (w.dt, w.substeps, w.iterations, w.gravity) == (0.01, 3, 7, (0.0, -1.0, 0.0))
        assert (w.contacts, w.damping, w.iteration_scheme) == (False, 0.5, "jacobi")
        assert w.settings["contact_thickness"] == 0.01
        w.iterations = 9
        w.gravity = (0, -9.81, 0)
        assert (w.iterations, w.gravity) == (9, (0.0, -9.81, 0.0))
        assert w.stats.backend == "cpu"
    with piola.World(backend="cpu") as w:  # the C defaults
        assert (w.dt, w.substeps, w.iterations, w.gravity) == (0.005, 1, 5, (0.0, -9.81, 0.0))
    with pytest.raises(TypeError):
        piola.World(timestep=0.01)


def test_vbd_chebyshev_rho_is_a_setting():
    with piola.World(backend="cpu", iteration_scheme="vbd", vbd_chebyshev_rho=0.85) as w:
        assert abs(w.vbd_chebyshev_rho - 0.85) < 1e-7 and w.iteration_scheme == "vbd"
        box = w.add_tet_body(piola.make_box((2, 2, 2), (0.2, 0.2, 0.2)), piola.Material())
        w.add_plane()
        w.step(10)
        assert np.isfinite(box.positions).all()
    with piola.World(backend="cpu") as w:
        assert w.vbd_chebyshev_rho == 0.0
    with pytest.raises(piola.InvalidArgumentError) as e:
        piola.World(backend="cpu", vbd_chebyshev_rho=1.0)
    assert "vbd_chebyshev_rho" in str(e.value)


def test_world_create_failure_raises_the_logged_reason():
    with pytest.raises(piola.Error) as e:
        piola.World(backend="cpu", substeps=0)
    assert e.value.status.startswith("PIOLA_ERROR_")
    assert "piola_world_create" in str(e.value)


def test_invalid_setting_change_raises_and_keeps_the_setting():
    with piola.World(backend="cpu") as w:
        with pytest.raises(piola.InvalidArgumentError) as e:
            w.iterations = 0
        assert "iterations" in str(e.value)
        assert w.iterations == 5
        with pytest.raises(piola.NonFiniteError if hasattr(piola, "NonFiniteError") else
                           piola.Error):
            w.gravity = (0, float("nan"), 0)
        assert w.gravity == (0.0, -9.81, 0.0)


# ---- meshes ----

def test_generated_meshes_shapes_and_dtypes():
    box = piola.make_box((3, 2, 1), (0.3, 0.2, 0.1))
    assert box.positions.shape == (4 * 3 * 2, 3) and box.positions.dtype == np.float32
    assert box.tets.shape == (6 * 3 * 2 * 1, 4) and box.tets.dtype == np.int32
    assert np.allclose(box.positions.max(axis=0), (0.3, 0.2, 0.1))
    grid = piola.make_grid((4, 3), (2.0, 1.0))
    assert grid.positions.shape == (5 * 4, 3) and grid.triangles.shape == (2 * 4 * 3, 3)
    assert grid.triangles.dtype == np.int32 and grid.uvs.shape == (20, 2)
    assert grid.uvs.dtype == np.float32 and np.all(grid.positions[:, 1] == 0)
    c = piola.make_creature(1.0)
    assert c.positions.shape[0] > 1000 and c.tets.shape[1] == 4
    assert abs(float(c.positions[:, 1].min())) < 1e-6
    with pytest.raises(piola.InvalidArgumentError):
        piola.make_box((0, 1, 1), 1.0)


def test_meshes_from_arrays_convert_to_float32_int32():
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64)
    tets = np.array([[0, 1, 2, 3]], dtype=np.int64)
    m = piola.TetMesh(positions=pos, tets=tets)
    assert m.positions.dtype == np.float32 and m.tets.dtype == np.int32
    pos[0, 0] = 5.0  # a copy was taken
    assert m.positions[0, 0] == 0.0
    t = piola.TriMesh(positions=pos, triangles=[[0, 1, 2]])
    assert t.triangles.shape == (1, 3) and t.uvs is None
    with pytest.raises(piola.InvalidMeshError):
        piola.TetMesh(positions=pos[:, :2], tets=tets)
    with pytest.raises(piola.InvalidMeshError):
        piola.TetMesh(positions=pos, tets=[[0.0, 1.0, 2.0, 3.0]])
    with pytest.raises(piola.InvalidMeshError):
        piola.TriMesh(positions=pos, triangles=[[0, 1, 2]], uvs=np.zeros((4, 3)))


def test_tetgen_round_trip(tmp_path):
    box = piola.make_box((2, 1, 1), 0.5)
    box.save_tetgen(tmp_path / "box.node")
    back = piola.load_tetgen(tmp_path / "box.node", tmp_path / "box.ele")
    assert np.array_equal(back.positions, box.positions)
    assert np.array_equal(back.tets, box.tets)
    assert np.array_equal(piola.load_tetgen(str(tmp_path / "box.node")).tets, box.tets)


def test_gmsh_loader():
    m = piola.load_gmsh(os.path.join(REPO, "tests", "data", "gmsh_box.msh"))
    assert m.positions.dtype == np.float32 and m.tets.dtype == np.int32
    assert m.tet_count > 0 and m.tets.max() < m.vertex_count


def test_obj_loader_with_uvs(tmp_path):
    path = tmp_path / "quad.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\n"
                    "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nf 1/1 4/4 3/3 2/2\n")
    m = piola.load_obj(path)
    assert m.positions.shape == (4, 3) and m.triangles.shape == (2, 3)
    assert m.uvs.shape == (4, 2) and m.uvs.dtype == np.float32
    assert np.array_equal(m.uvs[1], [1.0, 0.0])


def test_loader_errors_carry_the_logged_path_and_line(tmp_path, caplog):
    node, ele = tmp_path / "bad.node", tmp_path / "bad.ele"
    node.write_text("4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1\n3 0 0 1\n")
    ele.write_text("1 4 0\n0 0 1 2 3\n")
    with caplog.at_level(logging.ERROR, logger="piola"):
        with pytest.raises(piola.ParseError) as e:
            piola.load_tetgen(node, ele)
    assert e.value.status == "PIOLA_ERROR_PARSE"
    assert str(e.value).startswith("%s:4:" % node)
    assert isinstance(e.value, piola.Error)
    assert any(r.name == "piola" and r.levelno == logging.ERROR and "%s:4:" % node in r.message
               for r in caplog.records)
    with pytest.raises(piola.IoError) as e:
        piola.load_obj(tmp_path / "missing.obj")
    assert e.value.status == "PIOLA_ERROR_IO" and "missing.obj" in str(e.value)
    bad = tmp_path / "bad.obj"
    bad.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")
    with pytest.raises(piola.InvalidMeshError) as e:
        piola.load_obj(bad)
    assert str(e.value).startswith("%s:4:" % bad)


# ---- bodies ----

def test_body_arrays_shapes_dtypes_and_copies(backend):
    world, body = small_world(backend)
    with world:
        n = body.vertex_count
        assert n == 27 and len(body) == 27 and body.kind == "tet"
        for arr, shape in ((body.positions, (n, 3)), (body.velocities, (n, 3)),
                           (body.inverse_masses, (n,))):
            assert arr.shape == shape and arr.dtype == np.float32 and arr.flags.c_contiguous
        surface = body.surface
        assert surface.shape == (2 * 6 * 4, 3) and surface.dtype == np.int32
        assert body.surface_vertices.shape == (26,) and body.surface_vertices.dtype == np.int32
        p = body.positions
        p[:] = 7.0  # a copy: the body does not move
        assert not np.any(body.positions == 7.0)
        moved = body.positions + np.float32(0.25)
        body.positions = moved
        assert np.array_equal(body.positions, moved)
        out = np.zeros((n, 3), np.float32)
        assert body.get_positions(out=out) is out and np.array_equal(out, moved)
        with pytest.raises(piola.CountMismatchError):
            body.get_positions(out=np.zeros((n, 3), np.float64))
        v = np.full((n, 3), 0.5, dtype=np.float64)  # converted to float32
        body.velocities = v
        assert np.array_equal(body.velocities, v.astype(np.float32))
        w = body.inverse_masses
        w[0] = 0.0
        body.inverse_masses = w
        assert body.inverse_masses[0] == 0.0
        pinned = body.positions[0].copy()
        world.step(5)
        assert np.array_equal(body.positions[0], pinned)
        assert body.positions[1, 1] != moved[1, 1]


def test_bad_input_raises_and_changes_nothing(backend):
    world, body = small_world(backend)
    with world:
        world.step(3)
        before = (body.positions, body.velocities, body.inverse_masses)
        stats = world.stats
        nan = body.positions
        nan[3, 1] = np.nan
        with pytest.raises(piola.NonFiniteError) as e:
            body.positions = nan
        assert e.value.status == "PIOLA_ERROR_NON_FINITE" and "not finite" in str(e.value)
        with pytest.raises(piola.CountMismatchError) as e:
            body.velocities = np.zeros((5, 3))
        assert "5" in str(e.value) and "27" in str(e.value)
        with pytest.raises(piola.CountMismatchError):
            body.positions = np.zeros((27, 2))
        with pytest.raises(piola.Error) as e:
            body.inverse_masses = -np.ones(27)
        assert e.value.status != "PIOLA_OK"
        bad = piola.make_box((1, 1, 1), 0.1)
        bad.tets = np.where(bad.tets == 0, 99, bad.tets)
        with pytest.raises(piola.InvalidMeshError) as e:
            world.add_tet_body(bad)
        assert "99" in str(e.value)
        with pytest.raises(piola.InvalidMaterialError):
            world.add_tet_body(piola.make_box((1, 1, 1), 0.1), piola.Material(youngs_modulus=-1))
        with pytest.raises(piola.NonFiniteError):
            world.add_tet_body(piola.make_box((1, 1, 1), 0.1), translation=(0, np.inf, 0))
        with pytest.raises(piola.Error):
            world.add_collider("sphere", radius=-1.0)
        with pytest.raises(piola.Error):
            world.add_plane((0, 0, 0), 0.0, 0.5)
        with pytest.raises(piola.Error):
            world.add_attachment(body, 1000, (0, 0, 0))
        after = world.stats
        for name in ("body_count", "vertex_count", "tet_count", "collider_count", "step_count"):
            assert getattr(after, name) == getattr(stats, name), name
        assert after.simulated_time == stats.simulated_time
        for a, b in zip(before, (body.positions, body.velocities, body.inverse_masses)):
            assert a.tobytes() == b.tobytes()


def test_removed_body_raises_invalid_body():
    world, body = small_world()
    with world:
        other = world.add_tet_body(piola.make_box((1, 1, 1), 0.1), translation=(1, 0, 0))
        assert body.valid
        body.remove()
        assert not body.valid and other.valid
        with pytest.raises(piola.InvalidBodyError) as e:
            body.positions
        assert e.value.status == "PIOLA_ERROR_INVALID_BODY"
        with pytest.raises(piola.InvalidBodyError):
            body.remove()
        assert world.stats.body_count == 1


def test_forces_surface_render_mesh():
    world, body = small_world(gravity=(0, 0, 0))
    with world:
        body.set_forces(np.tile([1.0, 0.0, 0.0], (27, 1)))
        world.step(4)
        assert body.velocities[:, 0].min() > 0
        body.set_forces(None)
        mass = 1.0 / body.inverse_masses.astype(np.float64)
        momentum = (mass[:, None] * body.velocities).sum(axis=0)
        world.step(3)
        after = (mass[:, None] * body.velocities).sum(axis=0)
        assert momentum[0] > 0.1 and np.allclose(after, momentum, rtol=1e-3, atol=1e-6)
        sv = body.surface_vertices
        skin = body.attach_render_mesh(body.positions[sv] * 1.0)
        assert skin.positions.shape == (len(sv), 3) and skin.normals.dtype == np.float32
        assert np.allclose(np.linalg.norm(skin.normals, axis=1), 1.0, atol=1e-4)
        skin.remove()
        with pytest.raises(piola.InvalidRenderMeshError):
            skin.positions


@pytest.mark.parametrize("scheme", ["gauss_seidel", "vbd", "multigrid"])
def test_cloth_falls_onto_a_box(backend, scheme):
    with piola.World(backend=backend, contacts=False, iteration_scheme=scheme) as world:
        grid = piola.make_grid((8, 8), (1.0, 1.0))
        cloth = world.add_cloth(grid, piola.ClothMaterial(bending_stiffness=1e-5),
                                translation=(-0.5, 0.5, -0.5))
        assert cloth.kind == "cloth" and cloth.vertex_count == 81
        world.add_collider("box", center=(0, 0.2, 0), half_extents=(0.2, 0.2, 0.2),
                           static_friction=0.5, dynamic_friction=0.4)
        world.add_plane()
        assert np.array_equal(cloth.surface, grid.triangles)
        world.step(60)
        p = cloth.positions
        assert np.isfinite(p).all()
        centre = p[40]
        assert abs(centre[1] - 0.4) < 0.05  # resting on the box's top at y = 0.4
        assert p[:, 1].min() < 0.3           # the rim hangs down
        s = world.stats
        assert s.triangle_count == 128 and s.body_count == 1
        assert (s.multigrid_levels >= 1) == (scheme == "multigrid")


def test_colliders_and_attachments():
    world, body = small_world()
    with world:
        ball = world.add_collider("sphere", center=(0, 0, 0), radius=0.1)
        assert ball.type == "sphere"
        ball.set_pose((1.0, 2.0, 3.0), (0, 0, 0, 2.0), (0.5, 0, 0))
        pose = ball.pose
        assert pose["position"] == (1.0, 2.0, 3.0)
        assert pose["rotation"] == (0.0, 0.0, 0.0, 1.0)  # normalised
        assert pose["linear_velocity"] == (0.5, 0.0, 0.0)
        with pytest.raises(piola.Error):
            ball.set_pose((0, 0, 0), (0, 0, 0, 0))
        assert ball.pose == pose
        with pytest.raises(piola.InvalidArgumentError):
            world.add_collider("cone")
        with pytest.raises(TypeError):
            world.add_collider("sphere", centre=(0, 0, 0))
        ball.remove()
        with pytest.raises(piola.InvalidColliderError):
            ball.pose
        grab = world.add_attachment(body, 26, (0.0, 1.0, 0.0), 0.0)
        world.step(20)
        assert body.positions[26, 1] > 0.5
        grab.target = (0.5, 1.0, 0.0)
        assert grab.target == (0.5, 1.0, 0.0)
        grab.remove()
        with pytest.raises(piola.InvalidAttachmentError):
            grab.set_target((0, 0, 0))


# ---- worlds ----

def test_closed_world_raises():
    world, body = small_world()
    with world:
        world.step()
    assert world.closed
    for use in (lambda: world.step(), lambda: world.stats, lambda: body.positions,
                lambda: world.add_plane(), lambda: setattr(world, "iterations", 3),
                lambda: world.add_tet_body(piola.make_box((1, 1, 1), 0.1))):
        with pytest.raises(piola.ClosedError) as e:
            use()
        assert isinstance(e.value, piola.Error)
        assert e.value.status == "PIOLA_ERROR_INVALID_ARGUMENT"
    assert not body.valid
    world.close()  # idempotent
    assert world.dt == 0.005  # settings stay readable


def test_step_rejects_negative_counts_and_counts_steps():
    world, _ = small_world()
    with world:
        world.step(0)
        world.step(7)
        assert world.stats.step_count == 7
        with pytest.raises(piola.InvalidArgumentError):
            world.step(-1)
        with pytest.raises(piola.InvalidArgumentError):
            world.step(2 ** 31)
        assert world.stats.step_count == 7


def test_stats_fields():
    world, _ = small_world()
    with world:
        world.step(2)
        s = world.stats
        assert (s.body_count, s.vertex_count, s.tet_count) == (1, 27, 48)
        assert s.step_count == 2 and s.collider_count == 1 and s.color_count > 0
        assert set(s.stage_ms) == set(piola.STAGE_NAMES) and "solve_tets" in s.stage_ms
        assert s.device_name.startswith("CPU reference") and s.backend == "cpu"
        assert world.color_sizes.sum() == 48 and world.color_sizes.dtype == np.int32
        assert set(world.stage_times) == set(piola.STAGE_NAMES)
        assert world.kernel_times == []


def test_opencl_world_and_devices(opencl):
    devices = piola.devices()
    assert devices and all(isinstance(d.name, str) and d.compute_units > 0 for d in devices)
    with piola.World(backend="opencl", device="0:0") as w:
        assert w.device == "0:0"
        s = w.stats
        assert s.backend == "opencl" and s.device_name == devices[0].name
    with pytest.raises(piola.NoDeviceError) as e:
        piola.World(backend="opencl", device="no such device anywhere")
    assert e.value.status == "PIOLA_ERROR_NO_DEVICE"


def test_error_classes():
    assert issubclass(piola.InvalidMeshError, piola.Error)
    assert issubclass(piola.InvalidMeshError, ValueError)
    assert piola.InvalidMeshError.status == "PIOLA_ERROR_INVALID_MESH"
    assert not issubclass(piola.DeviceLostError, ValueError)
    assert piola.status_string(piola.InvalidMeshError.code) == "invalid mesh"


def test_auto_backend_and_opencl_without_a_device():
    have = bool(piola.devices())
    with piola.World(backend="auto") as w:
        assert w.stats.backend == ("opencl" if have else "cpu")
    if not have:  # a build or machine without OpenCL: the OpenCL backend is refused
        with pytest.raises((piola.UnsupportedError, piola.NoDeviceError)) as e:
            piola.World(backend="opencl")
        assert e.value.status in ("PIOLA_ERROR_UNSUPPORTED", "PIOLA_ERROR_NO_DEVICE")


# ---- state ----

def test_save_and_load_state_replays_bitwise(backend):
    """A world loaded with a saved state steps as the world it was saved from, bit for bit; a
    state of another scene raises and changes nothing."""
    world, body = small_world(backend)
    with world:
        world.step(10)
        state = world.save_state()
        assert isinstance(state, bytes) and state[:7] == b"PIOLAST"
        world.step(10)
        after = body.positions
        world.load_state(state)
        world.step(10)
        assert np.array_equal(body.positions, after)
        other = piola.World(backend=backend)
        with other:
            other.add_tet_body(piola.make_box((1, 1, 1), 0.1))
            before = world.save_state()
            with pytest.raises(piola.Error) as e:
                world.load_state(other.save_state())
            assert e.value.status == "PIOLA_ERROR_COUNT_MISMATCH"
            assert world.save_state() == before
            with pytest.raises(piola.Error):
                world.load_state(state[:100])
            assert world.save_state() == before
