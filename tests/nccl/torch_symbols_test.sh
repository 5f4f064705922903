#!/usr/bin/env bash
# Every nccl* symbol that torch's libtorch_cuda.so imports is exported by tern's libnccl.so.2 (else the dynamic
# loader refuses torch with the shim preloaded). Exit 77 (skipped) when there is no torch to read.
set -euo pipefail
lib=$1
python=${2:-}
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "SKIP: no torch venv (TERN_TEST_PYTHON is empty; make test sets it from tools/python-env.sh)"
  exit 77
fi
torch_cuda=$("$python" -c "import importlib.util, os; s = importlib.util.find_spec('torch'); \
print(os.path.join(os.path.dirname(s.origin), 'lib', 'libtorch_cuda.so') if s else '')")
if [ -z "$torch_cuda" ] || [ ! -f "$torch_cuda" ]; then
  echo "SKIP: $python has no torch with libtorch_cuda.so"
  exit 77
fi
needed=$(nm -D --undefined-only "$torch_cuda" | awk '$2 ~ /^nccl/ {sub(/@.*/, "", $2); print $2}' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$3 ~ /^nccl/ {sub(/@.*/, "", $3); print $3}' | sort -u)
[ -n "$needed" ] || { echo "FAIL: $torch_cuda imports no nccl* symbol (not a CUDA build of torch?)"; exit 1; }
missing=$(comm -23 <(echo "$needed") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "FAIL: $lib lacks symbols $torch_cuda imports:"
  echo "$missing"
  exit 1
fi
# Only nccl* is exported: nothing of tern or the C++ runtime leaks into the program's namespace.
others=$(nm -D --defined-only "$lib" | awk '$3 !~ /^nccl/ {print $3}')
if [ -n "$others" ]; then
  echo "FAIL: $lib exports more than nccl*:"
  echo "$others"
  exit 1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libnccl.so.2 ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }
echo "OK: all $(echo "$needed" | wc -l) nccl* symbols of $torch_cuda are exported by $lib"
