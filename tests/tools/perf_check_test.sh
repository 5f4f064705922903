#!/usr/bin/env bash
# The perf binaries' uncompressed correctness check (-c 1, the #wrong column) on every collective, datatype and op
# they accept, at odd element counts, on 2 and 3 ranks (reduce and broadcast with root 1, so that both a root and
# non-roots off rank 0 are checked), then with every catalogue algorithm forced on three datatypes: every run must
# exit 0 with "# Out of bounds values : 0 OK" and a 0 in every #wrong column. What -c 1 checks (every element bit
# for bit against tests/common/reference.hpp, the elements a collective must leave alone included) is described
# in perf/common/perf_harness.cpp. Library mutations it was seen to catch: avg dividing by n-1, avg multiplying by
# the fp32 reciprocal, fp32->fp16 conversion truncating (TERN_REDUCE_ISA=scalar), the ring allgather dropping its
# last element, reduce writing into a non-root's receive buffer, reduce-scatter writing one element past its
# output, allreduce writing into its send buffer.
#
#   perf_check_test.sh BIN_DIR      BIN_DIR holds tern-run and the *_perf binaries
set -euo pipefail

BIN=${1:?usage: $0 BIN_DIR (holding tern-run and the *_perf binaries)}
export TERN_SOCKET_IFNAME=${TERN_SOCKET_IFNAME:-lo}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

TYPES=(int8 uint8 int32 uint32 int64 uint64 half float double bfloat16)
# Sizes 7, 263, 519, 775, 1031 bytes: odd element counts for every 1-byte type, and counts that do not divide by
# the rank count before the binaries round them.
SIZES=(-b 7 -e 1031 -i 256)
failures=0
runs=0

# check_run RANKS BINARY ARGS... : one run, judged by its exit code, its summary line and every row's #wrong.
check_run() {
  local ranks=$1 binary=$2
  shift 2
  local log=$WORK/out rc attempt
  runs=$((runs + 1))
  # Another job on the machine can take the bootstrap port between tern-run choosing it and rank 0 binding it;
  # only that launch failure is retried.
  for attempt in 1 2 3; do
    rc=0
    timeout 60 "$BIN/tern-run" -n "$ranks" --no-tag-output "$BIN/$binary" "${SIZES[@]}" -n 1 -w 0 -c 1 "$@" \
      >"$log" 2>&1 || rc=$?
    [[ $rc != 0 ]] && grep -q 'Address already in use' "$log" || break
  done
  local why=""
  if [[ $rc != 0 ]]; then
    why="exit code $rc"
  elif ! grep -q '^# Out of bounds values : 0 OK' "$log"; then
    why="no '# Out of bounds values : 0 OK' line"
  else
    # Data rows: size count type redop root, then time algbw busbw #wrong twice (out of place, in place).
    local rows bad
    rows=$(awk '$1 ~ /^[0-9]+$/ && NF == 13' "$log" | wc -l)
    bad=$(awk '$1 ~ /^[0-9]+$/ && NF == 13 && ($9 != "0" || $13 != "0")' "$log" | wc -l)
    # With -A ALGO every size must say it ran ALGO (the "#  SIZE B and up: NAME" lines, ternCommLastAlgorithm).
    local forced="" arg prev="" ran others
    for arg in "$@"; do
      [[ $prev == -A ]] && forced=$arg
      prev=$arg
    done
    ran=$(grep -cE '^#  [0-9]+ B and up: ' "$log" || true)
    others=$(grep -E '^#  [0-9]+ B and up: ' "$log" | grep -vcE ": $forced\$" || true)
    if [[ $rows == 0 ]]; then
      why="no result rows"
    elif [[ $bad != 0 ]]; then
      why="$bad rows with #wrong != 0"
    elif [[ $ran == 0 ]]; then
      why="no '#  SIZE B and up: ALGORITHM' line"
    elif [[ -n $forced && $others != 0 ]]; then
      why="-A $forced, but the table says another algorithm ran"
    fi
  fi
  if [[ -n $why ]]; then
    echo "FAIL: tern-run -n $ranks $binary ${SIZES[*]} -c 1 $*: $why" >&2
    sed 's/^/    /' "$log" >&2
    failures=$((failures + 1))
  fi
}

for ranks in 2 3; do
  for t in "${TYPES[@]}"; do
    check_run "$ranks" all_reduce_perf -d "$t" -o all
    check_run "$ranks" reduce_scatter_perf -d "$t" -o all
    check_run "$ranks" reduce_perf -d "$t" -o all -r 1
    check_run "$ranks" broadcast_perf -d "$t" -r 1
    check_run "$ranks" all_gather_perf -d "$t"
    check_run "$ranks" alltoall_perf -d "$t"
    check_run "$ranks" sendrecv_perf -d "$t"
  done
done

# Every catalogue algorithm forced (-A; every size must report that it ran it), with 1000-byte pipeline chunks so that chunking and pipelining take part
# at these sizes (up to 17 chunks, the last one short): an integer, a half and a float type (odd counts for int8
# at every size).
SIZES=(-b 7 -e 20000 -f 7)
export TERN_CHUNK_BYTES=1000
for ranks in 2 3; do
  for t in int8 half float; do
    for a in ring tree dbtree rd rhd hier; do check_run "$ranks" all_reduce_perf -d "$t" -o all -A "$a"; done
    for a in ring rh hier; do check_run "$ranks" reduce_scatter_perf -d "$t" -o all -A "$a"; done
    for a in chain binomial; do check_run "$ranks" reduce_perf -d "$t" -o all -r 1 -A "$a"; done
    for a in chain binomial scatter_allgather; do check_run "$ranks" broadcast_perf -d "$t" -r 1 -A "$a"; done
    for a in ring rd bruck hier; do check_run "$ranks" all_gather_perf -d "$t" -A "$a"; done
    for a in pairwise bruck; do check_run "$ranks" alltoall_perf -d "$t" -A "$a"; done
  done
done

if [[ $failures != 0 ]]; then
  echo "FAIL: $failures of $runs perf runs reported wrong elements or failed" >&2
  exit 1
fi
echo "OK: $runs perf runs, every #wrong 0"
