#!/usr/bin/env bash
# Validates the cost model against this machine: runs the allreduce perf binary on 2 ranks over shared memory (as
# selected, and with the ring schedule forced), over TCP loopback (TERN_SHM_DISABLE=1) and, when a network-namespace cluster is available, on a simulated 2-node
# 1 Gb/s cluster (uncompressed and sign-compressed); fits a calibration to all of it (tern-calc --calibrate); then
# prints tern-calc's predicted busbw next to the measured one for every size, with the error, and a verdict against
# the acceptance bound (every size >= 1 MB within +-TOLERANCE, default 15%).
#
#   perf/validate_model.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2] ITERS [20] WARMUP [5]   the perf sweep (nccl-tests flags)
#   NP [2]                      ranks of the single-host runs
#   REPEATS [3]                 sweeps per configuration; the report uses each size's median time (a 2-core machine
#                               shared with other work varies by 15-30% from run to run at some sizes)
#   CLUSTER_NODES [2] CLUSTER_RANKS_PER_NODE [1] CLUSTER_RATE [1gbit] CLUSTER_ITERS [5]   the simulated cluster
#                               (tests/cluster/netns_cluster.sh: network namespaces joined by tbf-shaped links;
#                               needs root, ip and tc, else the cluster part is skipped with a message)
#   SKIP_CLUSTER [0]            1: single-host runs only
#   RT [10]                     run the ranks SCHED_FIFO at this priority (chrt -f; 0: normal priority). On a
#                               shared 2-core machine other processes' time slices otherwise delay the ranks'
#                               wake-ups, and the numbers measure the load instead of tern.
#   TOLERANCE [0.15]            acceptance bound on |busbw predicted / measured - 1|
#   RESULTS_DIR [BUILD_DIR/validate-model-DATE]   perf JSON, logs, the calibration file, the report
# Exit code: 0 when every compared size is within the bound, 1 when one is not, 2 when a tool failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build="$root/$build"
bin="$build/bin"
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITERS=${ITERS:-20} WARMUP=${WARMUP:-5} NP=${NP:-2} REPEATS=${REPEATS:-3}
CLUSTER_NODES=${CLUSTER_NODES:-2} CLUSTER_RANKS_PER_NODE=${CLUSTER_RANKS_PER_NODE:-1}
CLUSTER_RATE=${CLUSTER_RATE:-1gbit} CLUSTER_ITERS=${CLUSTER_ITERS:-5}
SKIP_CLUSTER=${SKIP_CLUSTER:-0} TOLERANCE=${TOLERANCE:-0.15} RT=${RT:-10}
results=${RESULTS_DIR:-$build/validate-model-$(date +%Y%m%d-%H%M%S)}

die() {
  echo "validate_model: $*" >&2
  exit 2
}

for tool in tern-run all_reduce_perf tern-calc; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build $build)"
done
mkdir -p "$results" || die "cannot create $results"

# median_json OUT IN...: one perf JSON whose out-of-place times are each size's median over the inputs (the first
# input's other fields). Without python3, the first input as it is.
median_json() {
  local out=$1
  shift
  if ! command -v python3 >/dev/null; then
    cp "$1" "$out"
    return
  fi
  python3 - "$out" "$@" <<'PY'
import json, statistics, sys
out, ins = sys.argv[1], sys.argv[2:]
docs = [json.load(open(f)) for f in ins]
merged = docs[0]
for i, r in enumerate(merged["results"]):
    times = [d["results"][i]["out_of_place"]["time_us"] for d in docs if i < len(d["results"])]
    o = r["out_of_place"]
    factor = o["busbw"] / o["algbw"] if o.get("algbw") else 1.0
    o["time_us"] = statistics.median(times)
    o["algbw"] = r["size"] / 1e3 / o["time_us"]
    o["busbw"] = o["algbw"] * factor
    r["repeats_us"] = times
json.dump(merged, open(out, "w"), indent=2)
PY
}

