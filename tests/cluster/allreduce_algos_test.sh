#!/usr/bin/env bash
# all_reduce_perf with its correctness check (-c 1) on 2 nodes x 2 ranks, with each algorithm forced (flat ring,
# hierarchical, recursive halving-doubling, tree) and compressed (bf16 checked, sign run): every size must report
# #wrong 0. Sizes are odd (uneven chunks) and reach past 4 x the 512 KiB pipeline chunk; iterations are few
# (correctness only).
# shellcheck source-path=SCRIPTDIR source=cluster_test_lib.sh
source "$(dirname "$0")/cluster_test_lib.sh"
tnc_up algos 2 1gbit || exit $?

# check_table WHAT: every data row of the last all_reduce_perf table in $OUT has #wrong 0 in both columns.
check_table() {
  local rows bad
  rows=$(grep -E '^\[0\] +[0-9]+ ' <<<"$OUT")
  [[ -n "$rows" ]] || fail "$1: no result rows"
  # Columns after the [0] tag: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
  bad=$(awk '$10 != "0" || $14 != "0"' <<<"$rows")
  [[ -z "$bad" ]] || fail "$1: wrong results: $bad"
  grep -q 'Out of bounds values : 0 OK' <<<"$OUT" || fail "$1: no 'Out of bounds values : 0 OK'"
  echo "== $1: $(wc -l <<<"$rows") sizes correct"
}

sizes=(-b 12 -e 5M -f 13 -n 2 -w 1 -c 1)
for algo in ring hier rhd tree; do
  launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" "${sizes[@]}" -A "$algo" || fail "-A $algo exited non-zero"
  check_table "-A $algo"
done
# Compressed, through the two-phase compressed schedule (sizes from TERN_COMPRESS_MIN_BYTES, 64 KiB, on). bf16 is
# exact on all_reduce_perf's data (integers 1..5 summed over 4 ranks), so -c 1 must find no wrong element. sign is
# lossy by design and all_reduce_perf's check is exact, so every element would count as wrong: it runs without the
# check, which still fails the run on any error (mismatched sizes, lost peers, timeouts).
launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" -b 4K -e 4M -f 32 -n 2 -w 1 -c 1 -Z bf16 ||
  fail "-Z bf16 exited non-zero"
check_table "-Z bf16"
launch -p 2 --timeout 100 -- "$BIN/all_reduce_perf" -b 4K -e 4M -f 32 -n 2 -w 1 -c 0 -Z sign ||
  fail "-Z sign exited non-zero"
grep -qE '^\[0\] +4194304 ' <<<"$OUT" || fail "-Z sign: no 4 MiB result"
echo "== -Z sign: ran (unchecked)"
echo PASS
