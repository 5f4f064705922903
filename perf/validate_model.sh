#!/usr/bin/env bash
# Validates the cost model against this machine on data the calibration has not seen. Runs the allreduce perf binary
# REPEATS times per configuration: 2 ranks over shared memory (as selected, and with the ring schedule forced), over
# TCP loopback (TERN_SHM_DISABLE=1) and, when a network-namespace cluster is available, on a simulated 2-node
# 1 Gb/s cluster (uncompressed and sign-compressed). Then it calibrates tern-calc (--calibrate) on one part of the
# measurements and checks its predictions (--check) on another:
#
#   held-out sizes and repeats (the verdict): the repeats (interleaved over the configurations) are split in two,
#     A (the odd-numbered ones) for fitting and B (the even-numbered ones) for checking, and the sizes of every configuration by parity of their index
#     (1M, 4M, 16M, ... vs 2M, 8M, ...). Fold 0 fits all configurations together on A's even-index sizes and checks
#     B's odd-index sizes; fold 1 the other way round. Every size is predicted once, by a calibration that saw
#     neither that size nor those measurements. Verdict: every checked size of every verdict configuration within
#     +-TOLERANCE (default 15%) of the measured busbw.
#   leave one configuration out (reported; in the verdict with VERDICT="split loco"): for each configuration, fit on
#     all the others (A, all sizes) and predict it (B, all sizes). The report names what the other configurations'
#     fit covers: a configuration whose link class or algorithm no other one exercises (the shared-memory direct
#     path, the ring over shm, loopback TCP) is predicted from the model's defaults there, so its error says how
#     good the defaults are, not the calibration.
#   in-sample (for reference only, never the verdict): fit and check on the same data, what this script used to
#     report; the gap to the held-out errors is the overfit.
#
#   perf/validate_model.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets):
#   MINBYTES [1M] MAXBYTES [256M] STEPFACTOR [2] ITERS [20] WARMUP [5]   the perf sweep (nccl-tests flags); the size
#                               split needs at least 2 sizes >= MINBYTES (4 or more to fit anything per fold)
#   NP [2]                      ranks of the single-host runs
#   REPEATS [5]                 sweeps per configuration, interleaved (>= 2 for held-out repeats; 4+: both sides
#                               are medians)
#   CLUSTER_NODES [2] CLUSTER_RANKS_PER_NODE [1] CLUSTER_RATE [1gbit] CLUSTER_ITERS [5]   the simulated cluster
#                               (tests/cluster/netns_cluster.sh: network namespaces joined by tbf-shaped links;
#                               needs root, ip and tc, else the cluster part is skipped with a message)
#   SKIP_CLUSTER [0]            1: single-host runs only
#   RT [10]                     run the ranks SCHED_FIFO at this priority (chrt -f; 0: normal priority). On a
#                               shared 2-core machine other processes' time slices otherwise delay the ranks'
#                               wake-ups, and the numbers measure the load instead of tern.
#   TOLERANCE [0.15]            acceptance bound on |busbw predicted / measured - 1|, held-out
#   VERDICT ["split"]           which held-out checks decide the exit code: "split", or "split loco"
#   ANALYZE_ONLY [0]            1: no runs; analyse the NAME.I.json files already in RESULTS_DIR
#   RESULTS_DIR [BUILD_DIR/validate-model-DATE]   perf JSON, logs, the calibration files, the report
# Exit code: 0 when every held-out size is within the bound, 1 when one is not, 2 when a tool failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build="$root/$build"
bin="$build/bin"
MINBYTES=${MINBYTES:-1M} MAXBYTES=${MAXBYTES:-256M} STEPFACTOR=${STEPFACTOR:-2}
ITERS=${ITERS:-20} WARMUP=${WARMUP:-5} NP=${NP:-2} REPEATS=${REPEATS:-5}
CLUSTER_NODES=${CLUSTER_NODES:-2} CLUSTER_RANKS_PER_NODE=${CLUSTER_RANKS_PER_NODE:-1}
CLUSTER_RATE=${CLUSTER_RATE:-1gbit} CLUSTER_ITERS=${CLUSTER_ITERS:-5}
SKIP_CLUSTER=${SKIP_CLUSTER:-0} TOLERANCE=${TOLERANCE:-0.15} RT=${RT:-10} VERDICT=${VERDICT:-split}
ANALYZE_ONLY=${ANALYZE_ONLY:-0}
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

