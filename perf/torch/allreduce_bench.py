"""torch.distributed.all_reduce on the tern backend against the gloo backend, in one run (issue 15's benchmark).

Run under torchrun (perf/compare_torch.sh does): every rank holds a tern process group (the default group) and a
gloo group over the same ranks, so both backends run in the same processes, on the same tensors, with the same
threads and binding. For every size the two backends alternate which goes first, from size to size and from repeat
to repeat; each repeat times ITERS blocking all_reduce calls (float32 sum, in place: torch's all_reduce is in place
on every backend) after WARMUP untimed ones, and the slowest rank's time counts. The table gives the median of the
repeats with its spread ((slowest - fastest) / median); busbw = 2 (n - 1) / n x bytes / time, as nccl-tests.
Rank 0 prints the table and, with --json, writes every repeat. --coll all_to_all_single times the MoE exchange
instead (out of place, the size being each rank's input, busbw = (n - 1) / n x bytes / time).
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

import tern.torch  # noqa: F401


def parse_bytes(s: str) -> int:
    s = s.strip()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1].lower(), 1)
    return int(s[:-1] if mult > 1 else s) * mult


def sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def collective(name, t, out, group):
    if name == "all_reduce":
        dist.all_reduce(t, group=group)
    else:
        dist.all_to_all_single(out, t, group=group)


def timed(name, group, t, out, iters, warmup, gloo):
    for _ in range(warmup):
        collective(name, t, out, group)
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for _ in range(iters):
        collective(name, t, out, group)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters])
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=gloo)  # the slowest rank's time
    return elapsed.item() * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", "--minbytes", default="8")
    p.add_argument("-e", "--maxbytes", default="256M")
    p.add_argument("-f", "--factor", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--budget", default="512M", help="bytes each repeat of a size moves (sets the iterations)")
    p.add_argument("--min-iters", type=int, default=5)
    p.add_argument("--max-iters", type=int, default=2000)
    p.add_argument("--json", default=None)
    p.add_argument("--coll", choices=["all_reduce", "all_to_all_single"], default="all_reduce")
    a = p.parse_args()

    dist.init_process_group("tern")
    gloo = dist.new_group(backend="gloo")
    groups = {"tern": dist.group.WORLD, "gloo": gloo}
    rank, n = dist.get_rank(), dist.get_world_size()
    rows, runs = [], []
    for k, size in enumerate(sizes(parse_bytes(a.minbytes), parse_bytes(a.maxbytes), a.factor)):
        count = max(1, size // 4)
        if a.coll == "all_to_all_single":
            count = max(n, count // n * n)  # every rank gets an equal block
        iters = max(a.min_iters, min(a.max_iters, parse_bytes(a.budget) // (count * 4)))
        warmup = max(2, min(20, iters // 5))
        t = torch.zeros(count)
        out = torch.zeros(count) if a.coll == "all_to_all_single" else None
        bus = 2 * (n - 1) / n if a.coll == "all_reduce" else (n - 1) / n
        times = {"tern": [], "gloo": []}
        for rep in range(a.repeats):
            order = ("tern", "gloo") if (k + rep) % 2 == 0 else ("gloo", "tern")
            for name in order:
                us = timed(a.coll, groups[name], t, out, iters, warmup, gloo)
                times[name].append(us)
                runs.append({"bytes": count * 4, "backend": name, "repeat": rep, "first": name == order[0],
                             "iters": iters, "time_us": us})
        row = {"bytes": count * 4, "iters": iters}
        for name in ("tern", "gloo"):
            med = statistics.median(times[name])
            row[name] = {"time_us": med, "busbw": bus * count * 4 / med / 1e3,
                         "spread": (max(times[name]) - min(times[name])) / med}
        row["ratio"] = row["gloo"]["time_us"] / row["tern"]["time_us"]
        rows.append(row)
        if rank == 0:
            print(f"{row['bytes']:>11} {iters:>6} | tern {row['tern']['time_us']:>10.1f} us "
                  f"{row['tern']['busbw']:>7.3f} GB/s {row['tern']['spread']:>5.0%} | gloo {row['gloo']['time_us']:>10.1f}"
                  f" us {row['gloo']['busbw']:>7.3f} GB/s {row['gloo']['spread']:>5.0%} | gloo/tern time "
                  f"{row['ratio']:.2f}x", flush=True)
    if rank == 0 and a.json:
        with open(a.json, "w") as f:
            json.dump({"ranks": n, "coll": a.coll, "repeats": a.repeats, "rows": rows, "runs": runs}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
