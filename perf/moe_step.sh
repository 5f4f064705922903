#!/usr/bin/env bash
# A MoE layer step before and after the one-pass shared-memory all-to-all (issue 19): perf/moe/moe_step (the
# exchanges of tern::train::Moe: dispatch, combine and their backward) on NPS ranks, once with tern's default
# choice ("after") and once with the all-to-all and alltoallv forced onto the pairwise schedule through the FIFOs
# ("before": what every MoE exchange took before the shared-memory all-to-all was dispatched), in one sitting,
# alternating which goes first, REPEATS rounds; medians of the per-round median step times.
#
#   perf/moe_step.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets): NPS ["2 4"] SHAPES ["512x256 2048x1024 4096x2048" = tokens x hidden per
#   rank] EXPERTS_PER_RANK [2] TOPK [2] ITERS [50] WARMUP [10] REPEATS [3] TERN_RUN_ARGS (extra tern-run
#   arguments, e.g. "-x TERN_SHM_DISABLE=1" for TCP) RESULTS_DIR [BUILD_DIR/perf-compare/moe-step-DATE]
# Ranks beyond the CPUs run unbound (--bind-to none), as the collectives comparison runs them.
# A benchmark, not a test: exit code 0 whatever the ratios, non-zero only when a run failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
NPS=${NPS:-2 4} SHAPES=${SHAPES:-512x256 2048x1024 4096x2048} EXPERTS_PER_RANK=${EXPERTS_PER_RANK:-2} TOPK=${TOPK:-2}
ITERS=${ITERS:-50} WARMUP=${WARMUP:-10} REPEATS=${REPEATS:-3}
CMP_TIMEOUT=${CMP_TIMEOUT:-900}
[[ -x $build/bin/moe_step ]] || cmp_die "$build/bin/moe_step is missing: cmake --build $build --target moe_step tern-run"
results=${RESULTS_DIR:-$build/perf-compare/moe-step-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
read -r -a run_args <<<"${TERN_RUN_ARGS:-}"
ncpu=$(cmp_usable_cpus | wc -l)

# one NP SHAPE KIND : one run, its median step time (us) on stdout
one() {
  local np=$1 shape=$2 kind=$3 bind=auto extra=()
  ((np > ncpu)) && bind=none
  [[ $kind == before ]] && extra=(-x "TERN_ALGO=alltoall:pairwise;alltoallv:pairwise")
  local log="$results/np$np-$shape-$kind.log"
  cmp_run "$log" "$build/bin/tern-run" -n "$np" --bind-to "$bind" "${run_args[@]}" "${extra[@]}" -- \
    "$build/bin/moe_step" --tokens "${shape%x*}" --hidden "${shape#*x}" --experts-per-rank "$EXPERTS_PER_RANK" \
    --top-k "$TOPK" -n "$ITERS" -w "$WARMUP" >/dev/null || return 1
  awk '/moe_step ranks/ { for (i = 1; i <= NF; i++) if ($i == "median") v = $(i + 1) } END { print v }' <(tail -n 5 "$log")
}

cmp_machine_info | tee "$results/conditions.txt"
failed=0
for np in $NPS; do
  for shape in $SHAPES; do
    for ((r = 0; r < REPEATS; r++)); do
      while read -r kind; do
        t=$(one "$np" "$shape" "$kind") || { failed=1; continue; }
        echo "$np $shape $kind $t" | tee -a "$results/rows.txt"
      done < <(cmp_order "$r" before after)
    done
  done
done
{
  echo "# ===== MoE layer step (dispatch, combine, both backward), $EXPERTS_PER_RANK experts per rank, top-$TOPK," \
    "median step of $ITERS after $WARMUP, medians of $REPEATS rounds ${TERN_RUN_ARGS:-}"
  echo "# before: TERN_ALGO=alltoall:pairwise;alltoallv:pairwise (the FIFO schedule); after: tern's default"
  awk '
    function median(list,   v, n, i, j, x) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] + 0 > x + 0; j--) v[j + 1] = v[j]; v[j + 1] = x }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { key = $1 " " $2; t[key, $3] = t[key, $3] " " $4; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END {
      printf "%6s %12s %14s %14s %8s\n", "ranks", "tokens x h", "before us", "after us", "speedup"
      for (r = 1; r <= k; r++) {
        split(order[r], f, " ")
        tb = median(t[order[r], "before"]); ta = median(t[order[r], "after"])
        printf "%6s %12s %14.1f %14.1f %7.2fx\n", f[1], f[2], tb, ta, (ta > 0 ? tb / ta : 0)
      }
    }' "$results/rows.txt"
} | tee "$results/report.txt"
echo "# results: $results"
exit "$failed"
