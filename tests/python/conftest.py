"""Launches real rank processes for the tern backend's tests: each rank is a fresh Python running a worker script
under torch.distributed's env:// rendezvous (MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE), as torchrun would start
it. No mocks: the ranks talk through tern's transports on this machine."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

WORKERS = Path(__file__).resolve().parent / "workers"


@contextlib.contextmanager
def reserved_port():
    """A loopback port for the store's listener, held while the block runs. A port picked by bind(0) and closed
    again can be taken by any ephemeral connect before the listener binds it; this socket stays bound with
    SO_REUSEADDR and never listens, so no one else gets the port, yet the store's listener (libuv binds with
    SO_REUSEADDR too) can bind it (as tools/tern-run/root_addr.hpp does for TERN_ROOT_ADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


class RankResult:
    def __init__(self, rank, returncode, stdout, stderr, seconds):
        self.rank, self.returncode, self.stdout, self.stderr, self.seconds = rank, returncode, stdout, stderr, seconds
        self.killed_at = None  # run_ranks(kill=...): when the victim was killed (time.time())

    def report(self):
        """The JSON object the worker printed last on stdout (its findings)."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"rank {self.rank} printed no report (exit {self.returncode}):\n{self.stderr[-4000:]}")


def run_ranks(world, worker, *args, env=None, timeout=600, kill=None):
    """Runs tests/python/workers/<worker> on `world` ranks; returns their RankResults in rank order.
    kill=(rank, seconds): SIGKILLs that rank that many seconds after every rank has called ready() (fault tests)."""
    with reserved_port() as port:
        return _run_ranks_on(port, world, worker, args, env, timeout, kill)


def _run_ranks_on(port, world, worker, args, env, timeout, kill):
    procs = []
    start = time.monotonic()
    ready_dir = tempfile.mkdtemp(prefix="tern-ready-")
    for rank in range(world):
        e = dict(os.environ)
        e.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                 LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world), TERN_SOCKET_IFNAME="lo",
                 PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TERN_TEST_READY_DIR=ready_dir)
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, str(WORKERS / worker), *map(str, args)], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    if kill is not None:
        victim, after = kill
        while len(os.listdir(ready_dir)) < world and time.monotonic() < start + timeout:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.1)
        time.sleep(after)
        procs[victim].kill()
        killed_at = time.time()
    results = []
    deadline = start + timeout
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            err += f"\n[test] rank {rank} killed after the {timeout} s deadline"
        results.append(RankResult(rank, p.returncode, out, err, time.monotonic() - start))
        if kill is not None:
            results[-1].killed_at = killed_at  # wall clock, as the workers' reports give it
    return results


def assert_all_ok(results):
    bad = [r for r in results if r.returncode != 0]
    if bad:
        msg = "\n".join(f"--- rank {r.rank} exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}" for r in bad)
        pytest.fail(f"{len(bad)} rank(s) failed:\n{msg}")


def ready():
    """Called by a worker once its process group is up (what run_ranks(kill=...) waits for)."""
    d = os.environ.get("TERN_TEST_READY_DIR")
    if d:
        Path(d, os.environ["RANK"]).touch()


@pytest.fixture
def ranks():
    return run_ranks
