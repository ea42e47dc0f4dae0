"""What the Python layer costs over the C API, on the grid scene of `piola bench` (100
Armadillos when ../shared/data holds the mesh, else 100 procedural creatures; contacts off by
default, as the paper's figure): bench/python_overhead.c (built here against the installed
package's own libpiola) and the same scene through piola, in alternating rounds, each after
the same warm-up, each round in a fresh process:

  step:      C: `steps` x piola_world_step() + finish;  Python: world.step(steps) + finish()
  read+step: each step followed by a read of every body's positions (C: into one buffer;
             Python: body.positions, a new numpy array each)
  read only: the reads of all bodies without stepping (C: into one buffer)
  in the Python process: the C read (the library's function called through the binding
             into preallocated arrays), body.get_positions(out=...) and body.positions,
             interleaved; world.step(n) against n calls of world.step()
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
        # The reads alone, in this process, interleaved so that they share the load of the
        # moment: the C function called through the binding into arrays allocated once (the C
        # read), body.get_positions(out=...) into the same arrays, and body.positions (a new
        # array each); min and median over the rounds of all bodies.
        from piola._piola import ffi, lib
        wp, get = world._ptr, lib.piola_body_get_positions
        bufs = [np.empty((b.vertex_count, 3), np.float32) for b in bodies]
        calls = [(b._id[0], ffi.from_buffer("float[]", x, require_writable=True), b.vertex_count)
                 for b, x in zip(bodies, bufs)]
        times = {"read_raw": [], "read_out": [], "read_new": []}
        for _ in range(100):
            t = time.perf_counter()
            for ident, buf, n in calls:
                get(wp, ident, buf, n)
            times["read_raw"].append(time.perf_counter() - t)
            t = time.perf_counter()
            for b, x in zip(bodies, bufs):
                b.get_positions(out=x)
            times["read_out"].append(time.perf_counter() - t)
            t = time.perf_counter()
            frame = [b.positions for b in bodies]
            times["read_new"].append(time.perf_counter() - t)
        for k, v in times.items():
            r[k + "_median_ms"] = float(np.median(v)) * 1e3
            r[k + "_min_ms"] = float(np.min(v)) * 1e3
        # In this process: n steps in one call against n calls of step().
        t = time.perf_counter()
        for _ in range(a.steps):
            world.step()
        world.finish()
        r["step_calls_ms"] = (time.perf_counter() - t) * 1e3 / a.steps
        del frame
    with piola.World(backend=a.backend, contacts=a.contacts) as empty:
        empty.add_plane()
        cube = empty.add_tet_body(piola.make_box((1, 1, 1), 0.1), bench_material())
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
        # The binding's own cost per call: step(0) (no step: the Python side and the call),
        # and the read of the cube's 8 vertices by body.positions and by the bare C function.
        import timeit
        from piola._piola import ffi, lib
        r["step0_us"] = min(timeit.repeat(lambda: empty.step(0), number=20000, repeat=5)) / 2e-2
        x = np.empty((8, 3), np.float32)
        buf, ident, wp = ffi.from_buffer("float[]", x, require_writable=True), cube._id[0], \
            empty._ptr
        get = lib.piola_body_get_positions
        r["read8_raw_us"] = min(timeit.repeat(lambda: get(wp, ident, buf, 8), number=20000,
                                              repeat=5)) / 2e-2
        r["read8_py_us"] = min(timeit.repeat(lambda: cube.positions, number=20000,
                                             repeat=5)) / 2e-2
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
            ("empty_step_us", "one-cube world: one step() call, us")]

    def med(rows_, k):
        return float(np.median([x[k] for x in rows_]))

    print("Fresh processes, alternating (medians over rounds):")
    print("  %-40s %10s %10s %9s" % ("", "C", "Python", "Python/C"))
    for k, label in keys:
        c, p = med(rows["C"], k), med(rows["Python"], k)
        print("  %-40s %10.4f %10.4f %8.3fx" % (label, c, p, p / c))
    c, p = med(rows["C"], "empty_step_us"), med(rows["Python"], "empty_step_n_us")
    print("  %-40s %10.4f %10.4f %8.3fx" % ("one-cube world: step(20000), us/step", c, p, p / c))
    py = rows["Python"]
    print("In the Python process (medians over rounds):")
    print("  steps: world.step(%d) %.4f ms/step, %d x world.step() %.4f ms/step" % (
        a.steps, med(py, "step_ms"), a.steps, med(py, "step_calls_ms")))
    print("  one-cube world: world.step(20000) %.3f us/step, 20000 x world.step() %.3f us: "
          "%.3f us per Python call" % (med(py, "empty_step_n_us"), med(py, "empty_step_us"),
                                       med(py, "empty_step_us") - med(py, "empty_step_n_us")))
    print("  the binding's cost per call: world.step(0) %.3f us; a read of 8 vertices: "
          "body.positions %.3f us, the C function %.3f us" % (
              med(py, "step0_us"), med(py, "read8_py_us"), med(py, "read8_raw_us")))
    raw = med(py, "read_raw_min_ms")
    print("  read of all %d bodies, interleaved (min / median ms; C read in the C program: "
          "%.4f ms):" % (a.bodies, med(rows["C"], "read_only_ms")))
    for k, label in (("read_raw", "the C function into preallocated arrays"),
                     ("read_out", "body.get_positions(out=...)"),
                     ("read_new", "body.positions (a new array)")):
        mn = med(py, k + "_min_ms")
        print("    %-42s %8.4f / %8.4f   (+%.2f us per body)" % (
            label, mn, med(py, k + "_median_ms"), (mn - raw) * 1e3 / a.bodies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
