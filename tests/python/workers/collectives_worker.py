"""One rank of the collectives matrix on the tern backend.

Every collective torch.distributed offers on CPU runs on the tern process group, for every dtype tern carries (plus
bool and complex), every reduce op, sizes 0/1/7/1023 (2^20+3 for float32 on the main paths), blocking and
async_op=True, in and out of place, contiguous and not, on the whole world and on subgroups. The matrix runs three
times through one proxy (C below): on the tern group blocking, on the tern group with async_op=True (each Work
waited on, then checked complete; send/recv as isend/irecv), and on a Gloo group over the same ranks. Each tern
result is checked against an independent reference computed here from every rank's inputs (float64 / Python
integers, in rank order; every rank can compute every rank's input), and, where Gloo supports the case, against
the Gloo backend's result on the same inputs. Inputs are small integers (sums and products exact in every dtype),
so results must be equal, except averages of floats, which may differ from the exact quotient by one rounding.
Unsupported requests (bitwise reductions, receiving from any source) must fail with a clear error.

Prints one JSON line {"checked": N, "failures": [...], "gloo_compared": M, "async_checked": A}.
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
          torch.int64, torch.bool, torch.complex64, torch.complex128]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}

failures = []
checked = 0
gloo_compared = 0
async_checked = 0
MODE = "tern"  # which pass of the matrix runs: "tern" (blocking), "async" (tern, async_op=True) or "gloo"
RESULTS = {"tern": {}, "gloo": {}}  # what -> (result, is an average): the blocking passes' results, compared at the end


def fail(what, detail):
    failures.append(f"rank {RANK}: {what}: {detail}")


class _Collectives:
    """torch.distributed's functions as the current pass calls them: on the Gloo group in the "gloo" pass, with
    async_op=True (the Work waited on and checked complete) in the "async" pass; send/recv become isend/irecv there.
    In the async pass a call returns its Work."""

    def __getattr__(self, name):
        def call(*args, **kwargs):
            if MODE == "gloo":
                kwargs.setdefault("group", GLOO)
            if MODE != "async":
                return getattr(dist, name)(*args, **kwargs)
            if name in ("send", "recv"):
                work = getattr(dist, "i" + name)(*args, **kwargs)
            else:
                work = getattr(dist, name)(*args, async_op=True, **kwargs)
            work.wait()
            if not work.is_completed():
                fail(f"{name} async", "the Work is not completed after wait()")
            return work

        return call


C = _Collectives()


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
    if dtype.is_complex:
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        im = [value(rank, i, torch.int32, salt + 1) for i in range(n)]
        t = torch.complex(torch.tensor(vals, dtype=part), torch.tensor(im, dtype=part))
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
    """Judges a tern result against the reference; in the Gloo pass only records Gloo's result for compare_with_gloo.
    """
    if MODE == "gloo":
        # What a collective leaves in buffers it does not define (a non-root's reduce tensor) is not compared.
        if "leaves" not in what:
            RESULTS["gloo"][what] = (got.clone(), average)
        return
    global async_checked
    if MODE == "tern":
        RESULTS["tern"][what] = (got.clone(), average)
    else:
        async_checked += 1
    check(got, want, what if MODE == "tern" else f"{what} [{MODE}]", average)


def check(got, want, what, average=False):
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


def compare_with_gloo():
    """tern's blocking results against Gloo's for every case both ran (Gloo declines some: PREMUL_SUM, some dtypes)."""
    global gloo_compared
    for what, (got, average) in RESULTS["tern"].items():
        if what in RESULTS["gloo"]:
            gloo_compared += 1
            check(got, RESULTS["gloo"][what][0], what + " vs gloo", average)


def case(fn, what):
    try:
        fn()
    except Exception:  # a raised error is a finding, and the matrix goes on (Gloo's refusals are not ours)
        if MODE != "gloo":
            fail(what if MODE == "tern" else f"{what} [{MODE}]",
                 traceback.format_exc(limit=3).strip().splitlines()[-1])


def all_reduce_cases(dtype, n):
    inputs = [make(r, n, dtype) for r in range(WORLD)]
    for op in ops_for(dtype):
        what = f"all_reduce {dtype} n={n} {op}"
        want = reference(inputs, op, dtype, WORLD)
        avg = op == R.AVG

        def all_reduce():
            t = inputs[RANK].clone()
            work = C.all_reduce(t, op=op)
            same(t, want, what, avg)
            if MODE == "async":
                # The future holds the output; torch hands complex tensors to backends as their real view (as it
                # does for Gloo and NCCL).
                check(work.get_future().value()[0], torch.view_as_real(want) if dtype.is_complex else want,
                      what + " future", avg)

        case(all_reduce, what)
    if dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        what = f"all_reduce {dtype} n={n} PREMUL_SUM"

        def premul():
            t = inputs[RANK].clone()
            C.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
            same(t, reference([x * 0.5 for x in inputs], R.SUM, dtype, WORLD), what)

        case(premul, what)
        what = f"reduce {dtype} n={n} PREMUL_SUM"

        def premul_reduce():
            t = inputs[RANK].clone()
            C.reduce(t, dst=0, op=dist._make_nccl_premul_sum(2.0))
            want_here = reference([x * 2.0 for x in inputs], R.SUM, dtype, WORLD) if RANK == 0 else inputs[RANK]
            same(t, want_here, what)

        case(premul_reduce, what)


def rooted_cases(dtype, n):
    inputs = [make(r, n, dtype, salt=2) for r in range(WORLD)]
    for root in sorted({0, WORLD - 1}):
        what = f"broadcast {dtype} n={n} root={root}"

        def bcast():
            t = inputs[RANK].clone()
            C.broadcast(t, src=root)
            same(t, inputs[root], what)

        case(bcast, what)
        for op in [R.SUM] if dtype == torch.bool or dtype.is_complex else [R.SUM, R.MAX]:
            what = f"reduce {dtype} n={n} root={root} {op}"

            def red():
                t = inputs[RANK].clone()
                C.reduce(t, dst=root, op=op)
                if RANK == root:
                    same(t, reference(inputs, op, dtype, WORLD), what)
                else:
                    same(t, inputs[RANK], what + " leaves the other ranks' tensors alone")

            case(red, what)
        what = f"gather {dtype} n={n} root={root}"

        def gather():
            outs = [torch.full_like(inputs[0], 1) for _ in range(WORLD)] if RANK == root else None
            C.gather(inputs[RANK].clone(), outs, dst=root)
            if RANK == root:
                for r in range(WORLD):
                    same(outs[r], inputs[r], f"{what} from {r}")

        case(gather, what)
        what = f"scatter {dtype} n={n} root={root}"

        def scatter():
            pieces = [make(r, n, dtype, salt=5) for r in range(WORLD)]
            out = torch.full_like(pieces[0], 1)
            C.scatter(out, pieces if RANK == root else None, src=root)
            same(out, pieces[RANK], what)

        case(scatter, what)


def gather_cases(dtype, n):
    inputs = [make(r, n, dtype, salt=3) for r in range(WORLD)]
    what = f"all_gather {dtype} n={n}"

    def listed():
        outs = [torch.full_like(inputs[0], 1) for _ in range(WORLD)]
        C.all_gather(outs, inputs[RANK].clone())
        for r in range(WORLD):
            same(outs[r], inputs[r], f"{what} block {r}")

    case(listed, what)
    want = torch.cat(inputs)
    what = f"all_gather_into_tensor {dtype} n={n}"

    def into_tensor():
        out = torch.full_like(want, 1)
        C.all_gather_into_tensor(out, inputs[RANK].clone())
        same(out, want, what)

    def in_place():
        out = torch.full_like(want, 1)
        mine = out.narrow(0, RANK * n, n)
        mine.copy_(inputs[RANK])
        C.all_gather_into_tensor(out, mine)
        same(out, want, what + " in place")

    case(into_tensor, what)
    case(in_place, what + " in place")
    for op in [R.SUM] if dtype == torch.bool else [R.SUM, R.AVG] if dtype.is_complex else [R.SUM, R.MAX, R.AVG]:
        chunks = [[make(r, n, dtype, salt=10 + j) for j in range(WORLD)] for r in range(WORLD)]
        want_mine = reference([chunks[r][RANK] for r in range(WORLD)], op, dtype, WORLD)
        what = f"reduce_scatter {dtype} n={n} {op}"

        def rs_list():
            out = torch.full_like(want_mine, 1)
            C.reduce_scatter(out, [c.clone() for c in chunks[RANK]], op=op)
            same(out, want_mine, what, op == R.AVG)

        def rs_tensor():
            out = torch.full_like(want_mine, 1)
            inp = torch.cat(chunks[RANK])
            before = inp.clone()
            C.reduce_scatter_tensor(out, inp, op=op)
            same(out, want_mine, what + " tensor", op == R.AVG)
            same(inp, before, what + " tensor leaves its input alone")

        def rs_in_place():
            # nccl-tests' in-place layout: the output is this rank's block of the input.
            inp = torch.cat(chunks[RANK])
            out = inp.narrow(0, RANK * n, n)
            C.reduce_scatter_tensor(out, inp, op=op)
            same(out, want_mine, what + " tensor in place", op == R.AVG)

        case(rs_list, what)
        case(rs_tensor, what + " tensor")
        case(rs_in_place, what + " tensor in place")


def alltoall_cases(dtype, n):
    what = f"all_to_all_single {dtype} n={n}"
    blocks = [[make(r, n, dtype, salt=20 + j) for j in range(WORLD)] for r in range(WORLD)]

    def even():
        out = torch.full_like(torch.cat(blocks[RANK]), 1)
        C.all_to_all_single(out, torch.cat(blocks[RANK]))
        same(out, torch.cat([blocks[r][RANK] for r in range(WORLD)]), what)

    case(even, what)

    # Uneven: rank r sends (r + 2j) % 3 rows of 2 columns to rank j (some zero), as MoE routing does.
    def rows(r, j):
        return (r + 2 * j + n) % 3

    def uneven():
        send = [make(RANK, rows(RANK, j) * 2, dtype, salt=30 + j).reshape(-1, 2) for j in range(WORLD)]
        expect = [make(r, rows(r, RANK) * 2, dtype, salt=30 + RANK).reshape(-1, 2) for r in range(WORLD)]
        out = torch.full_like(torch.cat(expect), 1)
        C.all_to_all_single(out, torch.cat(send), output_split_sizes=[rows(r, RANK) for r in range(WORLD)],
                               input_split_sizes=[rows(RANK, j) for j in range(WORLD)])
        same(out, torch.cat(expect), what + " with splits")

    case(uneven, what + " with splits")

    def listed():
        send = [make(RANK, n + j, dtype, salt=40 + j) for j in range(WORLD)]
        outs = [torch.full_like(make(r, n + RANK, dtype), 1) for r in range(WORLD)]
        C.all_to_all(outs, send)
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
        group = GLOO if MODE == "gloo" else None
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, make(RANK, n, dtype, salt=50), nxt, group),
                                       dist.P2POp(dist.irecv, got, prv, group)])
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
            C.send(make(RANK, n, dtype, salt=60), peer)
            C.recv(got, peer)
        else:
            C.recv(got, peer)
            C.send(make(RANK, n, dtype, salt=60), peer)
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
    # Group ranks differ from global ones; the groups are made once in main (every rank must create every group).
    mine = EVENS if RANK % 2 == 0 else ODDS
    members = [r for r in range(WORLD) if r % 2 == RANK % 2]
    me, k = members.index(RANK), len(members)

    def ar():
        t = make(RANK, 9, torch.int64, salt=90)
        C.all_reduce(t, group=mine)
        same(t, reference([make(r, 9, torch.int64, salt=90) for r in members], R.SUM, torch.int64, k),
             "subgroup all_reduce")

    def bc():
        t = make(RANK, 9, torch.float32, salt=91)
        C.broadcast(t, group=mine, group_src=k - 1)
        same(t, make(members[-1], 9, torch.float32, salt=91), "subgroup broadcast from its last rank")

    def ag():
        outs = [torch.empty(4) for _ in members]
        C.all_gather(outs, make(RANK, 4, torch.float32, salt=92), group=mine)
        for j, r in enumerate(members):
            same(outs[j], make(r, 4, torch.float32, salt=92), f"subgroup all_gather block of {r}")

    def red():
        t = make(RANK, 7, torch.float64, salt=93)
        C.reduce(t, group=mine, group_dst=0, op=R.MAX)
        if me == 0:
            same(t, reference([make(r, 7, torch.float64, salt=93) for r in members], R.MAX, torch.float64, k),
                 "subgroup reduce to its first rank")

    def rs():
        out = torch.empty(5, dtype=torch.int32)
        C.reduce_scatter_tensor(out, make(RANK, 5 * k, torch.int32, salt=94), group=mine)
        full = reference([make(r, 5 * k, torch.int32, salt=94) for r in members], R.SUM, torch.int32, k)
        same(out, full[me * 5:(me + 1) * 5], "subgroup reduce_scatter_tensor")

    def a2a():
        out = torch.empty(3 * k, dtype=torch.bfloat16)
        C.all_to_all_single(out, make(RANK, 3 * k, torch.bfloat16, salt=95), group=mine)
        want = torch.cat([make(r, 3 * k, torch.bfloat16, salt=95)[me * 3:(me + 1) * 3] for r in members])
        same(out, want, "subgroup all_to_all_single")

    case(ar, "subgroup all_reduce")
    case(bc, "subgroup broadcast")
    case(ag, "subgroup all_gather")
    case(red, "subgroup reduce")
    case(rs, "subgroup reduce_scatter_tensor")
    case(a2a, "subgroup all_to_all_single")


def multi_group_cases():
    """Two tern groups over the same ranks (the default one and TWIN), their async calls interleaved: each group's
    calls complete in its own order, neither waits for the other's, and every result is right."""
    what = "async calls interleaved on two tern groups"

    def interleaved():
        sizes = (1023, 7, 1 << 16, 1)
        inputs = [[make(r, n, torch.float32, salt=100 + k) for r in range(WORLD)] for k, n in enumerate(sizes)]
        mine = [x[RANK].clone() for x in inputs]
        works = [dist.all_reduce(t, async_op=True, group=TWIN if k % 2 else None) for k, t in enumerate(mine)]
        for w in reversed(works):  # waited on out of order
            w.wait()
        for k, t in enumerate(mine):
            same(t, reference(inputs[k], R.SUM, torch.float32, WORLD), f"{what}, call {k}")

    case(interleaved, what)


