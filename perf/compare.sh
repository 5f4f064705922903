#!/usr/bin/env bash
# tern vs Open MPI vs Gloo vs oneCCL allreduce in one invocation: same sizes, same transport, same machine, one
# table, one PNG.
#
#   perf/compare.sh [BUILD_DIR=build]
#
# TRANSPORT=tcp (default): tern with shared memory disabled (TERN_SHM_DISABLE=1, so it really goes through TCP),
#   Open MPI with pml ob1 and the TCP BTL on loopback, Gloo's TCP device on 127.0.0.1.
# TRANSPORT=shm: tern with shared memory, Open MPI with the vader (shared-memory) BTL. Gloo has no shared-memory
#   path, so its column reads "n/a (no shm path)" and it is not run.
# oneCCL (oneccl_collectives --coll allreduce) runs over its OFI transport with libfabric's tcp provider on loopback
#   (TRANSPORT=tcp) or its shm provider (TRANSPORT=shm); perf/compare/oneccl.sh installs it from PyPI into
#   BUILD_DIR/perf-venv-oneccl and compiles the driver on first use, and its header gives the CCL_* settings and
#   why (CCL_WORKER_OFFLOAD=0 among them). ONECCL=0 leaves it out.
# All tools run 2 ranks (NP) of float32 sum allreduce. The table gives the median busbw per size over REPEATS runs
# with its spread, and tern/MPI, tern/Gloo, tern/oneCCL ratios of the median times (other time / tern time, which
# equals tern busbw / other busbw but stays exact where busbw rounds to 0.00). perf/plot.py draws the runs, tern
# with its model prediction dashed, into RESULTS_DIR/compare-TRANSPORT.png.
# It is a benchmark, not a test: the exit code is 0 whatever the ratios and non-zero only when a tool failed or
# produced no numbers (a PNG that could not be drawn is reported, not counted as a failure).
#
# The fair protocol, as perf/compare_tcp.sh and perf/compare_shm.sh (see their headers for the reasons): Gloo
# through gloo::allreduce, faster of ring and bcube per size (GLOO_ALGO=auto); all four out of place (PLACE=out;
# PLACE=in: tern's in-place column, MPI_IN_PLACE, Gloo and oneCCL in place); tern bound as tern-run places it, MPI
# --bind-to core, Gloo on its own share of the CPUs (GLOO_BIND=split), oneCCL one CPU per rank (ONECCL_BIND=core;
# with more ranks than CPUs use none, and oneCCL then yields, see perf/compare/oneccl.sh); REPEATS (>= 3) runs,
# medians and spreads; the tool that runs first rotates from size group to size group and from repeat to repeat.
# PERF_HUGEPAGES, when set, is given to all four (TRANSPORT=shm: see compare_shm.sh for the huge-page protocols;
# tern's own MADV_COLLAPSE stays on unless TERN_SHM_HUGEPAGES=0 is passed in TERN_RUN_ARGS as
# "-x TERN_SHM_HUGEPAGES=0").
#
# Environment (defaults in brackets):
#   TRANSPORT [tcp]   tcp | shm
#   MINBYTES [1M] MAXBYTES [64M] STEPFACTOR [2]   size sweep (K/M/G suffixes, powers of 1024)
#   ITER_BYTES [1G] MIN_ITERS [5] MAX_ITERS [200]   iterations per size ~ ITER_BYTES/size, clamped
#   WARMUP [iters/5, 2..20]   REPEATS [3] (median row per size, spread)   NP [2]   PLACE [out]  out | in
#   GLOO_ALGO [auto]          auto | opts_ring | opts_bcube | legacy (in place only): ring | ring_chunked |
#                             halving_doubling | bcube
#   GLOO_BIND [split] split | core | none   TERN_BIND [auto] tern-run --bind-to   MPI_BIND [core] mpirun --bind-to
#   ONECCL_BIND [core] core | split | none (perf/compare/common.sh, cmp_launch_local)
#   MPI_MCA [tcp: "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"; shm: "--mca pml ob1 --mca btl
#            vader,self"]   MPI_ARGS: more mpirun arguments
#   TERN_RUN TERN_PERF MPI_ALLREDUCE GLOO_ALLREDUCE MPIRUN PYTHON   [BUILD_DIR/bin/..., mpirun, /usr/bin/python3]
#   ONECCL [1] ONECCL_VENV ONECCL_PIP ONECCL_ENV ONECCL_COLLECTIVES   see perf/compare/oneccl.sh
#   TERN_RUN_ARGS TERN_ARGS MPI_DRIVER_ARGS GLOO_ARGS ONECCL_ARGS   extra arguments for each tool
#   PERF_HUGEPAGES [unset]   default | madvise | none, for every tool's buffers (perf/common/host_buffer.hpp)
#   RESULTS_DIR [BUILD_DIR/perf-compare/compare-TRANSPORT-DATE]   raw logs, rows, JSON, report.txt, PNG
#   CMP_TIMEOUT [900]  seconds before a single tool run is killed
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=compare/common.sh
source "$here/compare/common.sh"
# shellcheck source-path=SCRIPTDIR source=compare/oneccl.sh
source "$here/compare/oneccl.sh"

