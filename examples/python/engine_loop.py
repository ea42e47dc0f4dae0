"""Piola in an engine's frame loop (the Python twin of examples/engine_loop.c): three soft
creatures on the ground, a kinematic paddle (a box collider with a velocity) sweeping through
them, and a grabbed vertex: an attachment whose target follows the input every frame.

Interactive (matplotlib window, side view): press the mouse near a vertex to grab it, drag to
pull it, release to let go. Headless with --frames N (or without a display or matplotlib): the
head of the last creature is dragged around a circle for N frames of 1/60 s, printing every 30
frames where things are and how long the frame waited for the device.

    python examples/python/engine_loop.py                 # a window
    python examples/python/engine_loop.py --frames 120    # headless
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import piola


class Game:
    def __init__(self, backend):
        self.world = piola.World(backend=backend, dt=1.0 / 60.0, substeps=4)
        mesh = piola.make_creature(0.6)
        rubber = piola.Material(model="neohookean", youngs_modulus=3.0e5, density=1000.0)
        self.bodies = [self.world.add_tet_body(mesh, rubber, translation=(-0.8 + 0.8 * i, 0.05, 0))
                       for i in range(3)]
        self.world.add_plane((0, 1, 0), 0.0, 0.6)
        self.paddle = self.world.add_collider("box", center=(0, 0, 0),
                                              half_extents=(0.05, 0.3, 0.6))
        self.paddle.set_pose((-1.6, 0.3, 0.0), linear_velocity=(1.0, 0.0, 0.0))
        self.grab = None
        self.frame = 0
        self.waited = 0.0

    def press(self, x, y):
        """Grabs the vertex nearest to (x, y) in the side view, if one is within 10 cm."""
        best = None
        for body in self.bodies:
            p = body.positions
            d = np.hypot(p[:, 0] - x, p[:, 1] - y)
            i = int(np.argmin(d))
            if d[i] < 0.1 and (best is None or d[i] < best[0]):
                best = (float(d[i]), body, i, float(p[i, 2]))
        if best is not None:
            _, body, i, z = best
            self.grab_depth = z
            self.grab = self.world.add_attachment(body, i, (x, y, z), 1e-4)

    def drag(self, x, y):
        if self.grab is not None:
            self.grab.set_target((x, y, self.grab_depth))

    def release(self):
        if self.grab is not None:
            self.grab.remove()
            self.grab = None

    def step(self):
        """One frame: step (queued on OpenCL), the frame's own work, then the reads to draw."""
        self.frame += 1
        if self.frame == 180:  # the paddle stops after 3 s
            self.paddle.set_pose(self.paddle.pose["position"])
        self.world.step()
        t = time.perf_counter()
        frame = [b.positions for b in self.bodies]
        self.waited += time.perf_counter() - t
        return frame

    def report(self, frame):
        s = self.world.stats
        print("frame %4d: lowest y %.3f m, highest y %.3f m, paddle x %.2f m, %d contacts, "
              "waited %.2f ms/frame" % (
                  self.frame, min(float(p[:, 1].min()) for p in frame),
                  max(float(p[:, 1].max()) for p in frame), self.paddle.pose["position"][0],
                  s.contact_count, self.waited * 1e3 / self.frame))


def headless(game, frames):
    last = game.bodies[2]
    p = last.positions
    top = int(np.argmax(p[:, 1]))
    centre = (float(p[top, 0]), float(p[top, 1]) + 0.3, float(p[top, 2]))
    game.grab = game.world.add_attachment(last, top, centre, 1e-4)
    for f in range(1, frames + 1):
        a = 2.0 * math.pi * f / 120.0
        game.grab.set_target((centre[0] + 0.3 * math.cos(a), centre[1],
                              centre[2] + 0.3 * math.sin(a)))
        frame = game.step()
        if f % 30 == 0 or f == frames:
            game.report(frame)
    assert all(np.isfinite(p).all() for p in frame)


def interactive(game, plt):
    from matplotlib.animation import FuncAnimation
    fig, ax = plt.subplots(figsize=(9, 5))
    colours = ["tab:blue", "tab:orange", "tab:green"]
    dots = [ax.plot([], [], ".", ms=1.5, color=c)[0] for c in colours]
    paddle, = ax.plot([], [], "k-", lw=4)
    ax.axhline(0, color="0.5")
    ax.set_xlim(-1.8, 1.8)
    ax.set_ylim(-0.1, 1.6)
    ax.set_aspect("equal")
    ax.set_title("press near a vertex and drag it")
    state = {"down": False}

    def on_press(e):
        if e.inaxes is ax and e.xdata is not None:
            game.press(e.xdata, e.ydata)
            state["down"] = True

    def on_move(e):
        if state["down"] and e.inaxes is ax and e.xdata is not None:
            game.drag(e.xdata, e.ydata)

    def on_release(e):
        state["down"] = False
        game.release()

    fig.canvas.mpl_connect("button_press_event", on_press)
    fig.canvas.mpl_connect("motion_notify_event", on_move)
    fig.canvas.mpl_connect("button_release_event", on_release)

    def update(_):
        frame = game.step()
        for d, p in zip(dots, frame):
            d.set_data(p[:, 0], p[:, 1])
        x = game.paddle.pose["position"][0]
        paddle.set_data([x, x], [0.0, 0.6])
        return dots + [paddle]

    anim = FuncAnimation(fig, update, interval=1000 / 60, blit=True, cache_frame_data=False)
    plt.show()
    del anim


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=None, help="run headless for N frames")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "opencl"])
    a = ap.parse_args(argv)
    game = Game(a.backend)
    print("backend:", game.world.stats.device_name)
    plt = None
    if a.frames is None:
        try:
            import matplotlib  # noqa: F401 (is it installed?)
            if not os.environ.get("DISPLAY") and sys.platform.startswith("linux"):
                raise ImportError("no display")
            import matplotlib.pyplot as plt
        except ImportError as e:
            print("no interactive window (%s): running 120 frames headless" % e)
    with game.world:
        if plt is None:
            headless(game, a.frames or 120)
        else:
            interactive(game, plt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
