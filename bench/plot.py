#!/usr/bin/env python3
"""Charts of Piola's results, drawn with matplotlib.

  python3 bench/plot.py validate RESULTS.json --out DIR   # from `piola validate --json RESULTS.json`
  python3 bench/plot.py validate CSV_DIR --out DIR        # from `piola validate --out CSV_DIR`
  python3 bench/plot.py bench BENCH.json [MORE.json ...] --out DIR
                                                          # from `piola bench --json BENCH.json`

`validate` writes DIR/<experiment>.png, one chart per experiment of `piola validate` (the
experiments of Bender et al. 2014, Figs. 2, 4-8 and 11), with the experiment's checks printed
under the plots. `bench` writes DIR/scaling.png (ms per step and tet solves per second against
the number of bodies) and DIR/stages.png (time per stage of the step).
"""
import argparse
import csv
import json
import math
import os
import sys


def need_matplotlib():
    """Imports pyplot for writing files, or exits with a message that says what to install."""
    try:
        import matplotlib
    except ImportError:
        sys.exit(
            "bench/plot.py: matplotlib is missing for %s.\n"
            "Install it (Debian/Ubuntu: apt-get install python3-matplotlib; elsewhere: "
            "python3 -m pip install matplotlib)\nor run the script with a Python that has it "
            "(e.g. /usr/bin/python3; `piola validate --plot` uses $PIOLA_PYTHON)." % sys.executable
        )
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---- validate ----------------------------------------------------------------------------


def load_validate(path):
    """Returns (checks, series, meta): checks as dicts; series as {(experiment, name): (columns,
    rows)} with columns[0] == "label"; meta as a dict (empty when read from CSV files)."""
    if os.path.isdir(path):
        series = {}
        checks = []
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if not name.endswith(".csv"):
                continue
            with open(full, newline="") as f:
                rows = list(csv.reader(f))
            if not rows:
                continue
            if name == "checks.csv":
                header = rows[0]
                for row in rows[1:]:
                    c = dict(zip(header, row))
                    for key in ("measured", "expected", "tolerance"):
                        c[key] = to_float(c.get(key))
                    c["passed"] = c.get("passed") == "true"
                    c["name"] = "%s/%s" % (c["experiment"], c["name"])
                    checks.append(c)
                continue
            experiment, _, series_name = name[: -len(".csv")].partition("_")
            data = [[row[0]] + [to_float(v) for v in row[1:]] for row in rows[1:]]
            series[(experiment, series_name)] = (rows[0], data)
        if not series and not checks:
            sys.exit("bench/plot.py: no CSV files of `piola validate --out` in %s" % path)
        return checks, series, {}
    with open(path) as f:
        doc = json.load(f)
    if "experiments" not in doc or "series" not in doc:
        sys.exit("bench/plot.py: %s is not the JSON of `piola validate --json`" % path)
    series = {}
    for s in doc["series"]:
        rows = [[r[0]] + [to_float(v) for v in r[1:]] for r in s["rows"]]
        series[(s["experiment"], s["name"])] = (s["columns"], rows)
    return doc["experiments"], series, doc


def to_float(v):
    if v is None or v == "":
        return math.nan
    try:
        return float(v)
    except ValueError:
        return math.nan


def curves(series, key, xcol, ycol):
    """{label: (xs, ys)} in row order for the columns named xcol and ycol."""
    if key not in series:
        return {}
    columns, rows = series[key]
    ix, iy = columns.index(xcol), columns.index(ycol)
    out = {}
    for row in rows:
        xs, ys = out.setdefault(row[0], ([], []))
        xs.append(row[ix])
        ys.append(row[iy])
    return out


def plot_curves(ax, data, style=None, **kwargs):
    for label, (xs, ys) in data.items():
        ax.plot(xs, ys, (style(label) if style else "-"), label=label, **kwargs)


def label_axes(ax, xlabel, ylabel, title):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def dashed_for(word):
    return lambda label: "--" if word in label else "-"