build=$(cmp_resolve_build "${1:-build}")
TRANSPORT=${TRANSPORT:-tcp}
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-64M} STEPFACTOR=${STEPFACTOR:-2}
ITER_BYTES=${ITER_BYTES:-1G} MIN_ITERS=${MIN_ITERS:-5} MAX_ITERS=${MAX_ITERS:-200} WARMUP=${WARMUP:-}
REPEATS=${REPEATS:-3} NP=${NP:-2} GLOO_ALGO=${GLOO_ALGO:-auto} PLACE=${PLACE:-out}
GLOO_BIND=${GLOO_BIND:-split} TERN_BIND=${TERN_BIND:-auto} MPI_BIND=${MPI_BIND:-core} ONECCL_BIND=${ONECCL_BIND:-core}
TERN_RUN=${TERN_RUN:-$build/bin/tern-run}
TERN_PERF=${TERN_PERF:-$build/bin/all_reduce_perf}
MPI_ALLREDUCE=${MPI_ALLREDUCE:-$build/bin/mpi_allreduce}
GLOO_ALLREDUCE=${GLOO_ALLREDUCE:-$build/bin/gloo_allreduce}
MPIRUN=${MPIRUN:-mpirun}
# The system python is the one with matplotlib here; a pyenv python3 first on PATH usually lacks it.
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3
  [[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
fi

case "$TRANSPORT" in
  tcp)
    default_mca=$(cmp_mpi_mca tcp)
    tern_env=(-x TERN_SHM_DISABLE=1)
    transport_text="TCP loopback"
    ;;
  shm)
    default_mca=$(cmp_mpi_mca shm)
    tern_env=()
    transport_text="shared memory"
    ;;
  *)
    echo "compare.sh: TRANSPORT must be tcp or shm, not '$TRANSPORT'" >&2
    exit 2
    ;;
esac
# Checked here, in this shell, so that cmp_die can stop the script (inside cmp_plan it runs in a subshell).
cmp_bytes "$MINBYTES" >/dev/null
cmp_bytes "$MAXBYTES" >/dev/null

read -r -a mpi_mca <<<"${MPI_MCA:-$default_mca}"
read -r -a mpi_args <<<"${MPI_ARGS:-}"
read -r -a tern_run_args <<<"${TERN_RUN_ARGS:-}"
read -r -a tern_args <<<"${TERN_ARGS:-}"
read -r -a mpi_driver_args <<<"${MPI_DRIVER_ARGS:-}"
read -r -a gloo_args <<<"${GLOO_ARGS:-}"
read -r -a oneccl_args <<<"${ONECCL_ARGS:-}"
[[ $PLACE == out || $PLACE == in ]] || cmp_die "PLACE must be out or in, not '$PLACE'"
place_text="out-of-place"
[[ $PLACE == in ]] && place_text="in-place"
gloo_place=() mpi_place=() oneccl_place=()
[[ $PLACE == in ]] && gloo_place=(--inplace) mpi_place=(--inplace) oneccl_place=(--inplace)
tern_hp=() mpi_hp=() oneccl_hp=""
if [[ -n ${PERF_HUGEPAGES:-} ]]; then
  tern_hp=(-x "PERF_HUGEPAGES=$PERF_HUGEPAGES") mpi_hp=(-x "PERF_HUGEPAGES=$PERF_HUGEPAGES")
  oneccl_hp="PERF_HUGEPAGES=$PERF_HUGEPAGES"
