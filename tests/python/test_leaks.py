"""No leak over 1000 worlds created and closed: Python's allocations (tracemalloc) and the
process's resident memory stay bounded. Each world holds a body, a collider, an attachment
and a render mesh, steps once and is read, so every kind of handle is made and dropped."""
import contextlib
import gc
import logging
import tracemalloc

import numpy as np
import pytest

import piola


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def one_world(mesh, backend, close):
    w = piola.World(backend=backend)
    b = w.add_tet_body(mesh, piola.Material(density=500.0))
    w.add_plane()
    w.add_collider("sphere", center=(0, -1, 0), radius=0.5)
    w.add_attachment(b, 0, (0, 1, 0), 1e-3)
    skin = b.attach_render_mesh(b.positions[b.surface_vertices])
    w.step(2)
    assert np.isfinite(b.positions).all() and skin.positions.shape[1] == 3
    assert w.stats.step_count == 2
    try:
        b.positions = np.zeros((1, 3))  # a failure: the error path's objects too
    except piola.CountMismatchError:
        pass
    if close == "with":
        with w:
            pass
    elif close == "close":
        w.close()
    # "drop": the world goes with its last reference (World.__del__)


class Counter(logging.Handler):
    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        self.count += 1


@contextlib.contextmanager
def counted_log():
    """The library's messages go to a counter only while measuring: pytest keeps every record
    it captures (its handlers sit on the root logger and on "piola", added at the start of each
    test phase), which would look like a leak."""
    log = logging.getLogger("piola")
    counter, saved = Counter(), (log.handlers, log.propagate)
    log.handlers, log.propagate = [counter], False
    try:
        yield counter
    finally:
        log.handlers, log.propagate = saved


def measure(mesh, backend, count, close):
    """(growth of Python's traced allocations, growth of the resident set) over `count` worlds,
    after a warm-up; checks that each world's error message reached logging."""
    with counted_log() as log:
        for _ in range(20):  # warm-up: caches, logging, numpy's pools
            one_world(mesh, backend, close)
        gc.collect()
        tracemalloc.start()
        traced0 = tracemalloc.get_traced_memory()[0]
        rss0 = rss_bytes()
        for _ in range(count):
            one_world(mesh, backend, close)
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - traced0
        tracemalloc.stop()
    assert log.count == count + 20  # one error message per world went through logging
    return traced, rss_bytes() - rss0


@pytest.mark.parametrize("close", ["with", "close", "drop"])
def test_1000_worlds_do_not_leak(close):
    mesh = piola.make_box((3, 3, 3), 0.3)
    traced, rss = measure(mesh, "cpu", 1000, close)
    # a leaked world (its def, body arrays, handles) is several kB: 1000 of them would be MBs
    assert traced < 64 * 1024, "Python allocations grew by %d bytes" % traced
    assert rss < 4 * 1024 * 1024, "resident memory grew by %d bytes" % rss


def test_opencl_worlds_do_not_leak(opencl):
    mesh = piola.make_box((3, 3, 3), 0.3)
    traced, rss = measure(mesh, "opencl", 30, "with")
    assert traced < 64 * 1024, "Python allocations grew by %d bytes" % traced
    # device buffers, kernels and queues of 30 worlds would be far more than this
    assert rss < 16 * 1024 * 1024, "resident memory grew by %d bytes" % rss