def chart_convergence(plt, series):
    fig, ax = plt.subplots(figsize=(8, 5))
    data = curves(series, ("convergence", "energy"), "iterations", "energy_ratio")
    plot_curves(ax, data, style=lambda l: "--" if "jacobi" in l else "-", marker=".")
    for level in (0.1, 0.01):
        ax.axhline(level, color="gray", linestyle=":", linewidth=0.8)
    ax.set_yscale("log")
    label_axes(ax, "iterations in the step", "elastic energy / energy after prediction",
               "Convergence within one quasi-static step (paper Fig. 4)")
    return fig


def chart_stiffness(plt, series):
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    data = curves(series, ("stiffness", "iterations"), "iterations", "strain_over_linear")
    plot_curves(a, data, marker="o")
    a.axhline(1.0, color="gray", linestyle=":", label="linear elasticity F/(E A)")
    a.set_yscale("log")
    label_axes(a, "iterations per substep", "strain / (F / (E A))",
               "Pulled beam: strain vs iterations (E = 1 MPa)")
    data = curves(series, ("stiffness", "youngs"), "youngs_pa", "strain")
    plot_curves(b, data, marker="o")
    lin = curves(series, ("stiffness", "youngs"), "youngs_pa", "linear_strain")
    if lin:
        xs, ys = next(iter(lin.values()))
        b.plot(xs, ys, "k:", label="linear elasticity F/(E A)")
    b.set_xscale("log")
    b.set_yscale("log")
    label_axes(b, "Young's modulus E (Pa)", "strain at rest",
               "Strain vs Young's modulus (same force)")
    fig.suptitle("Stiffness vs iterations and vs Young's modulus (paper Fig. 5)")
    return fig


def chart_poisson(plt, series):
    fig, ax = plt.subplots(figsize=(6, 5))
    data = curves(series, ("poisson", "ratio"), "material_nu", "measured_nu")
    markers = iter("os^dv")
    for label, (xs, ys) in data.items():
        ax.plot(xs, ys, next(markers, "o"), label=label, markersize=8, fillstyle="none")
    grid = [0.0, 0.5]
    ax.plot(grid, grid, "k:", label="measured = material nu")
    ax.fill_between(grid, [g - 0.03 for g in grid], [g + 0.03 for g in grid], color="gray",
                    alpha=0.15, label="tolerance 0.03")
    label_axes(ax, "material Poisson's ratio nu", "-lateral strain / axial strain",
               "Lateral contraction of a stretched beam (paper Fig. 7)")
    return fig


def chart_timestep(plt, series):
    data = curves(series, ("timestep", "sag"), "time_s", "sag_m")
    groups = []
    for label in data:
        if label.split()[0] not in groups:
            groups.append(label.split()[0])
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(6 * max(1, len(groups)), 5),
                             squeeze=False)
    for ax, group in zip(axes[0], groups):
        plot_curves(ax, {k: v for k, v in data.items() if k.split()[0] == group})
        label_axes(ax, "simulated time (s)", "sag of the free end (m)",
                   "%s: cantilever under gravity" % group.upper())
    fig.suptitle("Time-step independence: same substeps and iterations, dt = 10, 5, 2.5 ms")
    return fig


def chart_recovery(plt, series):
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    plot_curves(a, curves(series, ("recovery", "volume"), "time_s", "volume_ratio"),
                style=dashed_for("mirrored"))
    a.axhline(1.0, color="gray", linestyle=":")
    label_axes(a, "simulated time (s)", "volume / rest volume", "Volume")
    plot_curves(b, curves(series, ("recovery", "volume"), "time_s", "inverted_tets"),
                style=dashed_for("mirrored"))
    label_axes(b, "simulated time (s)", "inverted tets", "Inverted tets")
    fig.suptitle("Recovery from flattening and mirroring (paper Fig. 6)")
    return fig


def chart_plasticity(plt, series):
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    plot_curves(a, curves(series, ("plasticity", "twist"), "time_s", "twist_deg"))
    a.axvline(0.5, color="gray", linestyle=":")
    a.set_xlabel("simulated time (s)  (ramp to 90 deg, hold, release at 0.5 s)")
    a.set_ylabel("twist of the free end (deg)")
    a.set_title("Twist over time")
    a.legend(fontsize=7)
    key = ("plasticity", "residual")
    if key in series:
        columns, rows = series[key]
        i = columns.index("residual_deg")
        b.bar([r[0] for r in rows], [r[i] for r in rows], color="tab:blue")
        b.tick_params(axis="x", rotation=45)
        b.set_ylabel("residual twist after release (deg)")
        b.set_title("Residual twist (base: creep 2/s, yield 0.03, max 0.3)")
    fig.suptitle("Plasticity: a beam twisted and released (paper Fig. 8)")
    return fig