fi
results=${RESULTS_DIR:-$build/perf-compare/compare-$TRANSPORT-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results" || cmp_die "cannot create $results"
png=$results/compare-$TRANSPORT.png

# report4 TERN_ROWS MPI_ROWS GLOO_ROWS ONECCL_ROWS GLOO_NA : one table of the four tools' median busbw with the
# spread of their run times. Rows files are cmp_parse_nccl output ("size busbw time_us wrong runs time_min
# time_max"); GLOO_NA, when not empty, fills the Gloo columns instead.
report4() {
  awk -v gloo_na="$5" '
    function human(b) {
      if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) "G"
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
      return b
    }
    function fbw(x) { return x == "" ? "-" : sprintf("%.2f", x) }
    function fsp(med, lo, hi, n) { return med == "" || med <= 0 ? "-" : sprintf("%.1f%%/%d", 100 * (hi - lo) / med, n) }
    # other time / tern time (medians); busbw ratio as a fallback when a time is missing.
    function ratio(ot, obw, s) {
      if (tt[s] != "" && ot != "" && tt[s] > 0) return ot / tt[s]
      if (tbw[s] != "" && obw != "" && obw > 0) return tbw[s] / obw
      return ""
    }
    function fratio(r) { return r == "" ? "-" : sprintf("%.2fx", r) }
    function bad(w) { return w ~ /^[0-9]+$/ && w > 0 }
    FILENAME == ARGV[1] { tt[$1] = $3; tbw[$1] = $2; tw[$1] = $4; tsp[$1] = fsp($3, $6, $7, $5); seen[$1] = 1; next }
    FILENAME == ARGV[2] { mt[$1] = $3; mbw[$1] = $2; mw[$1] = $4; msp[$1] = fsp($3, $6, $7, $5); seen[$1] = 1; next }
    FILENAME == ARGV[3] { gt[$1] = $3; gbw[$1] = $2; gw[$1] = $4; gsp[$1] = fsp($3, $6, $7, $5); seen[$1] = 1; next }
    { ot[$1] = $3; obw[$1] = $2; ow[$1] = $4; osp[$1] = fsp($3, $6, $7, $5); seen[$1] = 1 }
    END {
      n = 0
      for (s in seen) sizes[++n] = s + 0
      for (i = 2; i <= n; i++) { v = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > v; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = v }
      gwidth = (gloo_na != "" && length(gloo_na) > 11) ? length(gloo_na) : 11
      printf "%8s  %11s %9s  %11s %9s  %*s %9s  %12s %9s  %9s  %9s  %11s\n", "size", "tern busbw", "spread",
             "MPI busbw", "spread", gwidth, "Gloo busbw", "spread", "oneCCL busbw", "spread", "tern/MPI", "tern/Gloo",
             "tern/oneCCL"
      for (k = 1; k <= n; k++) {
        s = sizes[k]
        rm = ratio(mt[s], mbw[s], s)
        rg = gloo_na != "" ? "" : ratio(gt[s], gbw[s], s)
        ro = ratio(ot[s], obw[s], s)
        if (ro != "") { lo += log(ro); co++; if (mino == "" || ro < mino) mino = ro }
        if (rm != "") { lm += log(rm); cm++; if (minm == "" || rm < minm) minm = rm }
        if (rg != "") { lg += log(rg); cg++; if (ming == "" || rg < ming) ming = rg }
        note = ""
        if (bad(tw[s])) note = note " tern"
        if (bad(mw[s])) note = note " MPI"
        if (bad(gw[s])) note = note " Gloo"
        if (bad(ow[s])) note = note " oneCCL"
        note = note == "" ? "" : "  WRONG results:" note
        printf "%8s  %11s %9s  %11s %9s  %*s %9s  %12s %9s  %9s  %9s  %11s%s\n", human(s), fbw(tbw[s]),
               tsp[s] == "" ? "-" : tsp[s], fbw(mbw[s]), msp[s] == "" ? "-" : msp[s], gwidth,
               gloo_na != "" ? gloo_na : fbw(gbw[s]), gsp[s] == "" ? "-" : gsp[s], fbw(obw[s]),
               osp[s] == "" ? "-" : osp[s], fratio(rm), gloo_na != "" ? "n/a" : fratio(rg), fratio(ro), note
      }
      if (cm) printf "tern/MPI:  min %.2fx, geomean %.2fx over %d sizes (median times)\n", minm, exp(lm / cm), cm
      if (cg) printf "tern/Gloo: min %.2fx, geomean %.2fx over %d sizes (median times)\n", ming, exp(lg / cg), cg
      if (co) printf "tern/oneCCL: min %.2fx, geomean %.2fx over %d sizes (median times)\n", mino, exp(lo / co), co
    }' "$1" "$2" "$3" "$4"
}

