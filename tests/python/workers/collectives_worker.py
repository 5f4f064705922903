"""One rank of the collectives matrix on the tern backend.

Every collective torch.distributed offers on CPU runs on the tern process group, for every dtype tern carries (plus
bool and complex), every reduce op, sizes 0/1/7/1023 (2^20+3 for float32 on the main paths), blocking and
async_op=True, in and out of place, contiguous and not, on the whole world and on subgroups. Each result is checked
against an independent reference computed here from every rank's inputs (float64 / Python integers, in rank
order; every rank can compute every rank's input) and, where Gloo supports the case, against the Gloo backend's
result on the same inputs. Inputs are small integers (sums and products exact in every dtype), so results must be
equal, except averages of floats, which may differ from the exact quotient by one rounding.

Prints one JSON line {"checked": N, "failures": [...], "gloo_compared": M}.
"""

import json
import sys
import traceback

import torch
import torch.distributed as dist

import tern.torch  # noqa: F401  (registers the backend)

R = dist.ReduceOp
SIZES = [0, 1, 7, 1023]
BIG = 2**20 + 3
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
          torch.int64, torch.bool, torch.complex64]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}

failures = []
checked = 0
gloo_compared = 0


def fail(what, detail):
    failures.append(f"rank {RANK}: {what}: {detail}")


def value(rank, i, dtype, salt=0):
    """Rank `rank`'s input element i: small integers whose sums and products over 8 ranks fit every dtype."""
    v = (rank * 7 + i * 3 + salt) % 7 - 3  # -3..3
    if dtype == torch.uint8:
        return abs(v)
    if dtype == torch.bool:
        return v > 0
    return v


def make(rank, n, dtype, salt=0, shape=None):
    vals = [value(rank, i, dtype, salt) for i in range(n)]
    if dtype == torch.complex64:
        im = [value(rank, i, torch.int32, salt + 1) for i in range(n)]
        t = torch.complex(torch.tensor(vals, dtype=torch.float32), torch.tensor(im, dtype=torch.float32))
    else:
        t = torch.tensor(vals, dtype=torch.int64).to(dtype) if dtype != torch.bool else torch.tensor(vals, dtype=torch.bool)
    return t.reshape(shape) if shape is not None else t


def reference(inputs, op, dtype, n_ranks):
    """The reduction of `inputs` (one tensor per rank, in rank order), exactly, then rounded once to dtype."""
    if dtype == torch.bool:
        stacked = torch.stack(inputs)
        if op in (R.SUM, R.MAX):
            return stacked.any(0)
        return stacked.all(0)
    wide = torch.complex128 if dtype.is_complex else torch.float64 if dtype in FLOATS else torch.int64
    acc = inputs[0].to(wide).clone()
    for x in inputs[1:]:
        x = x.to(wide)
        if op in (R.SUM, R.AVG):
            acc = acc + x
        elif op == R.PRODUCT:
            acc = acc * x
        elif op == R.MIN:
            acc = torch.minimum(acc, x)
        elif op == R.MAX:
            acc = torch.maximum(acc, x)
    if op == R.AVG:
        if dtype in FLOATS or dtype.is_complex:
            acc = acc / n_ranks
        else:
            acc = torch.div(acc, n_ranks, rounding_mode="trunc")  # tern's integer average truncates, as C does
    return acc.to(dtype)


def same(got, want, what, average=False):
    global checked
    checked += 1
    if got.dtype != want.dtype or got.shape != want.shape:
        fail(what, f"dtype/shape {got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}")
        return
    if average and (got.dtype in FLOATS or got.dtype.is_complex):
        # One rounding of the quotient, at the dtype's precision (fp16/bf16 through float32 as tern computes).
        eps = torch.finfo(got.real.dtype if got.dtype.is_complex else got.dtype).eps
        ok = torch.allclose(got.to(torch.complex128 if got.dtype.is_complex else torch.float64),
                            want.to(torch.complex128 if got.dtype.is_complex else torch.float64),
                            rtol=eps, atol=eps)
    else:
        ok = torch.equal(got, want)
    if not ok:
        diff = (got != want).nonzero()
        first = diff[0].tolist() if len(diff) else "?"
        fail(what, f"{len(diff)} elements differ, first at {first}: got {got.flatten()[:8].tolist()} "
                   f"want {want.flatten()[:8].tolist()}")


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype.is_complex:
        return [R.SUM, R.AVG]
    return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.AVG]


