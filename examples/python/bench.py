"""The paper's benchmark from Python: 100 Armadillos (118000 vertices, 371700 tets), 5
iterations, dt = 5 ms, timed per step like `piola bench` (median, min and p95 ms/step, tet
solves per second). The mesh is ../shared/data/armadillo/armadillo_4k.node beside the
repository when it is there, else the procedural creature (or --mesh / --box).

    python examples/python/bench.py [--bodies 100] [--steps 50] [--backend auto|cpu|opencl]
                                    [--no-contacts] [--mesh PATH | --box NX,NY,NZ]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import piola  # noqa: E402
from scenes import build_grid, load_mesh  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=100)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "opencl"])
    ap.add_argument("--device", default=None)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--no-contacts", action="store_true")
    ap.add_argument("--mesh", default=None, help="a .node (TetGen) or .msh (Gmsh) file")
    ap.add_argument("--box", default=None, help="NX,NY,NZ: a box of 5 cm cubes instead")
    a = ap.parse_args(argv)
    box = tuple(int(x) for x in a.box.split(",")) if a.box else None
    mesh, name = load_mesh(a.mesh, box)
    world = piola.World(backend=a.backend, device=a.device, iterations=a.iterations,
                        contacts=not a.no_contacts)
    with world:
        t0 = time.perf_counter()
        build_grid(world, mesh, a.bodies)
        setup = time.perf_counter() - t0
        stats = world.stats
        print("%s x%d: %d vertices, %d tets, %d colors, on %s (%s), contacts %s, setup %.2f s" % (
            name, a.bodies, stats.vertex_count, stats.tet_count, stats.color_count,
            stats.device_name, stats.backend, "on" if world.contacts else "off", setup))
        world.step(a.warmup)
        world.finish()
        ms = []
        for _ in range(a.steps):
            t = time.perf_counter()
            world.step()
            world.finish()
            ms.append((time.perf_counter() - t) * 1e3)
        ms = np.array(ms)
        med = float(np.median(ms))
        solves = stats.tet_count * world.iterations * world.substeps / (med * 1e-3)
        print("ms/step: median %.2f, min %.2f, p95 %.2f, mean %.2f over %d steps" % (
            med, ms.min(), np.percentile(ms, 95), ms.mean(), a.steps))
        print("tet solves per second: %.3g   (paper: 152.41 ms/step for 100 Armadillos on two "
              "6-core Xeon X5650, their hardware)" % solves)
        after = world.stats
        print("after %.3f s: %d inverted tets, %d contacts in the last substep" % (
            after.simulated_time, after.inverted_tets, after.contact_count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
