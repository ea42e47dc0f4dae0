"""The cloth scene of Bender et al. 2014, Fig. 1 right (as `piola run --scene cloth`): a 3 m
square cloth falls over four boxes and a sphere moving down at 2 m/s pushes it towards the
ground. Prints the cloth's state every `--every` steps and, with matplotlib, writes a picture
of the final drape (a side view and a top view coloured by height).

    python examples/python/cloth.py [--cells 60] [--steps 300] [--backend auto|cpu|opencl]
                                    [--out cloth.png]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import piola  # noqa: E402
from scenes import ClothScene  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=60, help="N x N cells (the paper's: 200)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "opencl"])
    ap.add_argument("--out", default="cloth.png")
    a = ap.parse_args(argv)
    # cloth takes no part in body-body contact (README, "Cloth"); its self-contact is its own
    with piola.World(backend=a.backend, contacts=False) as world:
        scene = ClothScene(world, a.cells)
        s = world.stats
        print("cloth %d x %d: %d vertices, %d triangles, %d bending stencils on %s" % (
            a.cells, a.cells, s.vertex_count, s.triangle_count, s.bend_count, s.device_name))
        t0 = time.perf_counter()
        for step in range(1, a.steps + 1):
            scene.step()
            if step % a.every == 0 or step == a.steps:
                p = scene.cloth.positions
                s = world.stats
                print("step %4d (t = %.2f s): y in [%.3f, %.3f] m, sphere at y = %.2f, "
                      "elastic %.3f J, kinetic %.3f J" % (
                          step, s.simulated_time, float(p[:, 1].min()), float(p[:, 1].max()),
                          scene.sphere.pose["position"][1], s.elastic_energy, s.kinetic_energy))
        print("%.2f ms per step" % ((time.perf_counter() - t0) * 1e3 / a.steps))
        p = scene.cloth.positions
        tris = scene.cloth.surface
    assert np.isfinite(p).all()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.tri import Triangulation
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib)")
        return 0
    fig, (side, top) = plt.subplots(1, 2, figsize=(11, 5))
    side.triplot(Triangulation(p[:, 0], p[:, 1], tris), lw=0.2, color="tab:blue")
    for (x, y, z) in scene.boxes:
        side.add_patch(plt.Rectangle((x - 0.15, 0.0), 0.3, 1.0, color="0.6", alpha=0.5))
    side.set_aspect("equal")
    side.set_title("side view (x-y)")
    t = top.tripcolor(Triangulation(p[:, 0], p[:, 2], tris), p[:, 1], shading="gouraud",
                      cmap="viridis")
    fig.colorbar(t, ax=top, label="height (m)")
    top.set_aspect("equal")
    top.set_title("top view (x-z), colour = height")
    fig.suptitle("Cloth after %.2f s" % (a.steps * 0.005))
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