# rows_json ROWS BINARY TRANSPORT ALGO > file : a perf JSON document (the schema of all_reduce_perf -J, out-of-place
# half only, no prediction) from parsed rows, so plot.py can draw the MPI and Gloo runs next to tern's.
rows_json() {
  awk -v bin="$2" -v tr="$3" -v algo="$4" -v np="$NP" '
    BEGIN { printf "{\"binary\": \"%s\", \"collective\": \"allreduce\", \"compress\": \"\", \"forced_algo\": \"\", " \
                   "\"nranks\": %d, \"transport\": \"%s\", \"results\": [", bin, np, tr }
    NF >= 3 {
      wrong = ($4 ~ /^[0-9]+$/) ? $4 : -1
      algbw = ($3 > 0) ? $1 / ($3 * 1000) : 0   # bytes per us / 1000 = GB/s
      printf "%s\n  {\"size\": %d, \"count\": %d, \"type\": \"float\", \"redop\": \"sum\", \"root\": -1, " \
             "\"algorithm\": \"%s\", \"out_of_place\": {\"time_us\": %s, \"algbw\": %.6g, \"busbw\": %s, " \
             "\"wrong\": %d}}", sep, $1, $1 / 4, algo, $3, algbw, $2, wrong
      sep = ","
    }
    END { printf "\n]}\n" }' "$1"
}

