#!/usr/bin/env bash
# compare_torch.sh: torch.distributed.all_reduce on the tern backend vs the gloo backend, 2 ranks on one host, in
# one run (perf/torch/allreduce_bench.py: same processes, same tensors, order alternating per size and repeat,
# medians of REPEATS with spreads).
#
#   perf/compare_torch.sh                 (the project venv from tools/python-env.sh, tern installed into it)
#
# Targets (issue 15), judged on the medians: tern >= 2x gloo's busbw at >= 1 MB, and faster than gloo at every
# size below. Exit status: 0 targets met, 1 a target missed, 2 the run failed.
# Environment (defaults in brackets): NP [2], MINBYTES [8], MAXBYTES [256M], REPEATS [3], BUDGET [512M],
# COLL [all_reduce] (or all_to_all_single: the MoE exchange, no targets), PYTHON [the project venv's python],
# OUT [build/perf-torch/DATE].
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
NP=${NP:-2}
python=${PYTHON:-$(bash "$root/tools/python-env.sh")} || { echo "compare_torch.sh: no project venv" >&2; exit 2; }
out=${OUT:-$root/build/perf-torch/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
echo "# torch $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null), $NP ranks, $(nproc) CPUs, $(date -u)"
cmd=("$python" -m torch.distributed.run --nproc-per-node "$NP" --master-port "$((20000 + RANDOM % 12000))"
  "$here/torch/allreduce_bench.py" -b "${MINBYTES:-8}" -e "${MAXBYTES:-256M}" --repeats "${REPEATS:-3}"
  --budget "${BUDGET:-512M}" --coll "${COLL:-all_reduce}" --json "$out/${COLL:-all_reduce}.json")
echo "+ ${cmd[*]}"
TERN_SOCKET_IFNAME=${TERN_SOCKET_IFNAME:-lo} OMP_NUM_THREADS=1 "${cmd[@]}" 2> >(grep -v "UserWarning\|_conversion\|cpu = \|^W1\|OMP_NUM_THREADS\|\*\*\*" >&2) ||
  { echo "compare_torch.sh: the benchmark failed" >&2; exit 2; }
[[ ${COLL:-all_reduce} == all_reduce ]] || exit 0
"$python" - "$out/all_reduce.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
missed = []
for r in d["rows"]:
    b = r["bytes"]
    bw = r["tern"]["busbw"] / r["gloo"]["busbw"]
    if b >= 1 << 20 and bw < 2:
        missed.append(f"{b} B: tern busbw {bw:.2f}x gloo's (target >= 2x)")
    if b < 1 << 20 and r["ratio"] <= 1:
        missed.append(f"{b} B: tern {r['ratio']:.2f}x gloo's speed (target > 1x)")
print("targets: " + ("met" if not missed else "NOT met: " + "; ".join(missed)))
sys.exit(1 if missed else 0)
EOF
