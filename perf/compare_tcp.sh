#!/usr/bin/env bash
# tern vs Gloo allreduce over TCP loopback, same sizes, same machine, one invocation.
#
#   perf/compare_tcp.sh [BUILD_DIR=build]
#
# Runs tern's all_reduce_perf with shared memory disabled (so it really goes through TCP) and Gloo, 2 ranks each,
# then prints both side by side with tern/Gloo ratios against TARGET. It is a benchmark, not a test: the exit code
# is 0 whatever the ratios and non-zero only when a tool failed or produced no numbers.
#
# The fair protocol (perf/compare/common.sh):
# - Gloo is measured through gloo::allreduce (AllreduceOptions), the call PyTorch's ProcessGroupGloo makes, with
#   both of its algorithms (ring and bcube) timed at every size and the faster one kept (GLOO_ALGO=auto; the
#   per-size choice is in gloo.log as "# size ...: ... -> ALGO"). The legacy gloo::AllreduceRing ("ring") is
#   slower than gloo::allreduce at large sizes, so it is no fair baseline; it stays available by name.
# - Both sides out of place (PLACE=out, the default): tern's out-of-place column against Gloo with separate input
#   and output buffers (AllreduceOptions::setInput + setOutput). PLACE=in compares tern's in-place column with
#   Gloo reducing into its input, which is what PyTorch's allreduce does.
# - Binding, each side its best: tern ranks as tern-run places them (--bind-to auto: one CPU each when the ranks
#   fit the CPUs); Gloo ranks each on their own share of the CPUs (GLOO_BIND=split, see cmp_launch_local): pinned,
#   so the two ranks are not pulled onto one CPU, but never sharing one CPU between Gloo's calling thread and its
#   TCP I/O thread where the machine has CPUs to spare. On a 2-CPU machine both mean one CPU per rank.
#   GLOO_BIND=none / core are there to confirm the choice on the machine being measured.
# - REPEATS (>= 3) runs per size; the table gives medians with the spread (min..max), verdicts on the median.
# - Which tool runs first alternates from size group to size group and from repeat to repeat.
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2]   size sweep (K/M/G suffixes, powers of 1024)
#   ITER_BYTES [4G] MIN_ITERS [5] MAX_ITERS [200]   iterations per size ~ ITER_BYTES/size, clamped
#   WARMUP [iters/5, 2..20]   REPEATS [3] (median, spread)   NP [2]   TARGET [1.5]   PLACE [out]  out | in
#   GLOO_ALGO [auto]          auto | opts_ring | opts_bcube | legacy (in place only): ring | ring_chunked |
#                             halving_doubling | bcube
#   GLOO_BIND [split]  split | core | none      TERN_BIND [auto]  tern-run --bind-to: auto | core | none
#   TERN_RUN TERN_PERF GLOO_ALLREDUCE   binaries [BUILD_DIR/bin/...]
#   TERN_RUN_ARGS TERN_ARGS GLOO_ARGS   extra arguments for the launcher / all_reduce_perf / gloo_allreduce
#   PERF_HUGEPAGES [unset]  passed to both sides (perf/common/host_buffer.hpp): default | madvise | none
#   RESULTS_DIR [BUILD_DIR/perf-compare/tcp-DATE]   raw logs, parsed rows, report.txt
#   CMP_TIMEOUT [900]  seconds before a single tool run is killed
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"