def chart_compression(plt, series):
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    data = curves(series, ("compression", "stress"), "stretch", "stress_over_e")
    plot_curves(a, data, style=dashed_for("no clamp"))
    a.axvline(1.0 / math.sqrt(3.0), color="gray", linestyle=":", label="1/sqrt(3)")
    a.axhline(0.0, color="black", linewidth=0.5)
    a.set_ylim(-2.0, 1.5)
    label_axes(a, "stretch s, F = diag(s, 1, 1)", "first Piola-Kirchhoff stress P11 / E",
               "Stress vs stretch (paper Fig. 2)")
    plot_curves(b, curves(series, ("compression", "cube"), "time_s", "volume_ratio"))
    b.set_ylim(0.0, 1.05)
    label_axes(b, "simulated time (s)", "volume / rest volume",
               "Cube pressed by 0.2 E on its top face (paper Fig. 11)")
    fig.suptitle("Material response under compression")
    return fig


def chart_generic(plt, series, experiment):
    keys = [k for k in series if k[0] == experiment]
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 5), squeeze=False)
    for ax, key in zip(axes[0], keys):
        columns, _ = series[key]
        plot_curves(ax, curves(series, key, columns[1], columns[-1]))
        label_axes(ax, columns[1], columns[-1], key[1])
    fig.suptitle(experiment)
    return fig


CHARTS = {
    "convergence": chart_convergence,
    "stiffness": chart_stiffness,
    "poisson": chart_poisson,
    "timestep": chart_timestep,
    "recovery": chart_recovery,
    "plasticity": chart_plasticity,
    "compression": chart_compression,
}


def check_lines(checks, experiment):
    lines = []
    for c in checks:
        if c.get("experiment") != experiment:
            continue
        name = c["name"].split("/", 1)[-1]
        m = c.get("measured")
        measured = "n/a" if m is None or (isinstance(m, float) and math.isnan(m)) else "%.4g" % m
        relation = c.get("relation", "near")
        if relation == "info":
            lines.append("info  %s: %s" % (name, measured))
            continue
        e, t = c.get("expected"), c.get("tolerance")
        expected = {"near": "%.4g +- %.3g" % (e, t) if t is not None else str(e),
                    "at_most": "<= %.4g" % e, "at_least": ">= %.4g" % e}.get(relation, str(e))
        lines.append("%s  %s: %s (expected %s)" % ("PASS" if c["passed"] else "FAIL", name,
                                                    measured, expected))
    return lines


def validate(path, out):
    checks, series, meta = load_validate(path)
    plt = need_matplotlib()
    os.makedirs(out, exist_ok=True)
    experiments = []
    for key in series:
        if key[0] not in experiments:
            experiments.append(key[0])
    written = []
    for experiment in experiments:
        chart = CHARTS.get(experiment)
        fig = chart(plt, series) if chart else chart_generic(plt, series, experiment)
        lines = check_lines(checks, experiment)
        where = meta.get("device")
        if where:
            lines.append("device: %s%s" % (where, " (quick)" if meta.get("quick") else ""))
        if lines:
            height = fig.get_size_inches()[1]
            extra = 0.125 * len(lines) + 0.15  # inches for the text under the plots
            fig.set_size_inches(fig.get_size_inches()[0], height + extra)
            fig.text(0.01, 0.05 / (height + extra), "\n".join(lines), fontsize=7,
                     family="monospace", va="bottom", ha="left")
            fig.tight_layout(rect=(0, extra / (height + extra), 1, 1))
        else:
            fig.tight_layout()
        name = os.path.join(out, experiment + ".png")
        fig.savefig(name, dpi=110)
        plt.close(fig)
        written.append(name)
    for name in written:
        print("wrote %s" % name)
    failed = [c["name"] for c in checks if not c.get("passed", True)]
    if failed:
        print("failed checks: %s" % ", ".join(failed))


