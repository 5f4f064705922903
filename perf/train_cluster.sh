#!/usr/bin/env bash
# train_cluster.sh: train_mlp --mode ddp on a simulated 2-node cluster with 1 Gb/s links (one rank per node), in
# three configurations, and the comparison the training layers promise:
#   baseline      --mode ddp                      (overlap on, no compression)
#   sign          --mode ddp --compress sign      same accuracy (within 1 point), step time >= 3x shorter
#   no-overlap    --mode ddp --no-overlap         exposed communication higher than the baseline's
#
# Usage: perf/train_cluster.sh [BIN_DIR] [-- EXTRA train_mlp FLAGS]
#   BIN_DIR   the build's bin directory (default: build/bin), holding train_mlp and tern-run
# Environment: RATE (default 1gbit), NODES (2), PER_NODE (ranks per node, 1), TERN_TIMEOUT (120), ROUNDS (3: every
#   configuration runs that many times, in an order rotating from round to round; the table gives medians with the
#   spread (min..max) of step and exposed-communication time, and the checks judge the medians).
# Needs root with ip/tc for the namespaces (tests/cluster/netns_cluster.sh); without them it runs the same jobs
# on this machine with tern-run and says so: those numbers show the mechanics, not a 1 Gb/s network.
# Exit status: 0 when every check holds, 1 when one does not, 2 on a failed run.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(readlink -f "${1:-$ROOT/build/bin}")
shift $(($# > 0 ? 1 : 0))
[[ "${1:-}" == "--" ]] && shift
EXTRA=("$@")
RATE=${RATE:-1gbit}
NODES=${NODES:-2}
PER_NODE=${PER_NODE:-1}
export TERN_TIMEOUT=${TERN_TIMEOUT:-120}
ROUNDS=${ROUNDS:-3}
((ROUNDS >= 3)) || {
  echo "train_cluster: ROUNDS must be at least 3 (a median needs three runs), not $ROUNDS" >&2
  exit 2
}

for f in train_mlp tern-run; do
  [[ -x "$BIN/$f" ]] || {
    echo "train_cluster: $BIN/$f not found (build first: cmake --build build)" >&2
    exit 2
  }
done

MODE=local
CLUSTER_SCRIPT=$ROOT/tests/cluster/netns_cluster.sh
if [[ -f "$CLUSTER_SCRIPT" ]]; then
  # shellcheck source=../tests/cluster/netns_cluster.sh
  source "$CLUSTER_SCRIPT"
  export TNC_TERN_RUN=$BIN/tern-run
  if tnc_up train "$NODES" "$RATE"; then
    MODE=cluster
  else
    echo "train_cluster: NOTE: no simulated cluster here (see above); running locally instead" >&2
  fi
else
  echo "train_cluster: NOTE: $CLUSTER_SCRIPT not found; running locally instead" >&2
fi

# Runs one configuration; prints its output and leaves rank 0's summary line in SUMMARY.
run_config() {
  local out rc=0
  out=$(mktemp)
  if [[ "$MODE" == cluster ]]; then
    tnc_launch -p "$PER_NODE" --timeout 900 -- "$BIN/train_mlp" "$@" "${EXTRA[@]}" >"$out" 2>&1 || rc=$?
  else
    "$BIN/tern-run" -n $((NODES * PER_NODE)) --timeout 900 "$BIN/train_mlp" "$@" "${EXTRA[@]}" >"$out" 2>&1 || rc=$?
  fi
  grep -E "train_mlp:|epoch |ddp:|summary" "$out" | sed 's/^/    /'
  SUMMARY=$(grep -o "summary .*" "$out" | head -1)
  if ((rc != 0)) || [[ -z "$SUMMARY" ]]; then
    echo "train_cluster: run failed (exit $rc):" >&2
    tail -20 "$out" >&2
    rm -f "$out"
    exit 2
  fi
  rm -f "$out"
}

field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

# median KEY / spread KEY over the space-separated samples in SAMPLES[KEY] (median of an even count: the mean of
# the middle two).
declare -A SAMPLES
stat() {
  awk -v what="${2:-median}" '{
    n = split($0, v, " ")
    for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    if (n == 0) { print "-"; exit }
    if (what == "spread") { printf "%g..%g\n", v[1], v[n]; exit }
    print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }' <<<"${SAMPLES[$1]:-}"
}

configs=(baseline sign no-overlap)
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < ${#configs[@]}; k++)); do
    cfg=${configs[(k + round - 1) % ${#configs[@]}]}
    case $cfg in
      baseline) args=(--mode ddp) ;;
      sign) args=(--mode ddp --compress sign) ;;
      no-overlap) args=(--mode ddp --no-overlap) ;;
    esac
    echo "== $cfg (round $round/$ROUNDS): train_mlp ${args[*]} ${EXTRA[*]}  ($MODE, $NODES nodes x $PER_NODE, link $RATE)"
    run_config "${args[@]}"
    for f in test_acc step_ms compute_ms exposed_comm_ms wall_s; do
      SAMPLES[$cfg/$f]="${SAMPLES[$cfg/$f]:-} $(field "$SUMMARY" "$f")"
    done
  done
done

echo
echo "# medians of $ROUNDS rounds; spreads are min..max"
printf "%-11s %9s %10s %15s %11s %17s %19s %8s\n" config test_acc step_ms step_spread compute_ms exposed_comm_ms \
  exposed_spread wall_s
for cfg in "${configs[@]}"; do
  printf "%-11s %8s%% %10s %15s %11s %17s %19s %8s\n" "$cfg" "$(stat "$cfg/test_acc")" "$(stat "$cfg/step_ms")" \
    "$(stat "$cfg/step_ms" spread)" "$(stat "$cfg/compute_ms")" "$(stat "$cfg/exposed_comm_ms")" \
    "$(stat "$cfg/exposed_comm_ms" spread)" "$(stat "$cfg/wall_s")"
done
echo

status=0
check() {  # description, awk condition over a b
  if awk -v a="$2" -v b="$3" "BEGIN { exit !($4) }"; then
    echo "PASS  $1"
  else
    echo "FAIL  $1"
    status=1
  fi
}
acc_b=$(stat baseline/test_acc)
acc_s=$(stat sign/test_acc)
step_b=$(stat baseline/step_ms)
step_s=$(stat sign/step_ms)
exp_b=$(stat baseline/exposed_comm_ms)
exp_n=$(stat no-overlap/exposed_comm_ms)
check "sign reaches the baseline's accuracy within 1 point ($acc_s% vs $acc_b%)" "$acc_s" "$acc_b" "a >= b - 1"
check "sign's step time is >= 3x shorter ($step_s ms vs $step_b ms: $(awk -v a="$step_b" -v b="$step_s" \
  'BEGIN { printf "%.2fx", a / b }'))" "$step_b" "$step_s" "a >= 3 * b"
check "exposed communication with overlap is lower than without ($exp_b ms vs $exp_n ms)" "$exp_b" "$exp_n" "a < b"
[[ "$MODE" == local ]] && echo "NOTE: local run (no simulated 1 Gb/s cluster): the timing checks are not meaningful here"
exit "$status"