def error_cases():
    """Requests tern refuses: a clear error at once, never a wrong result or a hang."""

    def refused(what, fn, words):
        global checked
        checked += 1
        try:
            fn()
        except Exception as e:  # torch wraps the backend's error in RuntimeError or one of its subclasses
            if not all(w in str(e) for w in words):
                fail(what, f"the error does not say {words}: {e}")
            return
        fail(what, "no error")

    for op in (R.BAND, R.BOR, R.BXOR):
        refused(f"all_reduce {op}", lambda: dist.all_reduce(make(RANK, 5, torch.int32), op=op), ["bitwise"])
    if WORLD > 1:
        refused("recv from any source", lambda: dist.recv(torch.empty(3)), ["any source"])

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
    global RANK, WORLD, GLOO, EVENS, ODDS, TWIN, MODE
    dist.init_process_group("tern")
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    GLOO = dist.new_group(backend="gloo")
    EVENS = dist.new_group([r for r in range(WORLD) if r % 2 == 0], backend="tern")
    ODDS = dist.new_group([r for r in range(WORLD) if r % 2 == 1], backend="tern") if WORLD > 1 else None
    TWIN = dist.new_group(backend="tern")
    for MODE in ("tern", "async", "gloo"):
        for dtype in DTYPES:
            for n in SIZES:
                all_reduce_cases(dtype, n)
                rooted_cases(dtype, n)
                gather_cases(dtype, n)
                alltoall_cases(dtype, n)
                point_to_point_cases(dtype, n)
        if MODE != "gloo":
            subgroup_cases()
    MODE = "tern"
    compare_with_gloo()
    multi_group_cases()
    error_cases()
    coalesced_cases()
    layout_cases()
    object_cases()
    device_cases()
    big_cases()
    dist.barrier()
    print(json.dumps({"checked": checked, "failures": failures, "gloo_compared": gloo_compared,
                      "async_checked": async_checked}))
    dist.destroy_process_group()


if __name__ == "__main__":
    RANK = WORLD = GLOO = EVENS = ODDS = TWIN = None
    main()
    sys.exit(0)
