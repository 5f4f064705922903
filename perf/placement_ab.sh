#!/usr/bin/env bash
# Configurations of one perf binary side by side, each round tagged with where the VM's vCPUs sit. On some VMs the
# two CPUs share a cache for a while and then do not (a cache-line round trip of under 100 ns against several
# hundred), and which shared-memory form pays flips with it (staging's copies cross cores twice, a kernel copy once),
# so an A/B that ignores the placement compares noise. Each round probes the placement (placement_probe), then runs
# every configuration once in a rotating order; the report groups the rounds by placement and gives, per
# configuration and size, the range of the times (out of place, or in place with PLACE=in).
#
#   perf/placement_ab.sh [BUILD_DIR=build]
#   # reduce: the default (learned) against forced CMA and forced staging
#   PERF=reduce_perf CONFIGS="default TERN_ALGO=reduce:shm_cma TERN_ALGO=reduce:^shm_cma" perf/placement_ab.sh build
#
# Environment (defaults in brackets): PERF [all_reduce_perf] CONFIGS ["default TERN_ALGO=^shm_cma"] (each a
#   NAME=VALUE set for every rank, or "default" for none) ARGS ["-b 64K -e 1M -f 16 -n 200 -w 20"] ROUNDS [10]
#   NP [2] SLOW_NS [200] (round trips at or above it count as the slow placement) PLACE [out] (out: the
#   out-of-place column; in: the in-place one) PLACEMENT_PROBE [BUILD_DIR/bin/placement_probe]
#   RESULTS_DIR [BUILD_DIR/perf-compare/placement-ab-DATE]
# A benchmark, not a test: exit code 0 whatever the times, non-zero only when a run failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"
build=$(cmp_resolve_build "${1:-build}")
PERF=${PERF:-all_reduce_perf} CONFIGS=${CONFIGS:-default TERN_ALGO=^shm_cma}
ARGS=${ARGS:--b 64K -e 1M -f 16 -n 200 -w 20} ROUNDS=${ROUNDS:-10} NP=${NP:-2} SLOW_NS=${SLOW_NS:-200}
PLACE=${PLACE:-out}
[[ $PLACE == out || $PLACE == in ]] || cmp_die "PLACE must be out or in, not $PLACE"
column="out-of-place"
[[ $PLACE == in ]] && column="in-place"
PLACEMENT_PROBE=${PLACEMENT_PROBE:-$build/bin/placement_probe}
[[ -x $PLACEMENT_PROBE ]] || cmp_die "$PLACEMENT_PROBE not found: build first (make build)"
results=${RESULTS_DIR:-$build/perf-compare/placement-ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
read -r -a configs <<<"$CONFIGS"
read -r -a perf_args <<<"$ARGS"
rows=$results/rows.txt
: >"$rows"
failed=0
for ((r = 0; r < ROUNDS; r++)); do
  ns=$(cmp_placement "$results/placement.log" | awk '/cache-line round trip/ { printf "%.0f", $(NF - 1) }')
  [[ -n $ns ]] || ns=0
  place=fast
  ((ns >= SLOW_NS)) && place=slow
  while read -r config; do
    env_args=()
    [[ $config == default ]] || env_args=(-x "$config")
    log=$results/round$r-${config//[^A-Za-z0-9_.-]/_}.log
    if ! cmp_run "$log" "$build/bin/tern-run" -n "$NP" "${env_args[@]}" -- "$build/bin/$PERF" "${perf_args[@]}" \
      >/dev/null; then
      failed=1
      continue
    fi
    cmp_parse_nccl "$PLACE" <"$log" | awk -v p="$place" -v c="$config" -v ns="$ns" '{ print p, ns, c, $1, $3 }' >>"$rows"
  done < <(cmp_order "$r" "${configs[@]}")
  echo "## round $((r + 1)) of $ROUNDS: placement $ns ns ($place)"
done
{
  echo "# ===== $PERF $ARGS, $NP ranks: $column time (us), min..max over the rounds in each placement"
  echo "# placement: slow = cache-line round trip >= $SLOW_NS ns between the first two CPUs"
  awk '
    {
      key = $1 SUBSEP $3 SUBSEP $4
      if (!(key in lo) || $5 < lo[key]) lo[key] = $5
      if (!(key in hi) || $5 > hi[key]) hi[key] = $5
      n[key]++
    }
    END {
      for (key in lo) {
        split(key, k, SUBSEP)
        printf "%-5s %-40s %12s  %10.2f..%-10.2f (%d rounds)\n", k[1], k[2], k[3], lo[key], hi[key], n[key]
      }
    }' "$rows" | sort -k1,1 -k2,2 -k3,3n
} | tee "$results/report.txt"
echo "# results: $results"
exit "$failed"