def gloo_try(fn):
    """Runs fn on the Gloo group; None when Gloo does not support the case (then only the reference judges)."""
    global gloo_compared
    try:
        r = fn()
    except (RuntimeError, ValueError, TypeError):
        return None
    gloo_compared += 1
    return r


def case(fn, what):
    try:
        fn()
    except Exception:  # a raised error is a finding, and the matrix goes on
        fail(what, traceback.format_exc(limit=3).strip().splitlines()[-1])


def all_reduce_cases(dtype, n):
    inputs = [make(r, n, dtype) for r in range(WORLD)]
    for op in ops_for(dtype):
        what = f"all_reduce {dtype} n={n} {op}"
        want = reference(inputs, op, dtype, WORLD)
        avg = op == R.AVG

        def blocking():
            t = inputs[RANK].clone()
            dist.all_reduce(t, op=op)
            same(t, want, what, avg)
            if not avg:
                g = gloo_try(lambda: (lambda x: (dist.all_reduce(x, op=op, group=GLOO), x)[1])(inputs[RANK].clone()))
                if g is not None:
                    same(t, g, what + " vs gloo")

        def asynchronous():
            t = inputs[RANK].clone()
            w = dist.all_reduce(t, op=op, async_op=True)
            w.wait()
            same(t, want, what + " async", avg)
            # torch hands complex tensors to backends as their real view (as it does for Gloo and NCCL).
            same(w.get_future().value()[0], torch.view_as_real(want) if dtype.is_complex else want, what + " future",
                 avg)

        case(blocking, what)
        case(asynchronous, what + " async")
    if dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        what = f"all_reduce {dtype} n={n} PREMUL_SUM"

        def premul():
            t = inputs[RANK].clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
            same(t, reference([x * 0.5 for x in inputs], R.SUM, dtype, WORLD), what)

        case(premul, what)
        what = f"reduce {dtype} n={n} PREMUL_SUM"

        def premul_reduce():
            t = inputs[RANK].clone()
            dist.reduce(t, dst=0, op=dist._make_nccl_premul_sum(2.0))
            want_here = reference([x * 2.0 for x in inputs], R.SUM, dtype, WORLD) if RANK == 0 else inputs[RANK]
            same(t, want_here, what)

        case(premul_reduce, what)


def rooted_cases(dtype, n):
    inputs = [make(r, n, dtype, salt=2) for r in range(WORLD)]
    for root in sorted({0, WORLD - 1}):
        what = f"broadcast {dtype} n={n} root={root}"

        def bcast():
            t = inputs[RANK].clone()
            dist.broadcast(t, src=root)
            same(t, inputs[root], what)

        case(bcast, what)
        if dtype.is_complex:
            continue
        for op in [R.SUM, R.MAX] if dtype != torch.bool else [R.SUM]:
            what = f"reduce {dtype} n={n} root={root} {op}"

            def red():
                t = inputs[RANK].clone()
                dist.reduce(t, dst=root, op=op)
                if RANK == root:
                    same(t, reference(inputs, op, dtype, WORLD), what)
                else:
                    same(t, inputs[RANK], what + " leaves the other ranks' tensors alone")

            case(red, what)
        what = f"gather {dtype} n={n} root={root}"

        def gather():
            outs = [torch.full_like(inputs[0], 1) for _ in range(WORLD)] if RANK == root else None
            dist.gather(inputs[RANK].clone(), outs, dst=root)
            if RANK == root:
                for r in range(WORLD):
                    same(outs[r], inputs[r], f"{what} from {r}")

        case(gather, what)
        what = f"scatter {dtype} n={n} root={root}"

        def scatter():
            pieces = [make(r, n, dtype, salt=5) for r in range(WORLD)]
            out = torch.full_like(pieces[0], 1)
            dist.scatter(out, pieces if RANK == root else None, src=root)
            same(out, pieces[RANK], what)

        case(scatter, what)


