"""What the Python layer costs over the C API, on the grid scene of `piola bench` (100
Armadillos when ../shared/data holds the mesh, else 100 procedural creatures; contacts off by
default, as the paper's figure): bench/python_overhead.c (built here against the installed
package's own libpiola) and the same scene through piola, in alternating rounds, each after
the same warm-up:

  step:      C: `steps` x piola_world_step() + finish;  Python: world.step(steps) + finish()
  read+step: each step followed by a read of every body's positions (C: into one buffer;
             Python: body.positions, a new numpy array each)
  read only: the reads of all bodies without stepping (C read vs C read + numpy allocation)

    python bench/python_overhead.py [--bodies 100] [--steps 20] [--rounds 5]
                                    [--backend opencl|cpu] [--contacts] [--mesh PATH.node]
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "examples", "python"))
import piola  # noqa: E402
from scenes import ARMADILLO, build_grid, load_mesh, bench_material  # noqa: E402


def build_c(tmp):
    lib = sorted(glob.glob(os.path.join(os.path.dirname(piola.__file__), "libpiola.so*")))[0]
    exe = os.path.join(tmp, "python_overhead")
    cc = os.environ.get("CC") or shutil.which("cc")
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "-I", os.path.join(REPO, "include"), os.path.join(HERE, "python_overhead.c"),
                    "-o", exe, lib, "-Wl,-rpath," + os.path.dirname(lib), "-lm"], check=True)
    return exe


def c_round(exe, node, ele, a):
    out = subprocess.run([exe, node, ele, str(a.bodies), str(a.steps), str(a.warmup), a.backend,
                          "1" if a.contacts else "0"], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def py_round(mesh, a):
    with piola.World(backend=a.backend, contacts=a.contacts) as world:
        bodies = build_grid(world, mesh, a.bodies, bench_material())
        world.step(a.warmup)
        world.finish()
        r = {}
        t = time.perf_counter()
        world.step(a.steps)
        world.finish()
        r["step_ms"] = (time.perf_counter() - t) * 1e3 / a.steps
        t = time.perf_counter()
        for _ in range(a.steps):
            world.step()
            frame = [b.positions for b in bodies]
        r["read_step_ms"] = (time.perf_counter() - t) * 1e3 / a.steps
        reads = 200
        t = time.perf_counter()
        for _ in range(reads):
            frame = [b.positions for b in bodies]
        r["read_only_ms"] = (time.perf_counter() - t) * 1e3 / reads
        del frame
        return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="opencl", choices=["cpu", "opencl"])
    ap.add_argument("--contacts", action="store_true")
    ap.add_argument("--mesh", default=None, help="a TetGen .node (default: the Armadillo)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        path = a.mesh or (ARMADILLO if os.path.exists(ARMADILLO) else None)
        mesh, name = load_mesh(path)
        # Both sides run the mesh as Python sees it (centred), through one TetGen file.
        node, ele = os.path.join(tmp, "mesh.node"), os.path.join(tmp, "mesh.ele")
        mesh.save_tetgen(node, ele)
        mesh = piola.load_tetgen(node, ele)
        print("%s x%d on %s, contacts %s, %d steps per round, %d rounds (C, Python alternating)"
              % (name, a.bodies, a.backend, "on" if a.contacts else "off", a.steps, a.rounds))
        rows = {"C": [], "Python": []}
        for r in range(a.rounds):
            rows["C"].append(c_round(exe, node, ele, a))
            rows["Python"].append(py_round(mesh, a))
            print("  round %d: C step %.2f ms, Python step %.2f ms" % (
                r + 1, rows["C"][-1]["step_ms"], rows["Python"][-1]["step_ms"]))
    keys = [("step_ms", "step, ms/step"), ("read_step_ms", "step + read of all bodies, ms/step"),
            ("read_only_ms", "read of all bodies, ms")]
    print("%-38s %12s %12s %9s" % ("median over rounds", "C", "Python", "Python/C"))
    for k, label in keys:
        c = float(np.median([x[k] for x in rows["C"]]))
        p = float(np.median([x[k] for x in rows["Python"]]))
        print("%-38s %12.4f %12.4f %8.3fx" % (label, c, p, p / c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
