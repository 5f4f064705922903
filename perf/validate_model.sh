#!/usr/bin/env bash
# Validates the cost model against this machine: runs the allreduce perf binary on 2 ranks over shared memory, over
# TCP loopback (TERN_SHM_DISABLE=1) and, when a network-namespace cluster is available, on a simulated 2-node
# 1 Gb/s cluster (uncompressed and sign-compressed); fits a calibration to all of it (tern-calc --calibrate); then
# prints tern-calc's predicted busbw next to the measured one for every size, with the error, and a verdict against
# the acceptance bound (every size >= 1 MB within +-TOLERANCE, default 15%).
#
#   perf/validate_model.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2] ITERS [20] WARMUP [5]   the perf sweep (nccl-tests flags)
#   NP [2]                      ranks of the single-host runs
#   CLUSTER_NODES [2] CLUSTER_RANKS_PER_NODE [1] CLUSTER_RATE [1gbit] CLUSTER_ITERS [5]   the simulated cluster
#   CLUSTER_RUN                 command prefix that runs "tern-run ... all_reduce_perf ..." across the namespace
#                               cluster (see run_cluster below); default: tests/cluster/netns_cluster.sh if present
#   SKIP_CLUSTER [0]            1: single-host runs only
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
ITERS=${ITERS:-20} WARMUP=${WARMUP:-5} NP=${NP:-2}
CLUSTER_NODES=${CLUSTER_NODES:-2} CLUSTER_RANKS_PER_NODE=${CLUSTER_RANKS_PER_NODE:-1}
CLUSTER_RATE=${CLUSTER_RATE:-1gbit} CLUSTER_ITERS=${CLUSTER_ITERS:-5}
SKIP_CLUSTER=${SKIP_CLUSTER:-0} TOLERANCE=${TOLERANCE:-0.15}
results=${RESULTS_DIR:-$build/validate-model-$(date +%Y%m%d-%H%M%S)}

die() {
  echo "validate_model: $*" >&2
  exit 2
}

for tool in tern-run all_reduce_perf tern-calc; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build $build)"
done
mkdir -p "$results" || die "cannot create $results"

# run_perf NAME [ENV=VALUE...] [-- EXTRA PERF ARGS]: one single-host sweep into $results/NAME.json.
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
  echo "# $name: tern-run -n $NP all_reduce_perf -b $MINBYTES -e $MAXBYTES -f $STEPFACTOR ${envs[*]} ${extra[*]}"
  env "${envs[@]}" "$bin/tern-run" -n "$NP" "$bin/all_reduce_perf" -b "$MINBYTES" -e "$MAXBYTES" -f "$STEPFACTOR" \
    -n "$ITERS" -w "$WARMUP" -c 0 -J "$results/$name.json" "${extra[@]}" >"$results/$name.log" 2>&1 ||
    die "$name run failed, see $results/$name.log"
}

# run_cluster NAME [EXTRA PERF ARGS]: one sweep on the namespace cluster into $results/NAME.json.
#
# Hook: the cluster scripts live in tests/cluster/ (another part of the project). CLUSTER_RUN, when set, is a
# command prefix that must run its arguments as a tern-run job spread over CLUSTER_NODES network namespaces joined
# at CLUSTER_RATE, each namespace with its own TERN_HOSTID, e.g.
#   CLUSTER_RUN="tests/cluster/netns_cluster.sh run --nodes 2 --rate 1gbit --"
# Without it, tests/cluster/netns_cluster.sh is used with that same calling convention if it exists.
# TODO(cluster): confirm the helper's calling convention once tests/cluster/ has landed, and set the default here.
run_cluster() {
  local name=$1
  shift
  local prefix=()
  if [[ -n ${CLUSTER_RUN:-} ]]; then
    read -r -a prefix <<<"$CLUSTER_RUN"
  elif [[ -x $root/tests/cluster/netns_cluster.sh ]]; then
    prefix=("$root/tests/cluster/netns_cluster.sh" run --nodes "$CLUSTER_NODES" --rate "$CLUSTER_RATE" --)
  else
    return 3
  fi
  local np=$((CLUSTER_NODES * CLUSTER_RANKS_PER_NODE))
  echo "# $name: ${prefix[*]} tern-run -n $np all_reduce_perf ... $*"
  "${prefix[@]}" "$bin/tern-run" -n "$np" "$bin/all_reduce_perf" -b "$MINBYTES" -e "$MAXBYTES" -f "$STEPFACTOR" \
    -n "$CLUSTER_ITERS" -w 1 -c 0 -J "$results/$name.json" "$@" >"$results/$name.log" 2>&1 ||
    die "$name run failed, see $results/$name.log"
  # The perf JSON does not know how many hosts its ranks were on; tern-calc reads FILE@N.
  echo "$results/$name.json@$CLUSTER_NODES" >>"$results/cluster-files"
}

echo "# validate_model: results in $results"
echo "# machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
run_perf shm
run_perf tcp TERN_SHM_DISABLE=1

: >"$results/cluster-files"
have_cluster=0
if [[ $SKIP_CLUSTER == 1 ]]; then
  echo "# cluster: skipped (SKIP_CLUSTER=1)"
else
  run_cluster cluster
  rc=$?
  if [[ $rc -eq 3 ]]; then
    echo "# cluster: skipped: no namespace cluster (set CLUSTER_RUN, or add tests/cluster/netns_cluster.sh)"
  else
    run_cluster cluster-sign -Z sign
    have_cluster=1
  fi
fi

files=("$results/shm.json" "$results/tcp.json")
mapfile -t cluster_files <"$results/cluster-files"
files+=("${cluster_files[@]}")
inter=(--inter "eth:$CLUSTER_RATE")

echo
echo "# calibrating on ${#files[@]} file(s)"
"$bin/tern-calc" --calibrate "${files[@]}" "${inter[@]}" --min-size "$MINBYTES" -o "$results/tune.json" \
  >"$results/calibrate.txt" 2>&1 || { cat "$results/calibrate.txt"; die "calibration failed"; }
sed -n '1,/^residuals/p' "$results/calibrate.txt" | sed '$d'

verdict=0
check() {  # check TITLE FILE
  local title=$1 file=$2
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
    echo "=> $title: OUTSIDE +-$(awk -v t="$TOLERANCE" 'BEGIN { print t * 100 }')% (worst $(awk -v w="$worst" 'BEGIN { printf "%.1f", w * 100 }')%)"
    verdict=1
  fi
}
: >"$results/report.txt"
check "2 ranks, shared memory" "$results/shm.json"
check "2 ranks, TCP loopback" "$results/tcp.json"
if [[ $have_cluster -eq 1 ]]; then
  check "$CLUSTER_NODES-node $CLUSTER_RATE cluster" "${cluster_files[0]}"
  check "$CLUSTER_NODES-node $CLUSTER_RATE cluster, sign-compressed" "${cluster_files[1]}"
fi

echo
echo "# calibration file: $results/tune.json (TERN_TUNE_FILE=$results/tune.json, or tern-calc --tune)"
exit $verdict
