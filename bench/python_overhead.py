"""What the Python layer costs over the C API, on the grid scene of `piola bench` (100
Armadillos when ../shared/data holds the mesh, else 100 procedural creatures; contacts off by
default, as the paper's figure): bench/python_overhead.c (built here against the installed
package's own libpiola) and the same scene through piola, in alternating rounds, each after
the same warm-up, each round in a fresh process:

  step:      C: `steps` x piola_world_step() + finish;  Python: world.step(steps) + finish()
  read+step: each step followed by a read of every body's positions (C: into one buffer;
             Python: body.positions, a new numpy array each)
  read only: the reads of all bodies without stepping (C read vs C read + numpy allocation)
  in the Python process: the C read called through the binding into preallocated arrays
             against body.positions; world.step(n) against n calls of world.step()
  tiny:      20000 steps of a world holding one cube of 6 tets: the cost of a call itself
             (Python: world.step() 20000 times, and world.step(20000) once)

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
        # In this process: the C read itself (the library's function called through the
        # binding into arrays allocated once), against body.positions above.
        from piola._piola import ffi, lib
        wp = world._ptr
        bufs = [np.empty((b.vertex_count, 3), np.float32) for b in bodies]
        calls = [(b._id[0], ffi.from_buffer("float[]", x, require_writable=True), b.vertex_count)
                 for b, x in zip(bodies, bufs)]
        get = lib.piola_body_get_positions
        t = time.perf_counter()
        for _ in range(reads):
            for ident, buf, n in calls:
                get(wp, ident, buf, n)
        r["read_raw_ms"] = (time.perf_counter() - t) * 1e3 / reads
        t = time.perf_counter()
        for _ in range(reads):
            for b, x in zip(bodies, bufs):
                b.get_positions(out=x)
        r["read_out_ms"] = (time.perf_counter() - t) * 1e3 / reads
        # In this process: n steps in one call against n calls of step().
        t = time.perf_counter()
        for _ in range(a.steps):
            world.step()
        world.finish()
        r["step_calls_ms"] = (time.perf_counter() - t) * 1e3 / a.steps
        del frame
    with piola.World(backend=a.backend, contacts=a.contacts) as empty:
        empty.add_plane()
        empty.add_tet_body(piola.make_box((1, 1, 1), 0.1), bench_material())
        calls = 20000
        t = time.perf_counter()
        for _ in range(calls):
            empty.step()
        empty.finish()
        r["empty_step_us"] = (time.perf_counter() - t) * 1e6 / calls
        t = time.perf_counter()
        empty.step(calls)
        empty.finish()
        r["empty_step_n_us"] = (time.perf_counter() - t) * 1e6 / calls
    return r


def py_worker(node, ele, a):
    """A Python round in a fresh process, as each C round is (the same start for both)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", node, ele,
           "--bodies", str(a.bodies), "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--backend", a.backend] + (["--contacts"] if a.contacts else [])
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="opencl", choices=["cpu", "opencl"])
    ap.add_argument("--contacts", action="store_true")
    ap.add_argument("--mesh", default=None, help="a TetGen .node (default: the Armadillo)")
    ap.add_argument("--worker", nargs=2, metavar=("NODE", "ELE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        for k, v in py_round(piola.load_tetgen(*a.worker), a).items():
            print(k, v)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        path = a.mesh or (ARMADILLO if os.path.exists(ARMADILLO) else None)
        mesh, name = load_mesh(path)
        # Both sides run the mesh as Python sees it (centred), through one TetGen file.
        node, ele = os.path.join(tmp, "mesh.node"), os.path.join(tmp, "mesh.ele")
        mesh.save_tetgen(node, ele)
        print("%s x%d on %s, contacts %s, %d steps per round, %d rounds (C, Python alternating)"
              % (name, a.bodies, a.backend, "on" if a.contacts else "off", a.steps, a.rounds))
        rows = {"C": [], "Python": []}
        for r in range(a.rounds):
            rows["C"].append(c_round(exe, node, ele, a))
            rows["Python"].append(py_worker(node, ele, a))
            print("  round %d: C step %.2f ms, Python step %.2f ms" % (
                r + 1, rows["C"][-1]["step_ms"], rows["Python"][-1]["step_ms"]))
    keys = [("step_ms", "step, ms/step"), ("read_step_ms", "step + read of all bodies, ms/step"),
            ("read_only_ms", "read of all bodies, ms"),
            ("empty_step_us", "one-cube world: one step() call, us")]
    print("%-38s %12s %12s %9s" % ("median over rounds", "C", "Python", "Python/C"))
    for k, label in keys:
        c = float(np.median([x[k] for x in rows["C"]]))
        p = float(np.median([x[k] for x in rows["Python"]]))
        print("%-38s %12.4f %12.4f %8.3fx" % (label, c, p, p / c))
    p = float(np.median([x["empty_step_n_us"] for x in rows["Python"]]))
    c = float(np.median([x["empty_step_us"] for x in rows["C"]]))
    print("%-38s %12.4f %12.4f %8.3fx" % ("one-cube world: step(20000), us/step", c, p, p / c))
    print("In the Python process (medians over rounds):")
    py = rows["Python"]
    med = lambda k: float(np.median([x[k] for x in py]))  # noqa: E731
    print("  read of all bodies: C function into preallocated arrays %.4f ms, "
          "body.get_positions(out=...) %.4f ms, body.positions %.4f ms (%.2f us more per body "
          "than the C function)" % (
              med("read_raw_ms"), med("read_out_ms"), med("read_only_ms"),
              (med("read_only_ms") - med("read_raw_ms")) * 1e3 / a.bodies))
    print("  steps: world.step(%d) %.4f ms/step, %d x world.step() %.4f ms/step" % (
        a.steps, med("step_ms"), a.steps, med("step_calls_ms")))
    print("  one-cube world: world.step(20000) %.3f us/step, 20000 x world.step() %.3f us: "
          "%.3f us per Python call" % (med("empty_step_n_us"), med("empty_step_us"),
                                       med("empty_step_us") - med("empty_step_n_us")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
