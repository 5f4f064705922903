# shellcheck shell=bash
# Shared helpers for perf/compare*.sh and perf/ucx_compare.sh (sourced, not run).
#
# Every tool involved (tern's all_reduce_perf, gloo_allreduce, mpi_allreduce) prints an nccl-tests style table, so
# the scripts reduce each run to rows of "size busbw time_us wrong runs time_min time_max" and compare those. All
# helpers are prefixed cmp_.
#
# The fair protocol every compare script follows:
# - each size is measured in REPEATS (>= 3) separate runs; rows are the median run, with the spread (min..max) of
#   the per-run times beside it, and targets are judged on the median;
# - the order of the tools changes from one size group (and repeat) to the next (cmp_order), so no tool always
#   runs first, or always right after another one;
# - every tool allocates its buffers through perf/common/host_buffer.hpp, so all see the same memory (and, with
#   PERF_HUGEPAGES, the same kind of pages).

# Seconds any single tool invocation may run before it is killed; a hung collective must not hang the comparison.
: "${CMP_TIMEOUT:=900}"

# Stops the script with a message naming it; exit 2 (a tool or argument failed, as the scripts' exit codes promise).
cmp_die() {
  echo "$(basename "$0"): $*" >&2
  exit 2
}

# Prints a command the way a user would retype it.
cmp_show_cmd() {
  local out="+" a
  for a in "$@"; do out+=" $(printf '%q' "$a")"; done
  printf '%s\n' "$out"
}

# cmp_bytes 256M -> 268435456. Suffixes are powers of 1024, as in nccl-tests' -b/-e.
cmp_bytes() {
  local s=$1 n mult=1
  case "$s" in
    *[kK]) n=${s%?} mult=1024 ;;
    *[mM]) n=${s%?} mult=$((1024 * 1024)) ;;
    *[gG]) n=${s%?} mult=$((1024 * 1024 * 1024)) ;;
    *) n=$s ;;
  esac
  [[ $n =~ ^[0-9]+$ ]] || cmp_die "not a size: $s"
  echo $((n * mult))
}

# cmp_plan MIN MAX FACTOR BUDGET MIN_ITERS MAX_ITERS [WARMUP] [WARMUP_MAX]
# Splits the size sweep into runs that share an iteration count, so iterations scale with size: each size moves
# about BUDGET bytes in total (power-of-two iteration counts, clamped), which keeps small sizes statistically
# meaningful and large sizes from taking minutes. Prints one "first last iters warmup" line per run; consecutive
# sizes with equal counts share a run to save launches. WARMUP, when given, fixes the warmup count; otherwise it
# is a fifth of the iterations, between 2 and WARMUP_MAX (default 20).
cmp_plan() {
  local min max factor budget min_it max_it warmup=${7:-} warmup_max=${8:-20}
  min=$(cmp_bytes "$1") max=$(cmp_bytes "$2") factor=$3 budget=$(cmp_bytes "$4") min_it=$5 max_it=$6
  awk -v min="$min" -v max="$max" -v f="$factor" -v budget="$budget" -v lo="$min_it" -v hi="$max_it" \
    -v warm="$warmup" -v wmax="$warmup_max" '
    function iters(s,   it) {
      it = 1
      while (it * 2 * s <= budget) it *= 2
      if (it < lo) it = lo
      if (it > hi) it = hi
      return it
    }
    function flush() {
      if (first == "") return
      w = warm != "" ? warm : int(cur / 5)
      if (warm == "" && w < 2) w = 2
      if (warm == "" && w > wmax) w = wmax
      printf "%d %d %d %d\n", first, last, cur, w
    }
    BEGIN {
      first = ""
      for (s = min; s <= max; ) {
        it = iters(s)
        if (first != "" && it != cur) { flush(); first = "" }
        if (first == "") { first = s; cur = it }
        last = s
        n = int(s * f); s = (n > s) ? n : s + 1
      }
      flush()
    }'
}