def gather_cases(dtype, n):
    inputs = [make(r, n, dtype, salt=3) for r in range(WORLD)]
    what = f"all_gather {dtype} n={n}"

    def listed():
        outs = [torch.full_like(inputs[0], 1) for _ in range(WORLD)]
        dist.all_gather(outs, inputs[RANK].clone())
        for r in range(WORLD):
            same(outs[r], inputs[r], f"{what} block {r}")

    case(listed, what)
    want = torch.cat(inputs)
    what = f"all_gather_into_tensor {dtype} n={n}"

    def into_tensor():
        out = torch.full_like(want, 1)
        dist.all_gather_into_tensor(out, inputs[RANK].clone())
        same(out, want, what)

    def in_place():
        out = torch.full_like(want, 1)
        mine = out.narrow(0, RANK * n, n)
        mine.copy_(inputs[RANK])
        dist.all_gather_into_tensor(out, mine)
        same(out, want, what + " in place")

    case(into_tensor, what)
    case(in_place, what + " in place")
    if dtype.is_complex:
        return
    for op in [R.SUM, R.MAX, R.AVG] if dtype != torch.bool else [R.SUM]:
        chunks = [[make(r, n, dtype, salt=10 + j) for j in range(WORLD)] for r in range(WORLD)]
        want_mine = reference([chunks[r][RANK] for r in range(WORLD)], op, dtype, WORLD)
        what = f"reduce_scatter {dtype} n={n} {op}"

        def rs_list():
            out = torch.full_like(want_mine, 1)
            dist.reduce_scatter(out, [c.clone() for c in chunks[RANK]], op=op)
            same(out, want_mine, what, op == R.AVG)

        def rs_tensor():
            out = torch.full_like(want_mine, 1)
            inp = torch.cat(chunks[RANK])
            before = inp.clone()
            dist.reduce_scatter_tensor(out, inp, op=op)
            same(out, want_mine, what + " tensor", op == R.AVG)
            same(inp, before, what + " tensor leaves its input alone")

        case(rs_list, what)
        case(rs_tensor, what + " tensor")


def alltoall_cases(dtype, n):
    what = f"all_to_all_single {dtype} n={n}"
    blocks = [[make(r, n, dtype, salt=20 + j) for j in range(WORLD)] for r in range(WORLD)]

    def even():
        out = torch.full_like(torch.cat(blocks[RANK]), 1)
        dist.all_to_all_single(out, torch.cat(blocks[RANK]))
        same(out, torch.cat([blocks[r][RANK] for r in range(WORLD)]), what)

    case(even, what)

    # Uneven: rank r sends (r + 2j) % 3 rows of 2 columns to rank j (some zero), as MoE routing does.
    def rows(r, j):
        return (r + 2 * j + n) % 3

    def uneven():
        send = [make(RANK, rows(RANK, j) * 2, dtype, salt=30 + j).reshape(-1, 2) for j in range(WORLD)]
        expect = [make(r, rows(r, RANK) * 2, dtype, salt=30 + RANK).reshape(-1, 2) for r in range(WORLD)]
        out = torch.full_like(torch.cat(expect), 1)
        dist.all_to_all_single(out, torch.cat(send), output_split_sizes=[rows(r, RANK) for r in range(WORLD)],
                               input_split_sizes=[rows(RANK, j) for j in range(WORLD)])
        same(out, torch.cat(expect), what + " with splits")

    case(uneven, what + " with splits")

    def listed():
        send = [make(RANK, n + j, dtype, salt=40 + j) for j in range(WORLD)]
        outs = [torch.full_like(make(r, n + RANK, dtype), 1) for r in range(WORLD)]
        dist.all_to_all(outs, send)
        for r in range(WORLD):
            same(outs[r], make(r, n + RANK, dtype, salt=40 + RANK), f"all_to_all {dtype} n={n} from {r}")

    case(listed, f"all_to_all {dtype} n={n}")


