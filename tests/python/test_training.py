"""Unmodified PyTorch training (DDP, DDP with tern's compressed comm hook, FSDP2) on the tern backend, checked
against the same training on Gloo (tests/python/workers/training_worker.py says what each rank checks)."""

import pytest

from conftest import assert_all_ok, run_ranks


def check(results):
    assert_all_ok(results)
    reports = [r.report() for r in results]
    failures = [f"rank {rep['rank']}: {f}" for rep in reports for f in rep["failures"]]
    assert not failures, "\n".join(failures)
    return reports


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_on_tern_matches_ddp_on_gloo(world):
    check(run_ranks(world, "training_worker.py", "ddp", timeout=300))


@pytest.mark.parametrize("codec", ["sign", "qsgd:4", "topk:0.01", "fp16", "bf16"])
def test_compressed_hook_trains_and_is_the_c_api_call(codec):
    reports = check(run_ranks(2, "training_worker.py", "hook", codec, timeout=300))
    assert reports[0]["buckets"] >= 2


def test_fsdp2_on_tern_matches_fsdp2_on_gloo():
    check(run_ranks(2, "training_worker.py", "fsdp", timeout=300))


def test_tern_compress_reaches_unmodified_code():
    env = {"TERN_COMPRESS": "bf16", "TERN_COMPRESS_WHEN": "always"}
    check(run_ranks(2, "training_worker.py", "envcompress", env=env, timeout=300))


def test_a_groups_options_compress_its_allreduce():
    reports = check(run_ranks(2, "training_worker.py", "optioncompress", env={"TERN_COMPRESS_WHEN": "always"},
                              timeout=300))
    assert all("bf17" in rep["bad_codec_error"] for rep in reports), reports
