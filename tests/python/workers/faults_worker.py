"""One rank of a fault scenario on the tern backend; prints a JSON report of what it saw.

  kill       ranks keep three async allreduces pending in a loop; the test SIGKILLs one of them; on the others every
             pending Work must fail (none hangs, none succeeds) with an error naming what happened, and the report
             gives the wall-clock time of the first failure
  abort      rank 0 has one allreduce inside the communicator (rank 1 joins late) and two queued, and aborts the
             group from its main thread: all three Works fail at once; rank 1's first allreduce may still complete
             (rank 0 had put in its part), its second must fail
  mismatch   rank 0 allreduces 1000 elements, the others 1200: every rank must get an error naming both sizes
  worldsize  rank 0 believes the world is one larger than it is: init must fail within the timeout, not hang
  slowpeer   rank 1 joins an allreduce 2 s late: rank 0's Work is not completed, wait(timeout=0.2 s) raises, and
             a later wait() returns the right sum
"""

import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import tern.torch  # noqa: F401

scenario = sys.argv[1]
rank = int(os.environ["RANK"])
report = {"rank": rank, "scenario": scenario}
start = time.monotonic()
try:
    if scenario == "worldsize":
        world = int(os.environ["WORLD_SIZE"])
        # The store is made by hand so that torch's own rendezvous does not wait for the missing rank first.
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, rank == 0,
                              timeout=datetime.timedelta(seconds=20), wait_for_workers=False)
        claimed = world + 1 if rank == 0 else world
        dist.init_process_group("tern", store=store, rank=rank, world_size=claimed,
                                timeout=datetime.timedelta(seconds=float(os.environ.get("FAULT_TIMEOUT", "10"))))
        dist.barrier()
        report["error"] = None
    else:
        dist.init_process_group("tern")
        dist.barrier()
        open(os.path.join(os.environ["TERN_TEST_READY_DIR"], str(rank)), "w").close()
        if scenario == "kill":
            ts = [torch.ones(1 << 18) for _ in range(3)]
            deadline = time.monotonic() + 120
            report["error"] = None
            while time.monotonic() < deadline and report["error"] is None:
                works = [dist.all_reduce(t, async_op=True) for t in ts]
                errors, after_failure = [], 0
                for w in works:
                    try:
                        w.wait()
                        after_failure += bool(errors)  # a Work behind a failed one must not succeed
                    except Exception as e:
                        errors.append(f"{type(e).__name__}: {e}")
                if errors:
                    report["error"] = errors[0]
                    report["pending_failed"] = len(errors)
                    report["succeeded_after_failure"] = after_failure
                    report["all_failed_at"] = time.time()
                for t in ts:
                    t.fill_(1)
        elif scenario == "abort":
            if rank == 0:
                works = [dist.all_reduce(torch.ones(1000), async_op=True) for _ in range(3)]
                time.sleep(0.5)  # the first is inside the communicator by now, waiting for rank 1
                aborted_at = time.monotonic()
                dist.group.WORLD.abort()
                errors = []
                for w in works:
                    try:
                        w.wait()
                    except Exception as e:
                        errors.append(f"{type(e).__name__}: {e}")
                report["abort_seconds"] = time.monotonic() - aborted_at
                report["failed"] = len(errors)
                report["error"] = errors[0] if errors else None
                report["errors"] = errors
            else:
                time.sleep(1.5)
                # The first may still complete (rank 0 had put in its part before it aborted); the next cannot.
                report["calls"] = 0
                for _ in range(2):
                    dist.all_reduce(torch.ones(1000))
                    report["calls"] += 1
                report["error"] = None
        elif scenario == "slowpeer":
            t = torch.full((1000,), float(rank + 1))
            if rank == 1:
                time.sleep(2)
                dist.all_reduce(t)
            else:
                w = dist.all_reduce(t, async_op=True)
                report["completed_early"] = w.is_completed()
                try:
                    w.wait(timeout=datetime.timedelta(milliseconds=200))
                    report["short_wait"] = "returned"
                except Exception as e:
                    report["short_wait"] = f"{type(e).__name__}: {e}"
                w.wait()
                report["completed_late"] = w.is_completed()
            report["sum_ok"] = bool((t == 3.0).all())
            report["error"] = None
        elif scenario == "mismatch":
            t = torch.ones(1000 if rank == 0 else 1200)
            dist.all_reduce(t)
            report["error"] = None
except Exception as e:  # the finding
    report["error"] = f"{type(e).__name__}: {e}"
report["seconds"] = time.monotonic() - start
print(json.dumps(report), flush=True)
if scenario == "mismatch":
    time.sleep(3)  # stay connected, so that every rank meets the mismatch itself rather than a closed peer
os._exit(0)  # no teardown: a failed group must not turn into a hang at exit either
