#!/usr/bin/env bash
# train_torch_cluster.sh: PyTorch DDP (perf/torch/ddp_train.py: a 1.08 M-parameter convnet on scikit-learn's
# digits) on a simulated cluster of NODES nodes x PER_NODE ranks with RATE links (default 2 x 2 at 1 Gb/s), in three
# configurations, and issue 15's targets:
#   gloo         init_process_group("gloo"), DDP's own allreduce         the baseline
#   tern         init_process_group("tern"), DDP's own allreduce         time per step >= 1.3x shorter than gloo's
#   tern-sign    tern + compressed_allreduce_hook("sign")                time per step >= 3x shorter than gloo's, test
#                                                                        accuracy within 1 point of tern's
# (and, as a sanity check, tern's accuracy within 1 point of gloo's: the same training on another backend).
#
# Every job is one torchrun per node, started inside the node's network namespace, exactly the multi-node recipe
# of docs/PYTORCH_MULTINODE.md:
#   python -m torch.distributed.run --nnodes NODES --nproc-per-node PER_NODE --node-rank K \
#     --master-addr <node 0's address> --master-port PORT perf/torch/ddp_train.py --backend ... [--hook sign]
# with TERN_SOCKET_IFNAME and GLOO_SOCKET_IFNAME naming the node's interface (tern0) and TERN_HOSTID the node.
#
# Usage: perf/train_torch_cluster.sh [-- EXTRA ddp_train.py FLAGS]   (e.g. -- --epochs 1 for a smoke run)
# Environment: RATE (1gbit), NODES (2), PER_NODE (2), ROUNDS (3: each configuration runs that many times, the order
#   rotating from round to round; the table gives medians with spreads min..max and the checks judge the medians),
#   PYTHON (the python with torch, scikit-learn and tern; default the project venv of tools/python-env.sh),
#   JOB_TIMEOUT (600 s per job), TERN_TIMEOUT (120), PERF_RT (0; N runs the ranks SCHED_FIFO at priority N, which
#   needs a machine with CPUs to spare: the ranks compute), OUT (the directory for logs and JSON, default
#   build/perf-torch-ddp/DATE), SIGN_HOOK (the tern-sign configuration's codec, default sign; sign:rms scales by
#   the RMS as DeepSpeed's 1-bit optimizers do).
# Round r (from 1) trains with --seed r-1 in every configuration (a later --seed in EXTRA overrides), so the
# accuracies compared are medians over seeds. DDP settings (bucket cap, gradient_as_bucket_view) go in EXTRA and
# apply to every configuration alike, e.g. -- --bucket-cap-mb 1 --bucket-view.
# Needs root with ip/tc for the namespaces (tests/cluster/netns_cluster.sh); without them it runs the same jobs as
# one torchrun on this machine and says so: those numbers show the mechanics, not a 1 Gb/s network.
# Exit status: 0 when every check holds, 1 when one does not, 2 on a failed run (a job that wrote no summary stops
# the script; one that failed only on its way out keeps its numbers, with a warning, and a tern job's such failure
# still makes the exit status 2). -- --timeline adds each job's step phases (ddp_train.py's Timeline probe).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ "${1:-}" == "--" ]] && shift
EXTRA=("$@")
RATE=${RATE:-1gbit}
NODES=${NODES:-2}
PER_NODE=${PER_NODE:-2}
ROUNDS=${ROUNDS:-3}
JOB_TIMEOUT=${JOB_TIMEOUT:-600}
SIGN_HOOK=${SIGN_HOOK:-sign}
PERF_RT=${PERF_RT:-0}
export TERN_TIMEOUT=${TERN_TIMEOUT:-120}
((ROUNDS >= 3)) || {
  echo "train_torch_cluster: ROUNDS must be at least 3 (a median needs three runs), not $ROUNDS" >&2
  exit 2
}
TRAIN=$ROOT/perf/torch/ddp_train.py
PYTHON=${PYTHON:-$(bash "$ROOT/tools/python-env.sh")} || {
  echo "train_torch_cluster: no project venv (tools/python-env.sh failed); set PYTHON" >&2
  exit 2
}
"$PYTHON" -c 'import torch, sklearn, tern.torch' 2>/dev/null || {
  echo "train_torch_cluster: $PYTHON cannot import torch, sklearn and tern.torch (pip install scikit-learn; install" \
    "tern with pip install . or put its build on PYTHONPATH)" >&2
  exit 2
}
OUT=${OUT:-$ROOT/build/perf-torch-ddp/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" || exit 2
RT=()
[[ "$PERF_RT" != 0 ]] && RT=(chrt -f "$PERF_RT")

MODE=local
CLUSTER_SCRIPT=$ROOT/tests/cluster/netns_cluster.sh
if [[ -f "$CLUSTER_SCRIPT" ]]; then
  # shellcheck source=../tests/cluster/netns_cluster.sh
  source "$CLUSTER_SCRIPT"
  if tnc_up ddp "$NODES" "$RATE"; then
    MODE=cluster
  else
    echo "train_torch_cluster: NOTE: no simulated cluster here (see above); running locally instead" >&2
  fi
else
  echo "train_torch_cluster: NOTE: $CLUSTER_SCRIPT not found; running locally instead" >&2
fi

echo "# $MODE: $NODES nodes x $PER_NODE ranks, link $RATE; torch $("$PYTHON" -c 'import torch; print(torch.__version__)')," \
  "scikit-learn $("$PYTHON" -c 'import sklearn; print(sklearn.__version__)'); $(nproc) CPUs, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg); ranks $([[ "$PERF_RT" != 0 ]] && echo "SCHED_FIFO $PERF_RT" || echo "normal priority")"
echo "# logs and JSON: $OUT"

# The torchrun noise that says nothing about the run (OMP_NUM_THREADS advice, rank banners).
quiet() { grep -v "OMP_NUM_THREADS\|^\*\*\*\*\|^W[0-9]\{4\} \|warnings.warn\|UserWarning" || true; }

JOBS=0
# run_job LOG JSON TRAIN_ARGS...: one DDP job; its output goes to LOG, rank 0's summary to JSON.
run_job() {
  local log=$1 json=$2
  shift 2
  local port=$((20000 + (RANDOM + JOBS) % 12000))  # below the ephemeral range (32768 and up)
  JOBS=$((JOBS + 1))
  local -a env=(OMP_NUM_THREADS=1 TERN_TIMEOUT="$TERN_TIMEOUT")
  local -a torchrun=("$PYTHON" -m torch.distributed.run --nnodes "$NODES" --nproc-per-node "$PER_NODE")
  rm -f "$json"
  if [[ "$MODE" == local ]]; then
    echo "+ ${torchrun[*]} --master-addr 127.0.0.1 --master-port $port $TRAIN $*" >"$log"
    env "${env[@]}" TERN_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo timeout "$JOB_TIMEOUT" "${RT[@]}" \
      "$PYTHON" -m torch.distributed.run --nnodes 1 --nproc-per-node $((NODES * PER_NODE)) \
      --master-addr 127.0.0.1 --master-port "$port" "$TRAIN" --json "$json" "$@" >>"$log" 2>&1
    return
  fi
  # One torchrun per node, in its namespace (tnc_spawn adds TERN_HOSTID and TERN_SOCKET_IFNAME=tern0).
  local -a pids=()
  local i
  : >"$log"
  for ((i = 0; i < NODES; i++)); do
    local -a cmd=("${torchrun[@]}" --node-rank "$i" --master-addr "$(tnc_addr 0)" --master-port "$port" "$TRAIN"
      "$@")
    echo "+ node $i ($(tnc_ns "$i")): ${cmd[*]}" >>"$log"
    ((i == 0)) && cmd+=(--json "$json")
    tnc_spawn "$i" env "${env[@]}" GLOO_SOCKET_IFNAME="$TNC_IFNAME" timeout "$JOB_TIMEOUT" "${RT[@]}" "${cmd[@]}" \
      >"$log.n$i" 2>&1
    pids+=("$TNC_PID")
  done
  local rc=0
  tnc_wait_nodes torchrun "${pids[@]}" || rc=$?
  for ((i = 0; i < NODES; i++)); do
    sed "s/^/[node $i] /" "$log.n$i" >>"$log"
    rm -f "$log.n$i"
  done
  return "$rc"
}

declare -A SAMPLES=()
TEARDOWN_FAILURES=()
FIELDS=(period_ms step_ms compute_ms exposed_comm_ms test_acc param_spread train_wall_s)
configs=(gloo tern tern-sign)
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < ${#configs[@]}; k++)); do
    cfg=${configs[(k + round - 1) % ${#configs[@]}]}
    case $cfg in
      gloo) args=(--backend gloo) ;;
      tern) args=(--backend tern) ;;
      tern-sign) args=(--backend tern --hook "$SIGN_HOOK") ;;
    esac
    # Each round trains from its own seed (weights, split, sample order), the same for every configuration in the
    # round: the accuracies compared are medians over seeds, not one draw of a 360-sample test set.
    args+=(--seed $((round - 1)))
    log=$OUT/$cfg-r$round.log
    json=$OUT/$cfg-r$round.json
    echo "== $cfg (round $round/$ROUNDS): ddp_train.py ${args[*]} ${EXTRA[*]}"
    start=$SECONDS
    job_rc=0
    run_job "$log" "$json" "${args[@]}" "${EXTRA[@]}" || job_rc=$?
    if [[ ! -s "$json" ]]; then
      echo "train_torch_cluster: $cfg failed (exit status $job_rc, log $log):" >&2
      quiet <"$log" | tail -n 30 >&2
      exit 2
    fi
    if ((job_rc != 0)); then
      # The job measured everything and rank 0 wrote its summary, then a rank failed on the way out (gloo has been
      # seen to abort in its own teardown): the numbers stand, the failure is reported, and a tern job's counts.
      echo "   WARNING: $cfg exited with status $job_rc after writing its summary (log $log); its numbers are kept" >&2
      [[ $cfg == tern* ]] && TEARDOWN_FAILURES+=("$cfg round $round (exit status $job_rc, log $log)")
    fi
    values=$("$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(d[k]) for k in sys.argv[2:]))' "$json" "${FIELDS[@]}") || exit 2
    read -r -a vals <<<"$values"
    for ((f = 0; f < ${#FIELDS[@]}; f++)); do SAMPLES[$cfg/${FIELDS[f]}]="${SAMPLES[$cfg/${FIELDS[f]}]:-} ${vals[f]}"; done
    echo "   period ${vals[0]} ms, step ${vals[1]} ms, compute ${vals[2]} ms, exposed communication ${vals[3]} ms," \
      "test accuracy ${vals[4]}%, parameter spread across ranks ${vals[5]}; job $((SECONDS - start)) s"
    "$PYTHON" -c 'import json, sys
t = json.load(open(sys.argv[1])).get("timeline")
if t:
    cpu = t.pop("cpu_ms_per_step", None)
    print("   timeline (medians, ms): " + ", ".join(f"{k[:-3]} {v}" for k, v in t.items()))
    if cpu: print("   CPU per step by thread (ms, mean of the ranks): " + ", ".join(f"{k} {v}" for k, v in cpu.items()))' "$json"
  done
done

# stat KEY [median|spread]: over KEY's samples (median of an even count: the mean of the middle two).
stat() {
  awk -v what="${2:-median}" '{
    n = split($0, v, " ")
    for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    if (n == 0) { print "-"; exit }
    if (what == "spread") { printf "%g..%g\n", v[1], v[n]; exit }
    print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }' <<<"${SAMPLES[$1]:-}"
}

echo
echo "# medians of $ROUNDS rounds; spreads are min..max"
printf "%-10s %9s %9s %17s %9s %17s %11s %16s %13s\n" config test_acc period_ms period_spread step_ms step_spread \
  compute_ms exposed_comm_ms param_spread
for cfg in "${configs[@]}"; do
  printf "%-10s %8s%% %9s %17s %9s %17s %11s %16s %13s\n" "$cfg" "$(stat "$cfg/test_acc")" \
    "$(stat "$cfg/period_ms")" "$(stat "$cfg/period_ms" spread)" "$(stat "$cfg/step_ms")" \
    "$(stat "$cfg/step_ms" spread)" "$(stat "$cfg/compute_ms")" "$(stat "$cfg/exposed_comm_ms")" \
    "$(stat "$cfg/param_spread" spread)"
done
echo

status=0
check() {  # description, a, b, awk condition over a and b
  if awk -v a="$2" -v b="$3" "BEGIN { exit !($4) }"; then
    echo "PASS  $1"
  else
    echo "FAIL  $1"
    status=1
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
# The targets judge the time per step of training (period_ms); the slowest rank's step median (step_ms) is shown
# beside it (see ddp_train.py's Timing for why the two differ).
step_g=$(stat gloo/period_ms)
step_t=$(stat tern/period_ms)
step_s=$(stat tern-sign/period_ms)
slow_g=$(stat gloo/step_ms)
acc_g=$(stat gloo/test_acc)
acc_t=$(stat tern/test_acc)
acc_s=$(stat tern-sign/test_acc)
check "tern's step is >= 1.3x shorter than gloo's ($step_t ms vs $step_g ms per step: $(ratio "$step_g" "$step_t"); \
slowest rank's step median $(ratio "$slow_g" "$(stat tern/step_ms)"))" "$step_g" "$step_t" "a >= 1.3 * b"
check "tern + sign hook's step is >= 3x shorter than gloo's ($step_s ms vs $step_g ms per step: \
$(ratio "$step_g" "$step_s"); slowest rank's step median $(ratio "$slow_g" "$(stat tern-sign/step_ms)"))" \
  "$step_g" "$step_s" "a >= 3 * b"
check "tern + sign hook reaches tern's accuracy within 1 point ($acc_s% vs $acc_t%)" "$acc_s" "$acc_t" "a >= b - 1"
check "tern trains as gloo does: accuracy within 1 point ($acc_t% vs $acc_g%)" "$acc_t" "$acc_g" \
  "a - b <= 1 && b - a <= 1"
[[ "$MODE" == local ]] && echo "NOTE: local run (no simulated $RATE cluster): the timing checks are not meaningful here"
if ((${#TEARDOWN_FAILURES[@]})); then
  echo "FAIL  tern jobs exited with an error after their summary: ${TEARDOWN_FAILURES[*]}"
  exit 2
fi
exit "$status"
