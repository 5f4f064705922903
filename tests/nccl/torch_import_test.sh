#!/usr/bin/env bash
# `import torch` with tern's libnccl.so.2 preloaded: torch's nccl* references bind to it (not to the nvidia-nccl wheel's
# copy its RPATH names), and torch.cuda.nccl.version() is answered by the shim. Exit 77 (skipped) without torch.
set -euo pipefail
lib=$1
python=${2:-}
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "SKIP: no torch venv (TERN_TEST_PYTHON is empty; make test sets it from tools/python-env.sh)"
  exit 77
fi
if ! "$python" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)"; then
  echo "SKIP: $python has no torch"
  exit 77
fi
LD_PRELOAD=$lib "$python" - "$lib" <<'PY'
import os, sys
import torch
shim = os.path.realpath(sys.argv[1])
maps = open("/proc/self/maps").read()
loaded = {line.split()[-1] for line in maps.splitlines() if "libnccl.so" in line}
assert shim in loaded, f"libnccl.so.2 loaded from {loaded}, not {shim}"
# torch may also map the wheel's copy by path (its CUDA-dependency preload); the preloaded shim comes first in the
# global scope, so every nccl* reference (libtorch_cuda.so's included) binds to it.
import ctypes
for name in ("ncclGetVersion", "ncclAllReduce", "ncclCommInitRankConfig"):
    bound = ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value
    ours = ctypes.cast(getattr(ctypes.CDLL(shim), name), ctypes.c_void_p).value
    assert bound == ours, f"{name} binds to {bound:#x}, the shim's is {ours:#x}"
version = torch.cuda.nccl.version()
assert tuple(version[:3]) >= (2, 30, 7), f"torch sees NCCL {version}"
print(f"OK: torch {torch.__version__} imported with {shim} preloaded; torch.cuda.nccl.version() = {version}")
PY
