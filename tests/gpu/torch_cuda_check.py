"""The tern torch.distributed backend on CUDA tensors, for tests/gpu/run.sh (a GPU machine).

Spawns WORLD processes sharing GPU 0, each with init_process_group("tern") (file:// rendezvous), and checks every
collective the backend serves on CUDA tensors against a reference computed on the CPU from the same inputs:
all_reduce (sum, avg, max, premul_sum; float32, bfloat16, int64), broadcast, reduce, all_gather_into_tensor,
all_gather (list), reduce_scatter_tensor, all_to_all_single with uneven splits, batch_isend_irecv, barrier; that a
kernel enqueued after an async all_reduce on the same stream sees the result (stream order, no wait()); and one
DDP step of a small model whose parameters end equal on every rank and to the single-process reference.

    python3 tests/gpu/torch_cuda_check.py [WORLD=2]

Exit status: 0 all passed, 1 a check failed, 77 SKIPPED (no CUDA device or no tern.torch importable).
"""

import os
import sys
import tempfile
import traceback

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:  # pragma: no cover - the GPU image has torch
    print(f"SKIPPED: torch is not importable ({e})")
    sys.exit(77)


def reference_inputs(rank, n, dtype):
    g = torch.Generator().manual_seed(1000 + rank)
    if dtype.is_floating_point:
        return torch.randn(n, generator=g).to(dtype)
    return torch.randint(-1000, 1000, (n,), generator=g, dtype=dtype)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run_rank(rank, world, init_file, failures):
    try:
        import tern.torch  # noqa: F401  registers the backend

        torch.cuda.set_device(0)
        dist.init_process_group("tern", init_method=f"file://{init_file}", rank=rank, world_size=world)
        dev = torch.device("cuda", 0)
        for dtype in (torch.float32, torch.bfloat16, torch.int64):
            for n in (1, 7, 1023, (1 << 20) + 3):
                inputs = [reference_inputs(r, n, dtype) for r in range(world)]
                exact = torch.stack([x.double() for x in inputs]).sum(0)
                t = inputs[rank].to(dev)
                dist.all_reduce(t)
                tol = 0 if not dtype.is_floating_point else (1e-4 if dtype == torch.float32 else 5e-2) * world
                err = (t.cpu().double() - exact).abs().max().item() if n else 0
                check(err <= tol * max(1.0, exact.abs().max().item()), f"all_reduce sum {dtype} n={n}: error {err}")
                if dtype == torch.float32:
                    t = inputs[rank].to(dev)
                    dist.all_reduce(t, op=dist.ReduceOp.MAX)
                    want = torch.stack(inputs).max(0).values
                    check(torch.equal(t.cpu(), want), f"all_reduce max n={n}")
                    t = inputs[rank].to(dev)
                    dist.all_reduce(t, op=dist.ReduceOp.AVG)
                    check(torch.allclose(t.cpu().double(), exact / world, atol=1e-4), f"all_reduce avg n={n}")
        n = 4099
        x = [reference_inputs(r, n, torch.float32) for r in range(world)]
        # broadcast and reduce from the last rank
        root = world - 1
        t = x[rank].to(dev)
        dist.broadcast(t, src=root)
        check(torch.equal(t.cpu(), x[root]), "broadcast")
        t = x[rank].to(dev)
        dist.reduce(t, dst=root)
        if rank == root:
            check(torch.allclose(t.cpu(), torch.stack(x).sum(0), atol=1e-4), "reduce")
        # gathers and scatters
        out = torch.empty(n * world, device=dev)
        dist.all_gather_into_tensor(out, x[rank].to(dev))
        check(torch.equal(out.cpu(), torch.cat(x)), "all_gather_into_tensor")
        outs = [torch.empty(n, device=dev) for _ in range(world)]
        dist.all_gather(outs, x[rank].to(dev))
        check(all(torch.equal(o.cpu(), x[r]) for r, o in enumerate(outs)), "all_gather")
        big = [reference_inputs(r, n * world, torch.float32) for r in range(world)]
        rs = torch.empty(n, device=dev)
        dist.reduce_scatter_tensor(rs, big[rank].to(dev))
        want = torch.stack(big).sum(0)[rank * n:(rank + 1) * n]
        check(torch.allclose(rs.cpu(), want, atol=1e-4), "reduce_scatter_tensor")
        # all_to_all_single, uneven: rank r sends (r + q + 1) rows of 3 to rank q
        send_splits = [rank + q + 1 for q in range(world)]
        recv_splits = [q + rank + 1 for q in range(world)]
        src = torch.arange(sum(send_splits) * 3, dtype=torch.float32).reshape(-1, 3) + 1000 * rank
        dst = torch.empty(sum(recv_splits), 3, device=dev)
        dist.all_to_all_single(dst, src.to(dev), recv_splits, send_splits)
        pieces = []
        for q in range(world):
            qs = [q + p + 1 for p in range(world)]
            qsrc = torch.arange(sum(qs) * 3, dtype=torch.float32).reshape(-1, 3) + 1000 * q
            off = sum(qs[:rank])
            pieces.append(qsrc[off:off + qs[rank]])
        check(torch.equal(dst.cpu(), torch.cat(pieces)), "all_to_all_single with splits")
        # point to point in a batch: a ring
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        s = x[rank].to(dev)
        r = torch.empty(n, device=dev)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, nxt), dist.P2POp(dist.irecv, r, prv)])
        for q in reqs:
            q.wait()
        check(torch.equal(r.cpu(), x[prv]), "batch_isend_irecv")
        dist.barrier()
        # stream order: a kernel after an async all_reduce on the same stream, no wait()
        t = torch.ones(1 << 20, device=dev)
        work = dist.all_reduce(t, async_op=True)
        t.mul_(2)  # same stream: runs after the collective
        work.wait()
        check(torch.all(t == 2 * world).item(), "stream order after an async all_reduce")
        # DDP on CUDA: one step, parameters equal everywhere and to the reference
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(dev)
        ref = [p.detach().cpu().clone() for p in model.parameters()]
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        data = [torch.randn(8, 32, generator=torch.Generator().manual_seed(r)) for r in range(world)]
        loss = ddp(data[rank].to(dev)).square().mean()
        loss.backward()
        opt.step()
        # reference: the average of every rank's gradient, applied once
        refm = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        grads = [torch.zeros_like(p) for p in ref]
        for r in range(world):
            with torch.no_grad():
                for p, v in zip(refm.parameters(), ref):
                    p.copy_(v)
            refm.zero_grad()
            refm(data[r]).square().mean().backward()
            for g, p in zip(grads, refm.parameters()):
                g += p.grad / world
        for p, v, g in zip(model.parameters(), ref, grads):
            check(torch.allclose(p.detach().cpu(), v - 0.1 * g, atol=1e-5), "DDP step against the reference")
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = torch.empty(flat.numel() * world, device=dev)
        dist.all_gather_into_tensor(gathered, flat)
        check(all(torch.equal(gathered[r * flat.numel():(r + 1) * flat.numel()], flat) for r in range(world)),
              "DDP parameters identical on every rank")
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - every failure is reported by the parent
        failures.put(f"rank {rank}: {traceback.format_exc()}")


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 77
    try:
        import tern.torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        print(f"SKIPPED: tern.torch is not importable here ({e})")
        return 77
    ctx = mp.get_context("spawn")
    failures = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "rendezvous")
        procs = [ctx.Process(target=run_rank, args=(r, world, init_file, failures)) for r in range(world)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=600)
            if p.is_alive():
                p.kill()
                failures.put(f"a rank did not finish within 600 s (pid {p.pid})")
    bad = []
    while not failures.empty():
        bad.append(failures.get())
    bad += [f"rank {r} exited with status {p.exitcode}" for r, p in enumerate(procs) if p.exitcode not in (0, None)]
    if bad:
        print("FAILED: tern backend on CUDA tensors, world", world)
        for b in bad:
            print(b)
        return 1
    print(f"PASSED: tern backend on CUDA tensors, world {world}: every collective, stream order, a DDP step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