# run_perf NAME I [ENV=VALUE...] [-- EXTRA PERF ARGS]: single-host sweep number I of configuration NAME, in
# $results/NAME.I.json.
run_perf() {
  local name=$1 i=$2
  shift 2
  local envs=() extra=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  [[ ${1:-} == -- ]] && shift
  extra=("$@")
  ((i == 1)) && echo "# $name: tern-run -n $NP all_reduce_perf -b $MINBYTES -e $MAXBYTES -f $STEPFACTOR ${envs[*]}" \
    "${extra[*]} (x$REPEATS)"
  env "${envs[@]}" "${rt[@]}" "$bin/tern-run" -n "$NP" "$bin/all_reduce_perf" -b "$MINBYTES" -e "$MAXBYTES" \
    -f "$STEPFACTOR" -n "$ITERS" -w "$WARMUP" -c 0 -J "$results/$name.$i.json" "${extra[@]}" \
    >"$results/$name.$i.log" 2>&1 || die "$name run failed, see $results/$name.$i.log"
}

# merge_repeats NAME: the REPEATS sweeps of NAME merged (per-size medians) into $results/NAME.json.
merge_repeats() {
  local reps=() i
  for ((i = 1; i <= REPEATS; ++i)); do reps+=("$results/$1.$i.json"); done
  median_json "$results/$1.json" "${reps[@]}"
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
    # Repeats interleaved (uncompressed, compressed, uncompressed, ...) like the single-host ones.
    for ((i = 1; i <= REPEATS; ++i)); do
      for name in cluster cluster-sign; do
        extra=()
        [[ $name == cluster-sign ]] && extra=(-Z sign)
        ((i == 1)) && echo "# $name: $CLUSTER_NODES nodes x $CLUSTER_RANKS_PER_NODE at $CLUSTER_RATE:" \
          "all_reduce_perf ${extra[*]} (x$REPEATS)"
        tnc_launch "${launch_rt[@]}" -p "$CLUSTER_RANKS_PER_NODE" -- "$bin/all_reduce_perf" -b "$MINBYTES" \
          -e "$MAXBYTES" -f "$STEPFACTOR" -n "$CLUSTER_ITERS" -w 1 -c 0 -J "$results/$name.$i.json" "${extra[@]}" \
          >"$results/$name.$i.log" 2>&1 || {
          echo "validate_model: $name run failed, see $results/$name.$i.log" >&2
          exit 2
        }
      done
    done
    for name in cluster cluster-sign; do
      merge_repeats "$name"
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

# measure: every configuration's REPEATS sweeps, NAME.I.json in $results (cluster ones listed in cluster-files).
measure() {
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load" \
    "$(cut -d' ' -f1-3 /proc/loadavg); ranks $([[ $RT != 0 ]] && echo "SCHED_FIFO $RT" || echo "at normal priority")"
  # The repeats are interleaved (shm 1, shm-ring 1, tcp 1, shm 2, ...): this machine's speed drifts over minutes,
  # and back-to-back repeats of one configuration would put a whole slow phase into one repeat of one of them.
  # The schedules run over the shm transport too (forced, so the direct path stays out): without them the shm link
  # class stays at its default, and the model would compare a measured direct path against an unmeasured one.
  local i
  for ((i = 1; i <= REPEATS; ++i)); do
    run_perf shm "$i"
    run_perf shm-ring "$i" TERN_ALGO=ring
    run_perf tcp "$i" TERN_SHM_DISABLE=1
  done
  for name in shm shm-ring tcp; do merge_repeats "$name"; done

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
}

have_cluster=0
echo "# validate_model: results in $results"
if [[ $ANALYZE_ONLY == 1 ]]; then
  echo "# ANALYZE_ONLY=1: no runs, analysing the perf JSON already in $results"
  : >"$results/cluster-files.new"
  for name in cluster cluster-sign; do
    [[ -s $results/$name.1.json ]] && echo "$results/$name.json@$CLUSTER_NODES" >>"$results/cluster-files.new"
  done
  mv "$results/cluster-files.new" "$results/cluster-files"
else
  measure
fi

mapfile -t cluster_files <"$results/cluster-files"
((${#cluster_files[@]})) && have_cluster=1
inter=(--inter "eth:$CLUSTER_RATE")

# Configurations: name, @nodes suffix for tern-calc, whether it counts for the verdict, title.
configs=("shm||1|2 ranks, shared memory (as selected)"
  "shm-ring||0|2 ranks, shared memory, ring schedule (TERN_ALGO=ring; informational: not what runs by default)"
  "tcp||1|2 ranks, TCP loopback")
if ((have_cluster)); then
  configs+=("cluster|@$CLUSTER_NODES|1|$CLUSTER_NODES-node $CLUSTER_RATE cluster"
    "cluster-sign|@$CLUSTER_NODES|1|$CLUSTER_NODES-node $CLUSTER_RATE cluster, sign-compressed")
fi
for c in "${configs[@]}"; do
  [[ -s $results/${c%%|*}.1.json ]] || die "$results/${c%%|*}.1.json missing (no runs? set ANALYZE_ONLY=0)"
done

/usr/bin/env python3 - "$results" "$bin/tern-calc" "$TOLERANCE" "$MINBYTES" "$VERDICT" "${inter[*]}" "${configs[@]}" \
  <<'PY' | tee "$results/report.txt"
import json, os, statistics, subprocess, sys

results, calc, tol, minbytes, verdict_on, inter = sys.argv[1:7]
tol = float(tol)
inter = inter.split()
configs = []
for spec in sys.argv[7:]:
    name, nodes, counts, title = spec.split("|", 3)
    configs.append(dict(name=name, nodes=nodes, verdict=counts == "1", title=title))

def parse_bytes(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:].lower(), 1)
    return int(s[:-1] if mult > 1 else s) * mult

min_size = parse_bytes(minbytes)

def human(b):
    for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= m and b % m == 0:
            return f"{b // m}{unit}"
    return str(b)

def repeat_files(name):
    out, i = [], 1
    while os.path.exists(f"{results}/{name}.{i}.json"):
        out.append(f"{results}/{name}.{i}.json")
        i += 1
    return out

def median_doc(paths, sizes=None):
    """One perf document whose out-of-place times are each size's median over the files, limited to sizes."""
    docs = [json.load(open(p)) for p in paths]
    merged = json.loads(json.dumps(docs[0]))
    keep = []
    for r in merged["results"]:
        if r["size"] < min_size or (sizes is not None and r["size"] not in sizes):
            continue
        times = [x["out_of_place"]["time_us"] for d in docs for x in d["results"] if x["size"] == r["size"]]
        o = r["out_of_place"]
        factor = o["busbw"] / o["algbw"] if o.get("algbw") else 1.0
        o["time_us"] = statistics.median(times)
        o["algbw"] = r["size"] / 1e3 / o["time_us"]
        o["busbw"] = o["algbw"] * factor
        r["repeats_us"] = times
        keep.append(r)
    merged["results"] = keep
    return merged

def write(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path

def tern_calc(args):
    p = subprocess.run([calc] + args + inter + ["--min-size", minbytes, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1] if (p.stderr or p.stdout).strip() else
                           f"exit {p.returncode}")
    return json.loads(p.stdout)

def calibrate(fit_specs, out):
    doc = tern_calc(["--calibrate"] + fit_specs + ["-o", out])
    return doc.get("fit", {}).get("fitted", [])

def check(spec, tune):
    return tern_calc(["--check", spec, "--tune", tune]).get("points", [])

work = f"{results}/heldout"
os.makedirs(work, exist_ok=True)
reps = {c["name"]: repeat_files(c["name"]) for c in configs}
nrep = min(len(v) for v in reps.values())
same_repeats = nrep < 2
sizes = {}
for c in configs:
    all_sizes = sorted({r["size"] for r in json.load(open(reps[c["name"]][0]))["results"] if r["size"] >= min_size})
    sizes[c["name"]] = all_sizes

# Alternate repeats (1, 3, 5, ... fit; 2, 4, ... check): both sides then span the whole measurement, so a phase of
# the machine's drift lands on both instead of deciding which side is fast.
def fit_paths(name):
    return reps[name][0::2]

def check_paths(name):
    return reps[name][1::2] if not same_repeats else reps[name]

def numbers(paths):
    return ", ".join(p.rsplit(".", 2)[-2] for p in paths)

first = configs[0]["name"]
print(f"# held-out validation: {nrep} repeat(s) per configuration, interleaved; fit on repeat(s) "
      f"{numbers(fit_paths(first))} (median), check on "
      f"{'the same repeats (only one: no held-out repeats!)' if same_repeats else f'repeat(s) {numbers(check_paths(first))} (median)'}")
print(f"# sizes split by index parity; tolerance +-{tol * 100:g}% on busbw; verdict on: {verdict_on}")

# ---- held-out sizes and repeats: two folds
heldout = {}  # name -> size -> (measured, predicted, error, fold)
failures = []
for fold in (0, 1):
    fit_specs, check_specs = [], {}
    for c in configs:
        name, ss = c["name"], sizes[c["name"]]
        fit_sizes = {s for i, s in enumerate(ss) if i % 2 == fold}
        chk_sizes = {s for i, s in enumerate(ss) if i % 2 != fold}
        if fit_sizes:
            fit_specs.append(write(median_doc(fit_paths(name), fit_sizes), f"{work}/fold{fold}-fit-{name}.json") +
                             c["nodes"])
        if chk_sizes:
            check_specs[name] = write(median_doc(check_paths(name), chk_sizes),
                                      f"{work}/fold{fold}-check-{name}.json") + c["nodes"]
    tune = f"{work}/fold{fold}-tune.json"
    try:
        fitted = calibrate(fit_specs, tune)
    except RuntimeError as e:
        print(f"# fold {fold}: tern-calc cannot calibrate on this subset: {e}")
        failures.append(f"fold {fold}: calibration failed ({e})")
        continue
    print(f"# fold {fold}: fitted on {'even' if fold == 0 else 'odd'}-index sizes: {', '.join(fitted)}")
    for name, spec in check_specs.items():
        try:
            for p in check(spec, tune):
                heldout.setdefault(name, {})[int(p["size"])] = (p["busbw_measured"], p["busbw_predicted"],
                                                               p["busbw_error"], fold)
        except RuntimeError as e:
            failures.append(f"{name} fold {fold}: check failed ({e})")

verdict_ok = not failures
print()
print("## held-out sizes and repeats: predicted (calibrated without this size and these runs) vs measured busbw")
print(f"{'config':<13} {'size':>6} {'measured':>10} {'predicted':>10} {'error':>8}  fold")
summary = []
for c in configs:
    rows = heldout.get(c["name"], {})
    for s in sorted(rows):
        m, pr, err, fold = rows[s]
        flag = "" if abs(err) <= tol else "  OUTSIDE"
        print(f"{c['name']:<13} {human(s):>6} {m:>10.3f} {pr:>10.3f} {err * 100:>+7.1f}%  {fold}{flag}")
    worst = max((abs(v[2]) for v in rows.values()), default=None)
    ok = worst is not None and worst <= tol
    summary.append((c, worst, ok))
    if c["verdict"] and not ok:
        verdict_ok = False
print()
for c, worst, ok in summary:
    w = "no held-out points" if worst is None else f"worst {worst * 100:.1f}%"
    tag = "" if c["verdict"] else " (informational)"
    print(f"=> {c['title']}: {'within' if ok else 'OUTSIDE'} +-{tol * 100:g}% held-out ({w}){tag}")

# ---- leave one configuration out
print()
print("## leave one configuration out: fit on the other configurations (repeats A, all sizes), predict this one (B)")
loco_ok = True
for c in configs:
    others = [o for o in configs if o["name"] != c["name"]]
    specs = [write(median_doc(fit_paths(o["name"])), f"{work}/loco-{c['name']}-fit-{o['name']}.json") + o["nodes"]
             for o in others]
    target = write(median_doc(check_paths(c["name"])), f"{work}/loco-{c['name']}-check.json") + c["nodes"]
    tune = f"{work}/loco-{c['name']}-tune.json"
    try:
        fitted = calibrate(specs, tune)
        pts = check(target, tune)
    except RuntimeError as e:
        print(f"{c['name']:<13} cannot fit/check without it: {e}")
        loco_ok = loco_ok and not c["verdict"]
        continue
    errs = " ".join(f"{human(int(p['size']))}:{p['busbw_error'] * 100:+.0f}%" for p in pts)
    worst = max((abs(p["busbw_error"]) for p in pts), default=None)
    ok = worst is not None and worst <= tol
    if c["verdict"] and not ok:
        loco_ok = False
    print(f"{c['name']:<13} worst {'-' if worst is None else f'{worst * 100:.1f}%'} "
          f"{'within' if ok else 'OUTSIDE'}  (others fit: {', '.join(fitted) or 'nothing'})")
    print(f"{'':<13} {errs}")
if "loco" in verdict_on.split():
    verdict_ok = verdict_ok and loco_ok

# ---- in-sample, for reference
print()
print("## in-sample (fit and check on the same data; reference only, NOT evidence)")
try:
    specs = [write(median_doc(reps[c["name"]]), f"{results}/{c['name']}.json") + c["nodes"] for c in configs]
    calibrate(specs, f"{results}/tune.json")
    for c, spec in zip(configs, specs):
        pts = check(spec, f"{results}/tune.json")
        worst = max((abs(p["busbw_error"]) for p in pts), default=0)
        print(f"{c['name']:<13} worst {worst * 100:.1f}% in-sample")
except RuntimeError as e:
    print(f"# in-sample calibration failed: {e}")

# Held-out predictions for the plot: each size's prediction from the fold that did not see it.
for c in configs:
    rows = heldout.get(c["name"], {})
    doc = median_doc(check_paths(c["name"]))
    doc["results"] = [dict(r, predicted_us=r["size"] / 1e3 / rows[r["size"]][1] *
                           (r["out_of_place"]["busbw"] / r["out_of_place"]["algbw"]))
                      for r in doc["results"] if r["size"] in rows and rows[r["size"]][1] > 0]
    write(doc, f"{work}/{c['name']}.heldout.json")

print()
for f in failures:
    print(f"# {f}")
print(f"VERDICT (held-out: {verdict_on}): {'PASS' if verdict_ok else 'FAIL'}")
sys.exit(0 if verdict_ok else 1)
PY
verdict=${PIPESTATUS[0]}
((verdict == 0 || verdict == 1)) || die "the held-out analysis failed (exit $verdict)"

# The PNG: measured busbw per configuration (the check repeats), with the held-out prediction dashed.
plot_inputs=()
for c in "${configs[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  [[ $name == shm-ring ]] && continue
  [[ -s $results/heldout/$name.heldout.json ]] && plot_inputs+=("$name=$results/heldout/$name.heldout.json")
done
if ((${#plot_inputs[@]})) && [[ -x /usr/bin/python3 ]] && /usr/bin/python3 "$here/plot.py" \
  -o "$results/validate-model.png" --title "allreduce float32: measured (solid) vs held-out tern-calc (dashed)" \
  "${plot_inputs[@]}" >"$results/plot.log" 2>&1; then
  echo
  echo "# plot: $results/validate-model.png"
else
  echo
  echo "# plot: not made (needs /usr/bin/python3 with matplotlib; see $results/plot.log)"
fi

echo
echo "# calibration from all the data (in-sample): $results/tune.json (TERN_TUNE_FILE=$results/tune.json);" \
  "held-out folds: $results/heldout/"
exit "$verdict"