# ---- bench ------------------------------------------------------------------------------


def load_bench(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        if "runs" not in doc:
            sys.exit("bench/plot.py: %s is not the JSON of `piola bench --json`" % path)
        for run in doc["runs"]:
            run = dict(run)
            run.setdefault("paper_ms_per_step", doc.get("paper_ms_per_step"))
            runs.append(run)
    if not runs:
        sys.exit("bench/plot.py: no runs in %s" % ", ".join(paths))
    return runs


def bench(paths, out):
    """scaling.png: median ms per step and tet solves per second vs bodies, one line per
    backend and device; stages.png: stacked time per stage of each run."""
    runs = load_bench(paths)
    plt = need_matplotlib()
    os.makedirs(out, exist_ok=True)
    groups = {}
    for run in runs:
        key = "%s: %s" % (run.get("backend", "?"), run.get("device", "?"))
        groups.setdefault(key, []).append(run)

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["bodies"])
        xs = [r["bodies"] for r in rs]
        a.plot(xs, [r["ms_per_step"]["median"] for r in rs], "o-", label=key)
        b.plot(xs, [r["tet_solves_per_second"] for r in rs], "o-", label=key)
    paper = next((r.get("paper_ms_per_step") for r in runs if r.get("paper_ms_per_step")), None)
    if paper:
        a.plot([100], [paper], "k*", markersize=12,
               label="paper: 100 Armadillos, two 6-core Xeon X5650 (their hardware)")
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("bodies")
        ax.legend(fontsize=7)
    a.set_ylabel("ms per step (median)")
    a.set_title("Time per step")
    b.set_ylabel("tet solves per second")
    b.set_title("Throughput")
    fig.tight_layout()
    scaling = os.path.join(out, "scaling.png")
    fig.savefig(scaling, dpi=110)
    plt.close(fig)

    # Stages: only runs that measured them (the CPU reference always, OpenCL with --profile),
    # each as shares of its own total, which the label gives (totals differ by orders of
    # magnitude between devices).
    timed = [r for r in runs if sum(r.get("stage_ms", {}).values()) > 0.0]
    if not timed:
        print("wrote %s\n(no stage times in the input: run piola bench --profile for stages.png)"
              % scaling)
        return
    stages = []
    for run in timed:
        for name in run.get("stage_ms", {}):
            if name not in stages:
                stages.append(name)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(timed) + 3), 5))
    totals = [sum(r["stage_ms"].values()) for r in timed]
    labels = ["%s x%d\n%s\n%.3g ms" % (r.get("scene", ""), r["bodies"],
                                        r.get("device", r.get("backend", "?"))[:28], total)
              for r, total in zip(timed, totals)]
    bottom = [0.0] * len(timed)
    for name in stages:
        values = [100.0 * r["stage_ms"].get(name, 0.0) / total for r, total in zip(timed, totals)]
        ax.bar(range(len(timed)), values, bottom=bottom, label=name)
        bottom = [x + y for x, y in zip(bottom, values)]
    ax.set_xticks(range(len(timed)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("% of the step")
    ax.set_title("Time per stage (CPU reference: host time; OpenCL: device time with --profile)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    stage_path = os.path.join(out, "stages.png")
    fig.savefig(stage_path, dpi=110)
    plt.close(fig)
    print("wrote %s\nwrote %s" % (scaling, stage_path))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Charts of Piola's results.")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="charts of `piola validate` (JSON file or CSV folder)")
    v.add_argument("input", help="RESULTS.json of --json, or the folder of --out")
    v.add_argument("--out", default=".", help="folder for the PNG files (default: .)")
    b = sub.add_parser("bench", help="scaling.png and stages.png of `piola bench --json`")
    b.add_argument("inputs", nargs="+", help="JSON files of `piola bench --json`")
    b.add_argument("--out", default=".", help="folder for the PNG files (default: .)")
    args = parser.parse_args(argv)
    if args.command == "validate":
        validate(args.input, args.out)
    else:
        bench(args.inputs, args.out)


if __name__ == "__main__":
    main()