# cmp_parse_nccl [out|in] < output > rows
# Turns nccl-tests style tables into "size busbw time_us wrong runs time_min time_max" rows, sorted by size: out
# (default) reads the out-of-place columns, in the in-place ones (the second group of four where a table has two;
# a driver run with --inplace prints a single group, which is then in place). Accepts launcher tags ("[0] ",
# "[rank 1] "), nccl-tests with or without the root column and our drivers' 8-column table. A size that appears
# more than once (repeats) becomes one row: the median time and busbw (the mean of the middle two for an even
# count), the number of runs, and the fastest and slowest time. wrong is the largest count seen (N/A if none was
# checked). The tools print their table from rank 0 only, so every row is one run.
cmp_parse_nccl() {
  local place=${1:-out}
  awk -v place="$place" '
    function isint(x) { return x ~ /^-?[0-9]+$/ }
    function isnum(x) { return x ~ /^-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
    {
      sub(/\r$/, "")
      line = $0
      sub(/^[ \t]*\[[^]]*\][ \t]*/, "", line)
      if (line ~ /^[ \t]*(#|$)/) next
      $0 = line
      if (NF < 8 || !isint($1) || !isint($2) || isnum($3) || isnum($4)) next
      # Data columns come in groups of four (time algbw busbw #wrong); an odd one before them is the root column.
      base = ((NF - 4) % 4 == 1) ? 5 : 4
      if (place == "in" && NF >= base + 8) base += 4
      if (!isnum($(base + 1)) || !isnum($(base + 3))) next
      print $1, $(base + 3), $(base + 1), $(base + 4)
    }' | sort -n -k1,1 -k3,3g | awk '
    function mid(a, n) { return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function emit() {
      if (!n) return
      # Sorted by time, so busbw (bytes / time for one size) runs the other way; its median sits at the same place.
      print prev, mid(b, n), mid(t, n), (w == "" ? "N/A" : w), n, t[1], t[n]
      n = 0
      w = ""
    }
    $1 != prev { emit() }
    {
      n++
      t[n] = $3
      b[n] = $2
      if ($4 ~ /^[0-9]+$/ && (w == "" || $4 + 0 > w + 0)) w = $4
      prev = $1
    }
    END { emit() }'
}

# cmp_order K NAME... : the names, rotated left by K. Scripts pass the size group's index plus the repeat's, so the
# tool that runs first changes from group to group and from repeat to repeat.
cmp_order() {
  local k=$1
  shift
  local n=$# i j
  for ((i = 0; i < n; i++)); do
    j=$(((i + k) % n + 1))
    printf '%s\n' "${!j}"
  done
}

# cmp_parse_stream < stream_add output > rows "size add_GBps memcpy_GBps"
cmp_parse_stream() {
  awk '!/^[ \t]*#/ && NF >= 3 && $1 ~ /^[0-9]+$/ { print $1, $2, $3 }'
}

# cmp_report A_ROWS B_ROWS A_NAME B_NAME "RULES"
# Side-by-side table of two parsed row files (cmp_parse_nccl). Times and busbw are medians over the runs; "spread"
# is (slowest - fastest) / median of the per-run times, with the number of runs. The ratio is B's median time / A's
# median time, which equals A busbw / B busbw for the same size but stays exact where busbw rounds to 0.00; "range"
# is the ratio between the extremes (B fastest / A slowest .. B slowest / A fastest). RULES are "MIN-MAX:X" words
# (sizes with K/M/G suffixes): in that size range A passes when the median ratio >= X. So "busbw >= 2x" is 2, and
# "A time <= B time" is 1. Sizes outside every rule get no verdict. A row with wrong results fails whatever its
# speed; a verdict on fewer than 3 runs per side is marked "(<3 runs)".
cmp_report() {
  local a=$1 b=$2 an=$3 bn=$4 rules_in=$5 rules="" r lo hi x
  for r in $rules_in; do
    lo=${r%%-*} hi=${r#*-} hi=${hi%%:*} x=${r##*:}
    rules+="$(cmp_bytes "$lo"):$(cmp_bytes "$hi"):$x "
  done
  awk -v an="$an" -v bn="$bn" -v rules="$rules" '
    function human(b) {
      if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) "G"
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
      return b
    }
    function ftime(t) { return t == "" ? "-" : sprintf(t >= 10000 ? "%.0f" : (t >= 100 ? "%.1f" : "%.2f"), t) }
    function fbw(x) { return x == "" ? "-" : sprintf("%.2f", x) }
    function fspread(med, lo, hi, n) { return med == "" || med <= 0 ? "-" : sprintf("%.1f%%/%d", 100 * (hi - lo) / med, n) }
    FILENAME == ARGV[1] { at[$1] = $3; abw[$1] = $2; aw[$1] = $4; an_[$1] = $5; alo[$1] = $6; ahi[$1] = $7; seen[$1] = 1; next }
    { bt[$1] = $3; bbw[$1] = $2; bw[$1] = $4; bn_[$1] = $5; blo[$1] = $6; bhi[$1] = $7; seen[$1] = 1 }
    END {
      nr = split(rules, rr, " ")
      for (i = 1; i <= nr; i++) { split(rr[i], p, ":"); rlo[i] = p[1]; rhi[i] = p[2]; rx[i] = p[3] }
      n = 0
      for (s in seen) sizes[++n] = s + 0
      for (i = 2; i <= n; i++) { v = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] > v; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = v }
      printf "%8s  %10s %9s %8s  %10s %9s %8s  %7s %13s  %7s  %s\n", "size", an " us", "spread", "busbw", bn " us",
             "spread", "busbw", "ratio", "range", "target", "result"
      npass = nfail = nna = 0
      for (k = 1; k <= n; k++) {
        s = sizes[k]
        ratio = range = ""
        if (at[s] != "" && bt[s] != "" && at[s] > 0) {
          ratio = bt[s] / at[s]
          if (ahi[s] > 0 && alo[s] > 0) range = sprintf("%.2f..%.2fx", blo[s] / ahi[s], bhi[s] / alo[s])
        } else if (abw[s] != "" && bbw[s] > 0) ratio = abw[s] / bbw[s]
        target = ""
        for (i = 1; i <= nr; i++) if (s >= rlo[i] && s <= rhi[i]) { target = rx[i]; rule = i }
        verdict = "-"
        if ((aw[s] ~ /^[0-9]+$/ && aw[s] > 0) || (bw[s] ~ /^[0-9]+$/ && bw[s] > 0)) verdict = "WRONG"
        else if (target != "" && ratio == "") verdict = "n/a"
        else if (target != "") verdict = (ratio >= target) ? "PASS" : "FAIL"
        if (target != "" && (verdict == "PASS" || verdict == "FAIL") && (an_[s] < 3 || bn_[s] < 3)) verdict = verdict " (<3 runs)"
        if (target != "" && verdict ~ /^PASS/) { npass++; rpass[rule]++ }
        if (target != "" && verdict !~ /^PASS/ && verdict != "n/a") { nfail++; rfail[rule]++ }
        if (verdict == "n/a") { nna++; rna[rule]++ }
        if (target != "" && ratio != "") { rlog[rule] += log(ratio); rcnt[rule]++; if (rmin[rule] == "" || ratio < rmin[rule]) rmin[rule] = ratio }
        printf "%8s  %10s %9s %8s  %10s %9s %8s  %7s %13s  %7s  %s\n", human(s), ftime(at[s]),
               fspread(at[s], alo[s], ahi[s], an_[s]), fbw(abw[s]), ftime(bt[s]), fspread(bt[s], blo[s], bhi[s], bn_[s]),
               fbw(bbw[s]), ratio == "" ? "-" : sprintf("%.2fx", ratio), range == "" ? "-" : range,
               target == "" ? "-" : sprintf(">=%.2fx", target), verdict
      }
      for (i = 1; i <= nr; i++) {
        printf "target %s..%s: %s/%s median ratio >= %.2fx: %d/%d sizes pass", human(rlo[i]), human(rhi[i]), an, bn,
               rx[i], rpass[i] + 0, rpass[i] + rfail[i]
        if (rna[i]) printf " (%d without data)", rna[i]
        if (rcnt[i]) printf ", min %.2fx, geomean %.2fx", rmin[i], exp(rlog[i] / rcnt[i])
        printf "\n"
      }
      printf "overall: %d PASS, %d FAIL, %d without data\n", npass, nfail, nna
    }' "$a" "$b"
}

# cmp_run LOG CMD... : shows the command, runs it under CMP_TIMEOUT, copies its output to the terminal and LOG.
cmp_run() {
  local log=$1
  shift
  cmp_show_cmd "$@" | tee -a "$log"
  # stdin from /dev/null: mpirun forwards stdin to rank 0 and would swallow the caller's `while read` input.
  timeout --kill-after=10 "$CMP_TIMEOUT" "$@" </dev/null 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  ((rc == 0)) || printf '# command failed with exit code %d\n' "$rc" | tee -a "$log"
  return "$rc"
}

# cmp_launch_local N LOG CMD... : starts N ranks of CMD on this host with TERN_RANK/TERN_WORLD_SIZE set (what
# gloo_allreduce reads), then prints their outputs tagged "[r] " the way a launcher would. Returns the first
# non-zero exit code. CMP_LOCAL_BIND places the ranks (taskset) on the CPUs this shell may use:
#   split (the default)  rank r gets its own share, CPUs [r*k, (r+1)*k) with k = max(1, CPUs / N): ranks do not
#                        pull each other onto one CPU, and a rank's helper threads (Gloo's TCP I/O thread) get CPUs
#                        of their own wherever the machine has more CPUs than ranks; with CPUs <= N it is core
#   core                 rank r on the r-th CPU only (wrapping around), as tern-run/mpirun --bind-to core
#   none                 placement left to the scheduler
cmp_launch_local() {
  local n=$1 log=$2
  shift 2
  local r rc=0 s tmp bind=${CMP_LOCAL_BIND:-split} cpus=() pin=() share=()
  case $bind in
    split | core)
      mapfile -t cpus < <(cmp_usable_cpus)
      ((${#cpus[@]})) || cmp_die "CMP_LOCAL_BIND=$bind: cannot list the usable CPUs"
      ;;
    none) ;;
    *) cmp_die "CMP_LOCAL_BIND must be split, core or none, not '$bind'" ;;
  esac
  local k=1
  [[ $bind == split ]] && ((${#cpus[@]} > n)) && k=$((${#cpus[@]} / n))
  tmp=$(mktemp -d)
  local places=()
  for ((r = 0; r < n && ${#cpus[@]}; r++)); do
    share=("${cpus[@]:r*k%${#cpus[@]}:k}")
    places+=("$(IFS=,; echo "${share[*]}")")
  done
  cmp_show_cmd "TERN_RANK=0..$((n - 1))" "TERN_WORLD_SIZE=$n" \
    ${places[0]+"CMP_LOCAL_BIND=$bind:$(IFS=' '; echo "${places[*]}")"} "$@" | tee -a "$log"
  local pids=()
  for ((r = 0; r < n; r++)); do
    pin=()
    ((${#places[@]})) && pin=(taskset -c "${places[r]}")
    TERN_RANK=$r TERN_WORLD_SIZE=$n TERN_LOCAL_RANK=$r timeout --kill-after=10 "$CMP_TIMEOUT" "${pin[@]}" "$@" \
      </dev/null >"$tmp/$r.out" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}"
    s=$?
    ((s != 0 && rc == 0)) && rc=$s
  done
  for ((r = 0; r < n; r++)); do sed "s/^/[$r] /" "$tmp/$r.out"; done | tee -a "$log"
  rm -rf "$tmp"
  ((rc == 0)) || printf '# command failed with exit code %d\n' "$rc" | tee -a "$log"
  return "$rc"
}

# cmp_placement LOG : the cache-line round trip between the first two CPUs this shell may use (PLACEMENT_PROBE,
# perf/compare/placement_probe.cpp), shown and appended to LOG. On a VM the host places the vCPUs, and moves them:
# whether two CPUs share a cache (tens of ns) or not (hundreds) changes shared-memory transfers several-fold, so each
# run's number is read with the placement it met. Nothing without the probe or with fewer than two CPUs.
cmp_placement() {
  [[ -x ${PLACEMENT_PROBE:-} ]] || return 0
  local cpus=()
  mapfile -t cpus < <(cmp_usable_cpus)
  ((${#cpus[@]} >= 2)) || return 0
  "$PLACEMENT_PROBE" --cpus "${cpus[0]},${cpus[1]}" 2>&1 | tee -a "$1"
}

# cmp_placement_summary LOG : the probe's round trips in LOG in run order ("81 355 370 ns"), or "not measured".
cmp_placement_summary() {
  awk '/^# placement: cache-line round trip/ { v = v sprintf("%s%.0f", v == "" ? "" : " ", $(NF - 1)) }
    END { print v == "" ? "not measured" : v " ns" }' "$1"
}

# cmp_usable_cpus : the CPUs this shell may run on (its affinity list), one per line.
cmp_usable_cpus() {
  local list
  list=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//')
  [[ -n $list ]] || list="0-$(($(nproc) - 1))"
  awk -v l="$list" 'BEGIN {
    n = split(l, parts, ",")
    for (i = 1; i <= n; i++) {
      if (split(parts[i], ab, "-") == 2) { for (c = ab[1]; c <= ab[2]; c++) print c } else print parts[i]
    }
  }'
}

# cmp_hugepage_summary LOG : what host_buffer.hpp reported (PERF_HUGEPAGES set): huge-page MiB over buffer MiB,
# summed over every large buffer of every rank in LOG.
cmp_hugepage_summary() {
  awk '/# host_buffer: PERF_HUGEPAGES=/ {
      for (i = 1; i <= NF; i++) if ($i == "of" && $(i - 1) ~ /^-?[0-9]+$/) { h += $(i - 1) < 0 ? 0 : $(i - 1); t += $(i + 1); bad += $(i - 1) < 0 }
      n++
    }
    END {
      if (!n) { print "no report (PERF_HUGEPAGES unset, or no buffer >= 2 MiB)"; exit }
      printf "%d of %d MiB on huge pages at allocation (%.0f%%, %d buffers%s)\n", h, t, t ? 100 * h / t : 0, n,
             bad ? ", smaps unreadable for " bad : ""
    }' "$1"
}

# cmp_machine_info : what a reader needs to judge the numbers.
cmp_machine_info() {
  local model
  model=$(lscpu 2>/dev/null | sed -n 's/^Model name:[ \t]*//p' | head -n1)
  [[ -n $model ]] || model=$(sed -n 's/^model name[ \t]*:[ \t]*//p' /proc/cpuinfo | head -n1)
  echo "# date:      $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "# host:      $(uname -n), $(uname -sr)"
  echo "# cpu:       ${model:-unknown}, nproc=$(nproc), $(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[ \t]*/hypervisor /p')"
  echo "# caches:    $(lscpu 2>/dev/null | awk -F: '/^L[23] cache/ { gsub(/^[ \t]+/, "", $2); printf "%s %s  ", $1, $2 }')"
  echo "# memory:    $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "# load:      $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# thp:       enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?'), defrag" \
    "$(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo '?')"
  local gloo mpi
  gloo=$(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || true)
  mpi=$(mpirun --version 2>/dev/null | head -n1 || true)
  echo "# gloo:      ${gloo:-unknown}    mpi: ${mpi:-not found}"
}

# cmp_busy_note WHEN : samples the whole machine's CPU use for a second. Anything else running (a compile, another
# benchmark) shares the cores with the ranks and makes every number here noisy, so the report says so up front.
cmp_busy_note() {
  local a b
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
  sleep 1
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
  awk -v a="$a" -v b="$b" -v when="$1" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    busy = (y[2] > x[2]) ? 100 * (y[1] - x[1]) / (y[2] - x[2]) : 0
    note = (busy > 10) ? "  (other work is running: expect noisy numbers)" : ""
    printf "# cpu busy %s: %.0f%%%s\n", when, busy, note
  }'
}

# The baselines' binaries. Each check is true when the tool can run, and otherwise says why its columns stay empty.
cmp_have_tern() {
  [[ -x $TERN_RUN && -x $TERN_PERF ]] && return 0
  echo "# tern: $TERN_RUN or $TERN_PERF not built; tern columns will be empty"
  return 1
}
# cmp_mpi_mca shm|tcp : Open MPI's component choice for tern's transport: vader (shared memory, CMA where allowed),
# or the TCP BTL kept on loopback, where tern and the other baselines are too.
cmp_mpi_mca() {
  case $1 in
    tcp) echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
    *) echo "--mca pml ob1 --mca btl vader,self" ;;
  esac
}
cmp_have_mpi() {
  [[ -x $MPI_ALLREDUCE ]] && command -v "$MPIRUN" >/dev/null && return 0
  echo "# mpi: $MPI_ALLREDUCE or $MPIRUN missing (needs libopenmpi-dev, openmpi-bin); MPI columns will be empty"
  return 1
}
cmp_have_gloo() {
  [[ -x $GLOO_ALLREDUCE ]] && return 0
  echo "# gloo: $GLOO_ALLREDUCE not built (needs libgloo-dev); Gloo columns will be empty"
  return 1
}

# cmp_resolve_build DIR : the build directory, as given or relative to the repository root.
cmp_resolve_build() {
  local d=$1 root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  if [[ -d $d ]]; then
    (cd "$d" && pwd)
  elif [[ -d $root/$d ]]; then
    (cd "$root/$d" && pwd)
  else
    echo "$d"
  fi
}

# The end of a script's main(): says so when a tool failed and returns its status. cmp_status FAILED RESULTS_DIR
cmp_status() {
  if (($1)); then
    echo "# at least one tool failed or was missing; see $2"
    return 1
  fi
  return 0
}

# Runs the script's main with its output also kept as RESULTS_DIR/report.txt, and exits with main's status.
cmp_run_main() {  # cmp_run_main RESULTS_DIR
  main 2>&1 | tee "$1/report.txt"
  exit "${PIPESTATUS[0]}"
}