# merge_tern_json OUT FILE... : one perf JSON document from the per-group -J files of all_reduce_perf (each size
# group is a separate launch). With repeats, each size keeps the record with the median out-of-place busbw, the
# same choice cmp_parse_nccl makes for the table.
merge_tern_json() {
  "$PYTHON" - "$@" <<'EOF'
import json, sys
out, paths = sys.argv[1], sys.argv[2:]
meta, by_size = None, {}
for p in paths:
    with open(p) as f:
        doc = json.load(f)
    if meta is None:
        meta = {k: v for k, v in doc.items() if k != "results"}
    for r in doc.get("results", []):
        by_size.setdefault(r["size"], []).append(r)
results = []
for size in sorted(by_size):
    rs = sorted(by_size[size], key=lambda r: r.get("out_of_place", {}).get("busbw", 0))
    results.append(rs[(len(rs) - 1) // 2])
with open(out, "w") as f:
    json.dump(dict(meta or {}, results=results), f, indent=2)
    f.write("\n")
EOF
}

main() {
  local failed=0 have_tern=1 have_mpi=1 have_gloo=1 have_oneccl=1 gloo_na=""
  local others="Open MPI vs Gloo ($GLOO_ALGO) vs oneCCL"
  [[ $TRANSPORT == shm ]] && others="Open MPI vs oneCCL (Gloo: no shm path)"
  echo "# compare: tern vs $others allreduce, float32 sum, $NP ranks over $transport_text"
  cmp_machine_info
  echo "# sizes:     $MINBYTES..$MAXBYTES x$STEPFACTOR, ~$ITER_BYTES per size ($MIN_ITERS..$MAX_ITERS iterations)," \
    "repeats=$REPEATS"
  echo "# mpi:       ${mpi_mca[*]}"
  echo "# protocol:  all $place_text; gloo --algo $GLOO_ALGO; binding tern-run --bind-to $TERN_BIND, mpirun" \
    "--bind-to $MPI_BIND, gloo $GLOO_BIND, oneccl $ONECCL_BIND; first tool rotates per size group;" \
    "PERF_HUGEPAGES=${PERF_HUGEPAGES:-unset}"
  echo "# results:   $results"
  cmp_busy_note "before the runs"
  echo "#"

  cmp_have_tern || have_tern=0 failed=1
  cmp_have_mpi || have_mpi=0 failed=1
  if [[ $TRANSPORT == shm ]]; then
    # Not a failure: there is nothing to compare against.
    have_gloo=0 gloo_na="n/a (no shm path)"
  elif ! cmp_have_gloo; then
    have_gloo=0 failed=1
  fi
  if occl_setup "$build"; then
    echo "# oneccl:    $(occl_version) ($ONECCL_COLLECTIVES), env: $(occl_env "$TRANSPORT" "$NP" | grep -v PATH= |
      tr '\n' ' ')"
  else
    have_oneccl=0
    ((ONECCL)) && failed=1  # ONECCL=0 asked for it to be left out: not a failure
  fi

  local plan rep first last iters warm
  plan=$(cmp_plan "$MINBYTES" "$MAXBYTES" "$STEPFACTOR" "$ITER_BYTES" "$MIN_ITERS" "$MAX_ITERS" "$WARMUP") || exit 2
  : >"$results/tern.log"
  : >"$results/mpi.log"
  : >"$results/gloo.log"
  : >"$results/oneccl.log"
  rm -f "$results"/tern-r*.json
  local group tool
  for ((rep = 1; rep <= REPEATS; rep++)); do
    group=0
    while read -r first last iters warm; do
      for tool in $(cmp_order $((group + rep - 1)) tern mpi gloo oneccl); do
        case $tool in
          tern)
            ((have_tern)) || continue
            cmp_run "$results/tern.log" "$TERN_RUN" -n "$NP" --bind-to "$TERN_BIND" "${tern_env[@]}" "${tern_hp[@]}" \
              "${tern_run_args[@]}" "$TERN_PERF" -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" \
              -d float -o sum -J "$results/tern-r$rep-$first.json" "${tern_args[@]}" || failed=1
            ;;
          mpi)
            ((have_mpi)) || continue
            # Open MPI refuses to run as root without --allow-run-as-root; harmless otherwise.
            cmp_run "$results/mpi.log" "$MPIRUN" --allow-run-as-root --bind-to "$MPI_BIND" -np "$NP" "${mpi_hp[@]}" \
              "${mpi_mca[@]}" "${mpi_args[@]}" "$MPI_ALLREDUCE" -b "$first" -e "$last" -f "$STEPFACTOR" \
              -n "$iters" -w "$warm" "${mpi_place[@]}" "${mpi_driver_args[@]}" || failed=1
            ;;
          gloo)
            ((have_gloo)) || continue
            # Each run gets its own key prefix so a half-finished earlier rendezvous can never be joined by mistake.
            CMP_LOCAL_BIND=$GLOO_BIND cmp_launch_local "$NP" "$results/gloo.log" "$GLOO_ALLREDUCE" \
              --store "$results/gloo-store" --prefix "r$rep-$first" --algo "$GLOO_ALGO" "${gloo_place[@]}" \
              -b "$first" -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" "${gloo_args[@]}" || failed=1
            ;;
          oneccl)
            ((have_oneccl)) || continue
            ONECCL_ENV="$oneccl_hp ${ONECCL_ENV:-}" CMP_LOCAL_BIND=$ONECCL_BIND occl_launch "$NP" \
              "$results/oneccl.log" "$TRANSPORT" "r$rep-$first" --coll allreduce "${oneccl_place[@]}" -b "$first" \
              -e "$last" -f "$STEPFACTOR" -n "$iters" -w "$warm" "${oneccl_args[@]}" || failed=1
            ;;
        esac
      done
      group=$((group + 1))
    done <<<"$plan"
  done

  for tool in tern mpi gloo oneccl; do cmp_parse_nccl "$PLACE" <"$results/$tool.log" >"$results/$tool.rows"; done
  ((have_tern)) && [[ ! -s $results/tern.rows ]] && echo "# tern produced no result rows" && failed=1
  ((have_mpi)) && [[ ! -s $results/mpi.rows ]] && echo "# mpi produced no result rows" && failed=1
  ((have_gloo)) && [[ ! -s $results/gloo.rows ]] && echo "# gloo produced no result rows" && failed=1
  ((have_oneccl)) && [[ ! -s $results/oneccl.rows ]] && echo "# oneccl produced no result rows" && failed=1

  echo
  echo "# ===== tern vs $others, $NP ranks, $transport_text: $place_text busbw in GB/s, medians of $REPEATS runs"
  echo "# spread = (slowest - fastest) / median run time, /runs"
  echo "# ratio = other median time / tern median time (= tern busbw / other busbw); > 1 means tern is faster"
  report4 "$results/tern.rows" "$results/mpi.rows" "$results/gloo.rows" "$results/oneccl.rows" "$gloo_na"
  if [[ -n ${PERF_HUGEPAGES:-} ]]; then
    echo "# huge pages: tern $(cmp_hugepage_summary "$results/tern.log"); mpi $(cmp_hugepage_summary "$results/mpi.log")"
    ((have_gloo)) && echo "# huge pages: gloo $(cmp_hugepage_summary "$results/gloo.log")"
    ((have_oneccl)) && echo "# huge pages: oneccl $(cmp_hugepage_summary "$results/oneccl.log")"
  fi
  cmp_busy_note "after the runs"

  # The PNG: tern's merged -J output (with the model's predictions) plus JSON made from the other tools' rows.
  local plot_inputs=() tern_jsons=()
  shopt -s nullglob
  tern_jsons=("$results"/tern-r*.json)
  shopt -u nullglob
  if ((${#tern_jsons[@]})) && merge_tern_json "$results/tern.json" "${tern_jsons[@]}"; then
    plot_inputs+=("$results/tern.json")
  fi
  if [[ -s $results/mpi.rows ]]; then
    rows_json "$results/mpi.rows" mpi_allreduce "$TRANSPORT" "" >"$results/mpi.json"
    plot_inputs+=("$results/mpi.json")
  fi
  if [[ -s $results/gloo.rows ]]; then
    rows_json "$results/gloo.rows" gloo_allreduce "$TRANSPORT" "$GLOO_ALGO $place_text" >"$results/gloo.json"
    plot_inputs+=("$results/gloo.json")
  fi
  if [[ -s $results/oneccl.rows ]]; then
    rows_json "$results/oneccl.rows" oneccl_collectives "$TRANSPORT" "$place_text" >"$results/oneccl.json"
    plot_inputs+=("$results/oneccl.json")
  fi
  local title="allreduce busbw, $NP ranks, $transport_text: tern vs $others"
  if ((${#plot_inputs[@]})); then
    if "$PYTHON" "$here/plot.py" -o "$png" --title "$title" "${plot_inputs[@]}"; then
      echo "# plot:      $png"
    else
      echo "# plot: perf/plot.py failed (matplotlib missing for $PYTHON?); no PNG"
    fi
  fi

  cmp_status "$failed" "$results"
}

cmp_run_main "$results"