# run_perf NAME [ENV=VALUE...] [-- EXTRA PERF ARGS]: REPEATS single-host sweeps, merged into $results/NAME.json.
run_perf() {
  local name=$1
  shift
  local envs=() extra=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  [[ ${1:-} == -- ]] && shift
  extra=("$@")
  echo "# $name: tern-run -n $NP all_reduce_perf -b $MINBYTES -e $MAXBYTES -f $STEPFACTOR ${envs[*]} ${extra[*]}" \
    "(x$REPEATS)"
  local reps=()
  for ((i = 1; i <= REPEATS; ++i)); do
    env "${envs[@]}" "${rt[@]}" "$bin/tern-run" -n "$NP" "$bin/all_reduce_perf" -b "$MINBYTES" -e "$MAXBYTES" \
      -f "$STEPFACTOR" -n "$ITERS" -w "$WARMUP" -c 0 -J "$results/$name.$i.json" "${extra[@]}" \
      >"$results/$name.$i.log" 2>&1 || die "$name run failed, see $results/$name.$i.log"
    reps+=("$results/$name.$i.json")
  done
  median_json "$results/$name.json" "${reps[@]}"
}

# The cluster sweeps (uncompressed, then sign-compressed) on a network-namespace cluster of CLUSTER_NODES nodes
# joined at CLUSTER_RATE, with tests/cluster/netns_cluster.sh. Runs in a subshell: the library's EXIT trap tears
# the cluster down when it ends. Returns 77 when namespaces cannot be made here.
run_cluster() {
  local lib=$root/tests/cluster/netns_cluster.sh
  [[ -f $lib ]] || return 77
  (
    # shellcheck source=../tests/cluster/netns_cluster.sh
    source "$lib"
    export TNC_TERN_RUN=$bin/tern-run
    tnc_up validate "$CLUSTER_NODES" "$CLUSTER_RATE" >"$results/cluster-up.log" 2>&1 || exit $?
    launch_rt=()
    [[ $RT != 0 ]] && launch_rt=(--rt "$RT")
    for name in cluster cluster-sign; do
      extra=()
      [[ $name == cluster-sign ]] && extra=(-Z sign)
      echo "# $name: $CLUSTER_NODES nodes x $CLUSTER_RANKS_PER_NODE at $CLUSTER_RATE: all_reduce_perf ${extra[*]}" \
        "(x$REPEATS)"
      reps=()
      for ((i = 1; i <= REPEATS; ++i)); do
        tnc_launch "${launch_rt[@]}" -p "$CLUSTER_RANKS_PER_NODE" -- "$bin/all_reduce_perf" -b "$MINBYTES" \
          -e "$MAXBYTES" -f "$STEPFACTOR" -n "$CLUSTER_ITERS" -w 1 -c 0 -J "$results/$name.$i.json" "${extra[@]}" \
          >"$results/$name.$i.log" 2>&1 || {
          echo "validate_model: $name run failed, see $results/$name.$i.log" >&2
          exit 2
        }
        reps+=("$results/$name.$i.json")
      done
      median_json "$results/$name.json" "${reps[@]}"
      # The perf JSON does not know how many hosts its ranks were on; tern-calc reads FILE@N.
      echo "$results/$name.json@$CLUSTER_NODES" >>"$results/cluster-files"
    done
    tnc_down
  )
}

rt=()
if [[ $RT != 0 ]] && chrt -f "$RT" true 2>/dev/null; then
  rt=(chrt -f "$RT")
elif [[ $RT != 0 ]]; then
  echo "# note: cannot run SCHED_FIFO here (chrt -f $RT failed); measuring at normal priority"
  RT=0
fi

echo "# validate_model: results in $results"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load" \
  "$(cut -d' ' -f1-3 /proc/loadavg); ranks $([[ $RT != 0 ]] && echo "SCHED_FIFO $RT" || echo "at normal priority")"
run_perf shm
# The schedules over the shm transport too (forced, so the direct path stays out): without it the shm link class
# stays at its default, and the model would compare a measured direct path against an unmeasured alternative.
run_perf shm-ring TERN_ALGO=ring
run_perf tcp TERN_SHM_DISABLE=1

: >"$results/cluster-files"
have_cluster=0
if [[ $SKIP_CLUSTER == 1 ]]; then
  echo "# cluster: skipped (SKIP_CLUSTER=1)"
else
  run_cluster
  rc=$?
  if [[ $rc -eq 77 ]]; then
    echo "# cluster: SKIPPED: cannot create network namespaces here (need root, ip and tc; see $results/cluster-up.log)"
  elif [[ $rc -ne 0 ]]; then
    die "cluster runs failed"
  else
    have_cluster=1
  fi
fi

files=("$results/shm.json" "$results/shm-ring.json" "$results/tcp.json")
mapfile -t cluster_files <"$results/cluster-files"
files+=("${cluster_files[@]}")
inter=(--inter "eth:$CLUSTER_RATE")

