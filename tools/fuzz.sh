#!/usr/bin/env bash
# Runs tern's libFuzzer targets (tests/fuzz), each for a given time, starting from its committed corpus
# (tests/fuzz/corpus/<target>). Builds them first (build-fuzz, clang, TERN_FUZZ=ON) unless --bin is given.
#
#   tools/fuzz.sh [--seconds N] [--bin DIR] [--work DIR] [--ci] [TARGET...]
#
#   --seconds N   fresh fuzzing per target after its corpus (default 600: the issue's 10 minutes)
#   --bin DIR     where the fuzz_<target> binaries are (default: build them in build-fuzz)
#   --work DIR    where new inputs and crash artifacts go (default build-fuzz/fuzz-work)
#   --ci          the ctest form: quiet unless a target fails
#   TARGET...     default: every target that was built
# Exits non-zero when any target finds a crash, a sanitizer report, a leak or a timeout; the input that caused it
# is left in the work directory (crash-*, leak-*, timeout-*) and its path printed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=600
bin=
work=
ci=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --ci) ci=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ -z "$bin" ]; then
  command -v clang++ >/dev/null || bash "$root/tools/install-deps.sh" --fuzz
  build=$root/build-fuzz
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FUZZ=ON >/dev/null
  cmake --build "$build" -j "$(nproc)" --target tern_fuzz_all
  bin=$build/bin
fi
[ -n "$work" ] || work=$(dirname "$bin")/fuzz-work
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$bin"/fuzz_*; do [ -x "$f" ] && targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
status=0
passed=0
failed=0
for t in "${targets[@]}"; do
  exe=$bin/fuzz_$t
  [ -x "$exe" ] || { echo "fuzz.sh: no $exe" >&2; status=1; failed=$((failed + 1)); continue; }
  seeds=$root/tests/fuzz/corpus/$t
  dir=$work/$t
  mkdir -p "$dir/corpus"
  # New inputs go into the work copy (first directory); the committed seeds are only read.
  args=("$dir/corpus")
  [ -d "$seeds" ] && args+=("$seeds")
  log=$dir/log.txt
  start=$SECONDS
  if ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
     UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
     LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0} \
     "$exe" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$dir/" "${args[@]}" >"$log" 2>&1; then
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
    rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
    cov=$(grep -E 'DONE +cov:' "$log" | sed -E 's/.*cov: ([0-9]+).*/\1/' | tail -1 || true)
    echo "fuzz $t: ok, $((SECONDS - start)) s, ${execs:-?} runs (${rate:-?}/s), cov ${cov:-?}," \
      "corpus $(ls "$dir/corpus" | wc -l) new"
    passed=$((passed + 1))
  else
    status=1
    failed=$((failed + 1))
    echo "fuzz $t: FINDING after $((SECONDS - start)) s (log $log):"
    grep -E 'ERROR|SUMMARY|runtime error|deadly signal|Test unit written|uncaught|terminate' "$log" | head -20 || true
    [ $ci -eq 1 ] && tail -60 "$log"
  fi
done
echo "fuzz: $passed passed, $failed failed"
exit $status
