"""The Python examples run headless and finish with status 0, small."""
import os
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                        "python"))


def run(tmp_path, name, *args):
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                       cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    return r.stdout


def test_bench(tmp_path):
    out = run(tmp_path, "bench.py", "--box", "3,2,2", "--bodies", "4", "--steps", "3",
              "--warmup", "1", "--backend", "cpu")
    assert "box_3x2x2 x4: 144 vertices, 288 tets" in out and "ms/step: median" in out


def test_engine_loop_headless(tmp_path):
    out = run(tmp_path, "engine_loop.py", "--frames", "30", "--backend", "cpu")
    assert "frame   30:" in out


def test_funnel(tmp_path):
    out = run(tmp_path, "funnel.py", "--bodies", "2", "--seconds", "0.1", "--frames", "2",
              "--backend", "cpu")
    assert "2 bodies" in out and "t =  0.10 s" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib not installed: no picture to check")
    assert (tmp_path / "funnel.png").stat().st_size > 10000


def test_cloth(tmp_path):
    out = run(tmp_path, "cloth.py", "--cells", "10", "--steps", "20", "--every", "10",
              "--backend", "cpu")
    assert "cloth 10 x 10: 121 vertices, 200 triangles" in out and "step   20" in out


def test_engine_loop_mouse_grab_drags_a_vertex():
    """The window's mouse handlers, without a window: press on a vertex grabs it, dragging
    moves it towards the pointer, release lets it go."""
    sys.path.insert(0, EXAMPLES)
    try:
        import engine_loop
    finally:
        sys.path.remove(EXAMPLES)
    game = engine_loop.Game("cpu")
    with game.world:
        body = game.bodies[1]
        p = body.positions
        top = int(np.argmax(p[:, 1]))
        x, y = float(p[top, 0]), float(p[top, 1])
        game.press(x + 0.02, y)
        assert game.grab is not None and game.grab.body == body
        v = game.grab.vertex  # the vertex nearest to the pointer in the side view
        assert np.hypot(p[v, 0] - x - 0.02, p[v, 1] - y) <= 0.02 + 1e-6
        game.drag(x, y + 0.4)
        for _ in range(30):
            game.step()
        assert body.positions[v, 1] > p[v, 1] + 0.25
        game.release()
        assert game.grab is None
        game.press(5.0, 5.0)  # nothing within 10 cm: no grab
        assert game.grab is None