def point_to_point_cases(dtype, n):
    if WORLD < 2:
        return
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    what = f"batch_isend_irecv ring {dtype} n={n}"

    def ring():
        got = torch.full_like(make(0, n, dtype), 1)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, make(RANK, n, dtype, salt=50), nxt),
                                       dist.P2POp(dist.irecv, got, prv)])
        for q in reqs:
            q.wait()
        same(got, make(prv, n, dtype, salt=50), what)

    case(ring, what)
    what = f"send/recv pairs {dtype} n={n}"

    def pairs():
        # Even ranks send first, odd ranks receive first: no two ranks wait on each other.
        peer = RANK ^ 1
        if peer >= WORLD:
            return
        got = torch.full_like(make(0, n, dtype), 1)
        if RANK % 2 == 0:
            dist.send(make(RANK, n, dtype, salt=60), peer)
            dist.recv(got, peer)
        else:
            dist.recv(got, peer)
            dist.send(make(RANK, n, dtype, salt=60), peer)
        same(got, make(peer, n, dtype, salt=60), what)

    case(pairs, what)


def coalesced_cases():
    what = "all_reduce coalesced (mixed sizes)"

    def ar():
        ts = [make(RANK, k, torch.float32, salt=k) for k in (1, 7, 0, 1023)]
        with dist._coalescing_manager():
            for t in ts:
                dist.all_reduce(t)
        for k, t in zip((1, 7, 0, 1023), ts):
            same(t, reference([make(r, k, torch.float32, salt=k) for r in range(WORLD)], R.SUM, torch.float32, WORLD),
                 f"{what} k={k}")

    case(ar, what)
    what = "all_gather_into_tensor coalesced"

    def ag():
        ins = [make(RANK, k, torch.int32, salt=k) for k in (3, 5)]
        outs = [torch.full((k * WORLD,), 1, dtype=torch.int32) for k in (3, 5)]
        with dist._coalescing_manager():
            for o, i in zip(outs, ins):
                dist.all_gather_into_tensor(o, i)
        for k, o in zip((3, 5), outs):
            same(o, torch.cat([make(r, k, torch.int32, salt=k) for r in range(WORLD)]), f"{what} k={k}")

    case(ag, what)
    what = "reduce_scatter_tensor coalesced"

    def rs():
        ins = [make(RANK, k * WORLD, torch.float64, salt=k) for k in (2, 9)]
        outs = [torch.full((k,), 1, dtype=torch.float64) for k in (2, 9)]
        with dist._coalescing_manager():
            for o, i in zip(outs, ins):
                dist.reduce_scatter_tensor(o, i)
        for k, o in zip((2, 9), outs):
            full = reference([make(r, k * WORLD, torch.float64, salt=k) for r in range(WORLD)], R.SUM, torch.float64,
                             WORLD)
            same(o, full[RANK * k:(RANK + 1) * k], f"{what} k={k}")

    case(rs, what)


def layout_cases():
    what = "all_reduce of a non-contiguous (transposed) tensor"

    def transposed():
        base = [make(r, 35, torch.float32, salt=70).reshape(5, 7) for r in range(WORLD)]
        t = base[RANK].clone().t()
        assert not t.is_contiguous()
        dist.all_reduce(t)
        same(t, reference([b.t() for b in base], R.SUM, torch.float32, WORLD), what)

    case(transposed, what)
    what = "all_gather into strided outputs"

    def strided():
        outs = [torch.full((4, 6), 1.0)[:, ::2] for _ in range(WORLD)]
        dist.all_gather(outs, make(RANK, 12, torch.float32, salt=71).reshape(4, 3))
        for r in range(WORLD):
            same(outs[r].contiguous(), make(r, 12, torch.float32, salt=71).reshape(4, 3), f"{what} block {r}")

    case(strided, what)