echo
echo "# calibrating on ${#files[@]} file(s)"
"$bin/tern-calc" --calibrate "${files[@]}" "${inter[@]}" --min-size "$MINBYTES" -o "$results/tune.json" \
  >"$results/calibrate.txt" 2>&1 || { cat "$results/calibrate.txt"; die "calibration failed"; }
sed -n '1,/^residuals/p' "$results/calibrate.txt" | sed '$d'

verdict=0
check() {  # check TITLE FILE [info]   (info: reported, but not part of the verdict)
  local title=$1 file=$2 info=${3:-}
  echo
  echo "## $title: predicted (tern-calc, calibrated) vs measured busbw"
  "$bin/tern-calc" --check "$file" --tune "$results/tune.json" "${inter[@]}" --min-size "$MINBYTES" \
    | tee -a "$results/report.txt" || die "tern-calc --check failed"
  local worst
  worst=$("$bin/tern-calc" --check "$file" --tune "$results/tune.json" "${inter[@]}" --min-size "$MINBYTES" --json |
    grep -m1 '"worst_busbw_error"' | sed 's/.*: *//; s/,$//')
  if awk -v w="$worst" -v t="$TOLERANCE" 'BEGIN { exit !(w <= t) }'; then
    echo "=> $title: within +-$(awk -v t="$TOLERANCE" 'BEGIN { print t * 100 }')% (worst $(awk -v w="$worst" 'BEGIN { printf "%.1f", w * 100 }')%)"
  else
    echo "=> $title: OUTSIDE +-$(awk -v t="$TOLERANCE" 'BEGIN { print t * 100 }')% (worst $(awk -v w="$worst" 'BEGIN { printf "%.1f", w * 100 }')%)${info:+ (informational)}"
    [[ -n $info ]] || verdict=1
  fi
}
: >"$results/report.txt"
check "2 ranks, shared memory" "$results/shm.json"
check "2 ranks, TCP loopback" "$results/tcp.json"
# The ring schedule over shm calibrates the shm link class the planner compares the direct path against; it is not
# what runs by default, so it is reported for information (its 1-2 MiB points swing +-40% from run to run here).
check "2 ranks, shared memory, ring schedule (TERN_ALGO=ring; informational)" "$results/shm-ring.json" info
if [[ $have_cluster -eq 1 ]]; then
  check "$CLUSTER_NODES-node $CLUSTER_RATE cluster" "${cluster_files[0]}"
  check "$CLUSTER_NODES-node $CLUSTER_RATE cluster, sign-compressed" "${cluster_files[1]}"
fi

# The PNG: measured busbw per configuration, with the calibrated model's prediction (not the perf runs' own
# uncalibrated predicted_us) as the dashed line: each file's predicted_us is replaced by tern-calc --check's.
plot_inputs=()
with_calibrated() {  # with_calibrated LABEL FILE[@NODES]
  local label=$1 spec=$2 file=${2%@*} out
  out=${file%.json}.calibrated.json
  "$bin/tern-calc" --check "$spec" --tune "$results/tune.json" "${inter[@]}" --min-size "$MINBYTES" --json \
    >"$out.check" 2>/dev/null || return 0
  /usr/bin/python3 - "$file" "$out.check" "$out" <<'PY' || return 0
import json, sys
run, check = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pred = {int(p["size"]): p["predicted_us"] for p in check.get("points", [])}
run["results"] = [dict(r, predicted_us=pred[r["size"]]) for r in run["results"] if r["size"] in pred]
json.dump(run, open(sys.argv[3], "w"))
PY
  plot_inputs+=("$label=$out")
}
with_calibrated "shm, 2 ranks" "$results/shm.json"
with_calibrated "TCP loopback, 2 ranks" "$results/tcp.json"
if [[ $have_cluster -eq 1 ]]; then
  with_calibrated "2 nodes $CLUSTER_RATE" "${cluster_files[0]}"
  with_calibrated "2 nodes $CLUSTER_RATE, sign" "${cluster_files[1]}"
fi
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 "$here/plot.py" -o "$results/validate-model.png" \
  --title "allreduce float32: measured (solid) vs calibrated tern-calc (dashed)" "${plot_inputs[@]}" \
  >"$results/plot.log" 2>&1; then
  echo
  echo "# plot: $results/validate-model.png"
else
  echo
  echo "# plot: not made (needs /usr/bin/python3 with matplotlib; see $results/plot.log)"
fi

echo
echo "# calibration file: $results/tune.json (TERN_TUNE_FILE=$results/tune.json, or tern-calc --tune)"
exit $verdict
