"""Every way torch starts a process group reaches tern through the group's store: env:// (torchrun's variables),
file://, tcp://, the "cpu:tern" backend string, and torchrun itself."""

import json
import os
import subprocess
import sys

import pytest

from conftest import WORKERS, assert_all_ok, reserved_port, run_ranks

WORLD = 3


def check(reports):
    want = float(sum(range(1, WORLD + 1)))
    for rep in reports:
        assert rep["backend"] in ("tern", "cpu:tern"), rep
        assert rep["sum"] == [want] * 5, rep
    assert reports[0]["sub"] == [0.0, 0.0]


@pytest.mark.parametrize("how", ["env", "tcp", "devices"])
def test_init_method(how):
    results = run_ranks(WORLD, "init_worker.py", how, timeout=180)
    assert_all_ok(results)
    check([r.report() for r in results])


def test_init_method_file(tmp_path):
    results = run_ranks(WORLD, "init_worker.py", "file", tmp_path / "rendezvous", timeout=180)
    assert_all_ok(results)
    check([r.report() for r in results])


def test_torchrun_starts_tern_ranks(tmp_path):
    env = dict(os.environ, TERN_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", TERN_TEST_REPORT_DIR=str(tmp_path))
    with reserved_port() as port:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(WORLD), "--master-port",
               str(port), str(WORKERS / "init_worker.py"), "env"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-4000:]
    reports = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(WORLD)]
    check(reports)
