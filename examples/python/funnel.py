"""The funnel scene of Bender et al. 2014, Sec. 6: a column of bodies falls through a funnel
onto the ground (layout as `piola run --scene funnel`), with a picture of its frames: side
views (x-y) of the bodies' vertices at a few times, the funnel's wall drawn in, written to a
PNG with matplotlib (optional: without it the example prints the figures only).

    python examples/python/funnel.py [--bodies 9] [--seconds 3] [--backend auto|cpu|opencl]
                                     [--mesh PATH] [--frames 6] [--out funnel.png]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import piola  # noqa: E402
from scenes import ARMADILLO, build_funnel, centred, scaled  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "opencl"])
    ap.add_argument("--mesh", default=None, help="a TetGen .node (default: the Armadillo if "
                    "../shared/data has it, else the procedural creature)")
    ap.add_argument("--frames", type=int, default=6, help="pictures along the run")
    ap.add_argument("--out", default="funnel.png")
    a = ap.parse_args(argv)
    path = a.mesh or (ARMADILLO if os.path.exists(ARMADILLO) else None)
    mesh = piola.make_creature(1.0) if path is None else scaled(centred(piola.load_tetgen(path)),
                                                                1.0)
    # 4 substeps: the column's impacts reach 18 m/s (as `piola run --scene funnel`)
    with piola.World(backend=a.backend, substeps=4) as world:
        bodies, funnel = build_funnel(world, mesh, a.bodies)
        steps = int(round(a.seconds / world.dt))
        marks = sorted({int(round(i * steps / max(a.frames - 1, 1))) for i in range(a.frames)})
        print("%d bodies, %d vertices on %s; %d steps of %.3f s" % (
            len(bodies), world.stats.vertex_count, world.stats.device_name, steps, world.dt))
        frames, done = [], 0
        for mark in marks:
            world.step(mark - done)
            done = mark
            p = np.concatenate([b.positions for b in bodies])
            frames.append((mark * world.dt, p))
            s = world.stats
            below = sum(float(b.positions[:, 1].max()) < funnel["base"][1] for b in bodies)
            print("t = %5.2f s: %d of %d bodies through the funnel, lowest y %.2f m, %d "
                  "contacts, %d inverted tets" % (mark * world.dt, below, len(bodies),
                                                  float(p[:, 1].min()), s.contact_count,
                                                  s.inverted_tets))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib)")
        return 0
    fig, axes = plt.subplots(1, len(frames), figsize=(2.6 * len(frames), 5.2), sharey=True)
    axes = np.atleast_1d(axes)
    b, h = funnel["base"][1], funnel["height"]
    r0, r1 = funnel["base_radius"], funnel["top_radius"]
    top = max(float(p[:, 1].max()) for _, p in frames)
    for ax, (t, p) in zip(axes, frames):
        ax.scatter(p[:, 0], p[:, 1], s=0.2, c=p[:, 2], cmap="viridis", linewidths=0)
        for sign in (-1, 1):
            ax.plot([sign * r0, sign * r1], [b, b + h], color="k", lw=1.5)
        ax.axhline(0.0, color="0.4", lw=1)
        ax.set_title("t = %.2f s" % t)
        ax.set_aspect("equal")
        ax.set_xlim(-1.1 * r1, 1.1 * r1)
        ax.set_ylim(-0.1, top + 0.1)
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    fig.suptitle("Funnel: %d bodies (side view, colour = depth)" % len(bodies))
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
