#!/usr/bin/env python3
"""Plot busbw against message size from perf JSON files (the -J output of tern's *_perf binaries).

    perf/plot.py -o out.png [--title T] [--in-place] [--min-size 1K] [--max-size 64M] [--no-predicted]
                 RUN.json [LABEL=RUN.json ...]

Each input file is one run and becomes one solid line (busbw in GB/s, log2 size axis). Where the records carry the
model's prediction (predicted_us > 0) the run also gets a dashed line of the same colour: the busbw the measured
run would have had at the predicted time, busbw * time_us / predicted_us, which applies the same bus factor as the
measurement. A line is labelled from the file (binary/collective, transport, nodes when > 1, forced or chosen
algorithm, codec) unless the argument is LABEL=path.

Files are read leniently: every top-level field except "results" is optional, and a bare list of records (what
gloo_allreduce and mpi_allreduce write with -J: size, time_us, busbw at the top of each record) is read as an
out-of-place run. A missing or malformed file exits 2 with one line on stderr.

Needs matplotlib (Debian's python3-matplotlib is installed for /usr/bin/python3); run it as
/usr/bin/python3 perf/plot.py where the python3 on PATH lacks it.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys

PROG = "plot.py"
SYSTEM_PYTHON = "/usr/bin/python3"
# Set on the re-executed child so a /usr/bin/python3 without matplotlib cannot loop.
REEXEC_GUARD = "TERN_PLOT_REEXECED"


class InputError(Exception):
    """A missing or malformed input file; reported as one line, exit code 2."""


def parse_size(text):
    """'64M' -> 67108864. Suffixes are powers of 1024, as in the perf binaries' -b/-e."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (expected e.g. 4096, 1K, 64M, 1G)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def human_size(n):
    """67108864 -> '64M', 1536 -> '1.5K': the labels of the size axis."""
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:g}{suffix}"
    return f"{n:g}"


def split_run_arg(arg):
    """'LABEL=path' -> (LABEL, path); a plain path -> (None, path). An existing file named with '=' stays a path."""
    if "=" in arg and not os.path.exists(arg):
        label, path = arg.split("=", 1)
        if label and path:
            return label, path
    return None, arg


def number(value):
    """The value as a float, or None when it is not a finite number (JSON null, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def load_run(path):
    """Reads one perf JSON file into (meta, records); raises InputError on anything unusable."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None

    if isinstance(doc, list):  # the drivers' flat list: each record holds one (out-of-place) measurement
        meta, records = {}, [dict(r, out_of_place=r) if isinstance(r, dict) else r for r in doc]
    elif isinstance(doc, dict) and isinstance(doc.get("results"), list):
        meta, records = doc, doc["results"]
    else:
        raise InputError(f"{path}: expected an object with a \"results\" list (perf -J output)")

    for i, r in enumerate(records):
        if not isinstance(r, dict) or number(r.get("size")) is None:
            raise InputError(f"{path}: results[{i}] is not a record with a numeric \"size\"")
    return meta, records


def run_label(meta, records, path):
    """'all_reduce_perf/allreduce, tcp, rd+ring, sign' from the file's own fields; the file name when it has none."""
    parts = []
    name = "/".join(str(meta[k]) for k in ("binary", "collective") if meta.get(k))
    if name:
        parts.append(name)
    if meta.get("transport"):
        parts.append(str(meta["transport"]))
    nodes = number(meta.get("nodes"))
    if nodes is not None and nodes > 1:  # tells a cluster run from a one-host run over the same transport
        parts.append(f"{nodes:g} nodes")
    if meta.get("forced_algo"):
        parts.append(str(meta["forced_algo"]))
    else:
        # The chosen algorithm changes with size; list each once, in size order.
        algos = []
        for r in sorted(records, key=lambda r: number(r["size"])):
            a = r.get("algorithm")
            if a and a not in algos:
                algos.append(str(a))
        if algos:
            parts.append("+".join(algos))
    if meta.get("compress"):
        parts.append(str(meta["compress"]))
    return ", ".join(parts) if parts else os.path.splitext(os.path.basename(path))[0]


