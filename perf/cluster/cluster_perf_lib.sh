# shellcheck shell=bash
# Shared by perf/cluster/*.sh; sourced, not run. Sets BIN (the build's bin directory: $1, default build/bin),
# brings in tests/cluster/netns_cluster.sh and provides perf_run, which runs all_reduce_perf on the current cluster
# and reads its JSON record.
set -uo pipefail

PERF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(readlink -f "${1:-$PERF_ROOT/build/bin}")
for f in tern-run all_reduce_perf; do
  [[ -x "$BIN/$f" ]] || {
    echo "$(basename "$0"): $BIN/$f not found (build first, or give the build's bin directory)" >&2
    exit 2
  }
done
# shellcheck source-path=SCRIPTDIR source=../../tests/cluster/netns_cluster.sh
source "$PERF_ROOT/tests/cluster/netns_cluster.sh"
# shellcheck source-path=SCRIPTDIR source=../compare/common.sh
source "$PERF_ROOT/perf/compare/common.sh"
export TNC_TERN_RUN=$BIN/tern-run
export TERN_TIMEOUT=${TERN_TIMEOUT:-120}
# Real-time priority for the ranks (tnc_launch --rt): on a shared machine other processes' time slices otherwise
# delay every wake-up of a rank, and the results measure the machine's load instead of the links. 0 turns it off.
PERF_RT=${PERF_RT:-10}
RT_OPT=()
[[ "$PERF_RT" != 0 ]] && RT_OPT=(--rt "$PERF_RT")
PERF_WORK=$(mktemp -d)
PERF_LOG=${PERF_LOG:-$PERF_WORK/log}
: >>"$PERF_LOG"

# perf_run NAME LAUNCH_OPTIONS... -- ALL_REDUCE_PERF_ARGS...
# Runs one measurement; its output goes to $PERF_LOG; sets R_ALGO R_TIME_US R_BUSBW R_BUSBW_IN R_ALGBW (out-of-place
# unless said) from the JSON record of the first size. Returns non-zero (and prints the output) when the run fails.
perf_run() {
  local name=$1 launch=() json=$PERF_WORK/$1.json
  shift
  while (($#)) && [[ "$1" != -- ]]; do
    launch+=("$1")
    shift
  done
  shift
  rm -f "$json"
  local cmd=(tnc_launch "${RT_OPT[@]}" "${launch[@]}" -- "$BIN/all_reduce_perf" -J "$json" "$@")
  {
    echo "### $name: ${cmd[*]}"
  } >>"$PERF_LOG"
  if ! "${cmd[@]}" >>"$PERF_LOG" 2>&1 || [[ ! -s "$json" ]]; then
    echo "$name: run failed: ${cmd[*]}" >&2
    tail -n 30 "$PERF_LOG" >&2
    return 1
  fi
  local fields
  fields=$(python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
o, i = r["out_of_place"], r["in_place"]
print((r["algorithm"] or "?").replace(" ", ""), o["time_us"], o["busbw"], i["busbw"], o["algbw"], i["time_us"])
EOF
  ) || return 1
  # shellcheck disable=SC2034  # results for the calling script
  read -r R_ALGO R_TIME_US R_BUSBW R_BUSBW_IN R_ALGBW R_TIME_IN_US <<<"$fields"
  R_BUSBW=$(fmt_bw "$R_BUSBW")
  R_BUSBW_IN=$(fmt_bw "$R_BUSBW_IN")
  echo "  $name: algorithm $R_ALGO, out-of-place $(fmt_ms "$R_TIME_US") ms busbw $R_BUSBW GB/s," \
    "in-place $(fmt_ms "$R_TIME_IN_US") ms busbw $R_BUSBW_IN GB/s" >&2
}

# One line on the conditions of the measurement: machine load and the ranks' scheduling.
perf_conditions() {
  echo "# machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); ranks $([[ "$PERF_RT" != 0 ]] &&
    echo "SCHED_FIFO $PERF_RT (PERF_RT)" || echo "normal priority (PERF_RT=0)")"
}

# Samples over repeated rounds. Every benchmark here runs each configuration ROUNDS (>= 3) times and reports the
# median with the spread (min..max); targets are judged on the median.
declare -A PERF_SAMPLES=()
# sample_add KEY VALUE
sample_add() { PERF_SAMPLES[$1]="${PERF_SAMPLES[$1]:-} $2"; }
# sample_stat KEY median|min|max|n|list : over KEY's samples (median of an even count: the mean of the middle two;
# list: the distinct values in first-seen order, joined by "/", for names such as algorithms).
sample_stat() {
  awk -v what="$2" '{
    n = split($0, v, " ")
    if (what == "list") {
      out = ""
      for (i = 1; i <= n; i++) if (!(v[i] in seen)) { seen[v[i]] = 1; out = out (out == "" ? "" : "/") v[i] }
      print out
      exit
    }
    for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    if (what == "n") print n
    else if (n == 0) print 0
    else if (what == "min") print v[1]
    else if (what == "max") print v[n]
    else print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }' <<<"${PERF_SAMPLES[$1]:-}"
}
# sample_spread KEY FORMAT_FN : "min..max" of KEY's samples through a formatter (fmt_ms, fmt_bw, ...).
sample_spread() { echo "$("$2" "$(sample_stat "$1" min)")..$("$2" "$(sample_stat "$1" max)")"; }
# rotate K WORD... : the words rotated left by K (which configuration runs first changes from round to round);
# the compare scripts' cmp_order.
rotate() { cmp_order "$@"; }

fmt_bw() { awk -v x="$1" 'BEGIN { printf "%.4f", x }'; }
fmt_ms() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'; }
calc() { awk "BEGIN { printf \"%.4g\", $* }"; }
# ge A B: true when A >= B (floats).
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
