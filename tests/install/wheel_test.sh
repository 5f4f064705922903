#!/usr/bin/env bash
# The installed wheel (`pip install .` into the project venv, which `make test` does), used as the README says:
# `tern-run` on PATH, `import tern.torch` from site-packages (not a build tree), the README's C example built
# against the headers and libtern inside the package (its tern.pc) and run under the wheel's tern-run, and the
# README's PyTorch example run with its torchrun command. Usage: wheel_test.sh README.md VENV_PYTHON
set -euo pipefail
shopt -s inherit_errexit
readme=$(realpath "$1")
python=$2
source "$(dirname "$0")/readme_blocks.sh"

venv_bin=$(dirname "$python")
# What `. venv/bin/activate` does to PATH.
export PATH="$venv_bin:$PATH"
unset PYTHONPATH
if [ "$(command -v tern-run)" != "$venv_bin/tern-run" ]; then
  echo "FAIL: tern-run on PATH is $(command -v tern-run), not the wheel's $venv_bin/tern-run" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

python -c '
import sysconfig, torch.distributed as dist
import tern, tern.torch
site = sysconfig.get_path("platlib")
assert tern._C.__file__.startswith(site), f"tern._C comes from {tern._C.__file__}, not {site}"
assert dist.Backend.TERN == "tern", "import tern.torch did not register the backend"
major, minor, patch = map(int, tern.__version__.split("."))
assert tern._C.version() == major * 10000 + minor * 100 + patch, (tern._C.version(), tern.__version__)
print("tern", tern.__version__, "from", tern.__file__)'

export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(python -c 'import tern; print(tern.library_dir())')/pkgconfig
readme_block "$readme" example.c >example.c
expect_example_output "$(run_block "$readme" run.sh)" 4

readme_block "$readme" train.py >train.py
output=$(run_block "$readme" torchrun.sh)
printf '%s\n' "$output"
# The README's example trains to a small loss with the sign hook: the first printed loss falls 100-fold by step 99.
awk '/^step 0 loss / { first = $4 } /^step 99 loss / { last = $4 }
     END { if (first == "" || last == "" || !(last * 100 < first)) { print "FAIL: loss " first " -> " last; exit 1 } }' \
  <<<"$output"
echo "PASS: the wheel's tern-run, tern.torch, C headers and tern.pc, and the README's PyTorch example work"
