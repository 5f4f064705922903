"""One rank joining a tern process group through one of torch's init methods, then an allreduce and a subgroup.

  env      init_process_group("tern") from MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE (what torchrun sets)
  file     init_method="file://<path>" (argv[2])
  tcp      init_method="tcp://MASTER_ADDR:MASTER_PORT"
  devices  the backend string "cpu:tern"
"""

import json
import os
import sys

import torch
import torch.distributed as dist

import tern.torch  # noqa: F401

how = sys.argv[1]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if how == "file":
    dist.init_process_group("tern", init_method=f"file://{sys.argv[2]}", rank=rank, world_size=world)
elif how == "tcp":
    addr = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group("tern", init_method=addr, rank=rank, world_size=world)
elif how == "devices":
    dist.init_process_group("cpu:tern")
else:
    dist.init_process_group("tern")
t = torch.full((5,), float(rank + 1))
dist.all_reduce(t)
sub = dist.new_group([0], backend="tern")
s = torch.full((2,), float(rank))
if rank == 0:
    dist.all_reduce(s, group=sub)
report = json.dumps({"rank": rank, "backend": dist.get_backend(), "sum": t.tolist(), "sub": s.tolist()})
if os.environ.get("TERN_TEST_REPORT_DIR"):  # under torchrun the ranks share one stdout, so lines may interleave
    with open(os.path.join(os.environ["TERN_TEST_REPORT_DIR"], f"{rank}.json"), "w") as f:
        f.write(report)
else:
    print(report, flush=True)
dist.destroy_process_group()