def big_cases():
    inputs = [make(r, BIG, torch.float32, salt=80) for r in range(WORLD)]
    want = reference(inputs, R.SUM, torch.float32, WORLD)

    def ar():
        t = inputs[RANK].clone()
        dist.all_reduce(t)
        same(t, want, "all_reduce float32 2^20+3")
        t = inputs[RANK].clone()
        w = dist.all_reduce(t, async_op=True)
        w.wait()
        same(t, want, "all_reduce float32 2^20+3 async")

    def ag():
        out = torch.empty(BIG * WORLD)
        dist.all_gather_into_tensor(out, inputs[RANK])
        same(out, torch.cat(inputs), "all_gather_into_tensor float32 2^20+3")

    def bc():
        t = inputs[RANK].clone()
        dist.broadcast(t, src=0)
        same(t, inputs[0], "broadcast float32 2^20+3")

    case(ar, "all_reduce float32 2^20+3")
    case(ag, "all_gather_into_tensor float32 2^20+3")
    case(bc, "broadcast float32 2^20+3")


def subgroup_cases():
    # Every rank creates both groups (torch requires it), then uses its own; group ranks differ from global ones.
    evens = dist.new_group([r for r in range(WORLD) if r % 2 == 0], backend="tern")
    odds = dist.new_group([r for r in range(WORLD) if r % 2 == 1], backend="tern") if WORLD > 1 else None
    mine = evens if RANK % 2 == 0 else odds
    members = [r for r in range(WORLD) if r % 2 == RANK % 2]
    what = "subgroup all_reduce"

    def ar():
        t = make(RANK, 9, torch.int64, salt=90)
        dist.all_reduce(t, group=mine)
        same(t, reference([make(r, 9, torch.int64, salt=90) for r in members], R.SUM, torch.int64, len(members)), what)

    def bc():
        t = make(RANK, 9, torch.float32, salt=91)
        dist.broadcast(t, group=mine, group_src=len(members) - 1)
        same(t, make(members[-1], 9, torch.float32, salt=91), "subgroup broadcast from its last rank")

    def ag():
        outs = [torch.empty(4) for _ in members]
        dist.all_gather(outs, make(RANK, 4, torch.float32, salt=92), group=mine)
        for k, r in enumerate(members):
            same(outs[k], make(r, 4, torch.float32, salt=92), f"subgroup all_gather block of {r}")

    case(ar, what)
    case(bc, "subgroup broadcast")
    case(ag, "subgroup all_gather")


def object_cases():
    def objects():
        got = [None] * WORLD
        dist.all_gather_object(got, {"rank": RANK, "name": "r" * RANK})
        global checked
        checked += 1
        if got != [{"rank": r, "name": "r" * r} for r in range(WORLD)]:
            fail("all_gather_object", repr(got))
        lst = [f"from {RANK}"]
        dist.broadcast_object_list(lst, src=0)
        checked += 1
        if lst != ["from 0"]:
            fail("broadcast_object_list", repr(lst))

    case(objects, "all_gather_object / broadcast_object_list")


def device_cases():
    # The backend registers for CUDA only where torch sees a GPU (not here: the CUDA path runs in tests/gpu), and a
    # tensor on a device it does not serve is refused with the device named, not read as host memory.
    def registration():
        global checked
        want = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
        checked += 1
        if tern.torch._devices() != want:
            fail("backend devices", f"{tern.torch._devices()} instead of {want}")

    def other_device():
        global checked
        t = torch.empty(4, device="meta")
        checked += 1
        try:
            tern.torch.backend_of().allreduce([t]).wait()
        except RuntimeError as e:
            if "meta" not in str(e):
                fail("a meta tensor", f"the error does not name the device: {e}")
            return
        fail("a meta tensor", "no error")

    case(registration, "backend devices")
    case(other_device, "a tensor on another device")


def main():
    global RANK, WORLD, GLOO
    dist.init_process_group("tern")
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    GLOO = dist.new_group(backend="gloo")
    for dtype in DTYPES:
        for n in SIZES:
            all_reduce_cases(dtype, n)
            rooted_cases(dtype, n)
            gather_cases(dtype, n)
            if not dtype.is_complex:
                alltoall_cases(dtype, n)
            point_to_point_cases(dtype, n)
    coalesced_cases()
    layout_cases()
    subgroup_cases()
    object_cases()
    device_cases()
    big_cases()
    dist.barrier()
    print(json.dumps({"checked": checked, "failures": failures, "gloo_compared": gloo_compared}))
    dist.destroy_process_group()


if __name__ == "__main__":
    RANK = WORLD = GLOO = None
    main()
    sys.exit(0)