build=$(cmp_resolve_build "${1:-build}")
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-4G} MIN_ITERS=${MIN_ITERS:-5} MAX_ITERS=${MAX_ITERS:-200} WARMUP=${WARMUP:-}
REPEATS=${REPEATS:-3} NP=${NP:-2} TARGET=${TARGET:-1.5} GLOO_ALGO=${GLOO_ALGO:-auto} PLACE=${PLACE:-out}
GLOO_BIND=${GLOO_BIND:-split} TERN_BIND=${TERN_BIND:-auto}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_PERF=${TERN_PERF:-$build/bin/all_reduce_perf}
GLOO_ALLREDUCE=${GLOO_ALLREDUCE:-$build/bin/gloo_allreduce}
read -r -a tern_run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a tern_args <<<"${TERN_ARGS:-}"
read -r -a gloo_args <<<"${GLOO_ARGS:-}"
[[ $PLACE == out || $PLACE == in ]] || cmp_die "PLACE must be out or in, not '$PLACE'"
place_text="out-of-place"
[[ $PLACE == in ]] && place_text="in-place"
gloo_place=()
[[ $PLACE == in ]] && gloo_place=(--inplace)
tern_hp=()
[[ -n ${PERF_HUGEPAGES:-} ]] && tern_hp=(-x "PERF_HUGEPAGES=$PERF_HUGEPAGES")
results=${RESULTS_DIR:-$build/perf-compare/tcp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"

main() {
  local failed=0 have_tern=1 have_gloo=1
  echo "# compare_tcp: tern vs Gloo allreduce, float32 sum, $NP ranks over TCP loopback"
  cmp_machine_info
  echo "# sizes:     $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS iterations)," \
    "repeats=$REPEATS, target tern/gloo >= ${TARGET}x (median)"
  echo "# protocol:  both $place_text; gloo --algo $GLOO_ALGO; binding tern-run --bind-to $TERN_BIND," \
    "gloo $GLOO_BIND; order alternates per size group; PERF_HUGEPAGES=${PERF_HUGEPAGES:-unset}"
  echo "# results:   $results"
  cmp_busy_note "before the runs"
  echo "#"

  cmp_have_tern || have_tern=0 failed=1
  cmp_have_gloo || have_gloo=0 failed=1

  local plan rep first last iters warm group tool
  plan=$(cmp_plan "$MINBYTES" "$MAXBYTES" "$STEPFACTOR" "$ITER_BYTES" "$MIN_ITERS" "$MAX_ITERS" "$WARMUP") || exit 2
  : >"$results/tern.log"
  : >"$results/gloo.log"
  for ((rep = 1; rep <= REPEATS; rep++)); do
    group=0
    while read -r first last iters warm; do
      for tool in $(cmp_order $((group + rep - 1)) tern gloo); do
        case $tool in
          tern)
            ((have_tern)) || continue
            cmp_run "$results/tern.log" "$TERN_RUN" -n "$NP" --bind-to "$TERN_BIND" -x TERN_SHM_DISABLE=1 \
              "${tern_hp[@]}" "${tern_run_args[@]}" "$TERN_PERF" -b "$first" -e "$last" -f "$STEPFACTOR" \
              -n "$iters" -w "$warm" -d float -o sum "${tern_args[@]}" || failed=1
            ;;
          gloo)
            ((have_gloo)) || continue
            # Each run gets its own key prefix so a half-finished earlier rendezvous can never be joined by mistake.
            CMP_LOCAL_BIND=$GLOO_BIND cmp_launch_local "$NP" "$results/gloo.log" "$GLOO_ALLREDUCE" \
              --store "$results/gloo-store" --prefix "r$rep-$first" --algo "$GLOO_ALGO" "${gloo_place[@]}" \
              -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" -J "$results/gloo-r$rep-$first.json" \
              "${gloo_args[@]}" || failed=1
            ;;
        esac
      done
      group=$((group + 1))
    done <<<"$plan"
  done

  cmp_parse_nccl "$PLACE" <"$results/tern.log" >"$results/tern.rows"
  cmp_parse_nccl "$PLACE" <"$results/gloo.log" >"$results/gloo.rows"
  ((have_tern)) && [[ ! -s $results/tern.rows ]] && echo "# tern produced no result rows" && failed=1
  ((have_gloo)) && [[ ! -s $results/gloo.rows ]] && echo "# gloo produced no result rows" && failed=1

  echo
  echo "# ===== tern vs Gloo ($GLOO_ALGO), $NP ranks, TCP loopback, both $place_text: medians of $REPEATS runs"
  echo "# time in us, busbw in GB/s; spread = (slowest - fastest) / median run time, /runs"
  echo "# ratio = gloo time / tern time (= tern busbw / gloo busbw), medians; PASS when >= TARGET"
  cmp_report "$results/tern.rows" "$results/gloo.rows" tern gloo "$MINBYTES-$MAXBYTES:$TARGET"
  if [[ $GLOO_ALGO == auto ]]; then
    echo "# gloo's faster algorithm per size, runs choosing it: $(gloo_choices "$results/gloo.log")"
  fi
  if [[ -n ${PERF_HUGEPAGES:-} ]]; then
    echo "# huge pages: tern $(cmp_hugepage_summary "$results/tern.log"); gloo $(cmp_hugepage_summary "$results/gloo.log")"
  fi
  cmp_busy_note "after the runs"
  cmp_status "$failed" "$results"
}

# gloo_choices LOG : "1M opts_ring 3/3, 2M opts_bcube 2/3 ..." from gloo_allreduce's "# size N: ... -> ALGO" lines.
gloo_choices() {
  awk '{ sub(/^\[[^]]*\] */, "") }
    /^# size [0-9]+:.* -> / { n = $3; sub(/:$/, "", n); c[n " " $NF]++; s[n] = 1 }
    END {
      k = 0
      for (x in s) sz[++k] = x + 0
      for (i = 2; i <= k; i++) { v = sz[i]; for (j = i - 1; j >= 1 && sz[j] > v; j--) sz[j + 1] = sz[j]; sz[j + 1] = v }
      for (i = 1; i <= k; i++) {
        h = sz[i] >= 1048576 ? (sz[i] / 1048576) "M" : (sz[i] >= 1024 ? (sz[i] / 1024) "K" : sz[i])
        out = ""
        for (key in c) { split(key, p, " "); if (p[1] == sz[i]) out = out (out == "" ? "" : "+") p[2] " " c[key] }
        printf "%s%s %s", (i > 1 ? ", " : ""), h, out
      }
      printf "\n"
    }' "$1"
}

cmp_run_main "$results"