def run_points(records, section, min_size, max_size):
    """Measured and predicted busbw per size: two sorted lists of (size, GB/s).

    A size that appears more than once (a file merged from repeats, or -o all) keeps its median.
    """
    measured, predicted = {}, {}
    for r in records:
        size = number(r["size"])
        m = r.get(section)
        if size is None or size <= 0 or not isinstance(m, dict):
            continue
        if (min_size is not None and size < min_size) or (max_size is not None and size > max_size):
            continue
        busbw = number(m.get("busbw"))
        if busbw is None:
            continue
        measured.setdefault(size, []).append(busbw)
        time_us, pred_us = number(m.get("time_us")), number(r.get("predicted_us"))
        if time_us is not None and time_us > 0 and pred_us is not None and pred_us > 0:
            predicted.setdefault(size, []).append(busbw * time_us / pred_us)

    def median_points(d):
        return [(s, statistics.median(v)) for s, v in sorted(d.items())]

    return median_points(measured), median_points(predicted)


def reexec_if_no_matplotlib():
    """Re-runs the script under /usr/bin/python3 when this interpreter cannot import matplotlib.

    The python3 first on PATH (a pyenv or venv one) often lacks matplotlib while the system one has it. Done before
    anything is read or printed, so the child starts from scratch; the guard variable stops a loop.
    """
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None or os.environ.get(REEXEC_GUARD):
        return
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON):
        os.environ[REEXEC_GUARD] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def import_pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"{PROG}: error: matplotlib is not available to {sys.executable} ({e})", file=sys.stderr)
        sys.exit(1)
    return plt


def size_ticks(lo, hi):
    """Power-of-two ticks covering [lo, hi], thinned to at most ~12 so the labels do not collide."""
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    step = max(1, math.ceil((last - first + 1) / 12))
    return [2**e for e in range(first, last + 1, step)]


def plot(runs, args):
    """Draws every run into args.output; runs are (label, measured, predicted) with point lists."""
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(10, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    any_predicted = False
    for i, (label, measured, predicted) in enumerate(runs):
        color = colors[i % len(colors)]
        xs, ys = zip(*measured)
        ax.plot(xs, ys, "-o", color=color, markersize=3.5, linewidth=1.8, label=label)
        if predicted and not args.no_predicted:
            any_predicted = True
            xs, ys = zip(*predicted)
            ax.plot(xs, ys, "--", color=color, linewidth=1.2, alpha=0.85)
    if any_predicted:
        # One legend entry explains every dashed line instead of doubling the legend.
        ax.plot([], [], "--", color="0.4", label="model prediction (dashed, same colour)")

    sizes = [s for _, measured, _ in runs for s, _ in measured]
    ax.set_xscale("log", base=2)
    ticks = size_ticks(min(sizes), max(sizes))
    ax.set_xticks(ticks)
    ax.set_xticklabels([human_size(t) for t in ticks])
    ax.minorticks_off()
    if min(sizes) == max(sizes):  # a single size: give the point some room
        ax.set_xlim(min(sizes) / 2, max(sizes) * 2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(args.title or f"busbw vs message size ({'in-place' if args.in_place else 'out-of-place'})")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=110)
    except OSError as e:
        print(f"{PROG}: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
        sys.exit(1)
    plt.close(fig)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Plot busbw (GB/s) vs message size from perf JSON files (the perf binaries' -J output), "
        "with the model's prediction dashed.",
    )
    p.add_argument("runs", nargs="+", metavar="[LABEL=]FILE", help="perf JSON file; LABEL= overrides its legend label")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="PNG to write")
    p.add_argument("--title", help="plot title")
    p.add_argument("--in-place", action="store_true", help="plot the in-place measurements (default out-of-place)")
    p.add_argument("--min-size", type=parse_size, metavar="SIZE", help="leave out smaller sizes (K/M/G suffixes)")
    p.add_argument("--max-size", type=parse_size, metavar="SIZE", help="leave out larger sizes (K/M/G suffixes)")
    p.add_argument("--no-predicted", action="store_true", help="do not draw the model's predictions")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    section = "in_place" if args.in_place else "out_of_place"
    runs = []
    try:
        for arg in args.runs:
            label, path = split_run_arg(arg)
            meta, records = load_run(path)
            measured, predicted = run_points(records, section, args.min_size, args.max_size)
            if not measured:
                # Not an error: e.g. an MPI run has no in-place half, or the size window excludes a run.
                print(f"{PROG}: warning: {path}: no {section} points in the size range; left out", file=sys.stderr)
                continue
            runs.append((label or run_label(meta, records, path), measured, predicted))
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if not runs:
        print(f"{PROG}: error: nothing to plot", file=sys.stderr)
        return 1
    plot(runs, args)
    return 0


if __name__ == "__main__":
    reexec_if_no_matplotlib()
    sys.exit(main(sys.argv[1:]))
