#!/usr/bin/env bash
# netns_cluster.sh: a simulated multi-node cluster on one Linux machine, made of network namespaces.
#
# Picture (NODES = 2):
#
#     node ns  tnc-NAME-PID-n0            bridge ns  tnc-NAME-PID-br            node ns  tnc-NAME-PID-n1
#     lo, tern0 10.A.B.1/24  ==veth==  n0 --+-- br0 --+-- n1  ==veth==  tern0 10.A.B.2/24, lo
#          tbf RATE on tern0 egress      tbf RATE on n0 / n1 egress          tbf RATE on tern0 egress
#
# Every node has one full-duplex link of RATE to a non-blocking switch (the bridge): a token bucket (tbf) on each
# end of the veth shapes both directions. Everything, addresses included, lives inside namespaces this script
# creates; nothing touches the machine's own interfaces or routes. Ranks on one node share a TERN_HOSTID (the
# node's name), so tern connects them through shared memory (/dev/shm is shared by all namespaces) and uses TCP
# over tern0 between nodes.
#
# Measured link rate (this machine, 2 CPUs; RATE 1gbit; tbf burst 1 ms = 125 KB, latency 20 ms):
#   link_rate_test.sh (python, 4 TCP streams, 2 s, SCHED_FIFO): 0.956-0.957 Gb/s of TCP payload one way, which is
#     the ceiling of a 1 Gb/s link (tbf counts 1514-byte frames, TCP carries 1448 bytes in each: 0.956); 0.94-0.95
#     Gb/s each way with both directions at once (full duplex). At normal priority on a loaded machine python
#     itself limits it to 0.88-0.95.
#   all_reduce_perf 64 MiB, 2 nodes x 1 rank (ranks SCHED_FIFO, see tnc_launch --rt): 564 ms, busbw 0.119 GB/s =
#     95% of the 0.125 GB/s a 1 Gb/s link allows; TX counters show 70.2 MB of frames per 67.1 MB allreduce.
#   Unshaped (RATE none) the same allreduce takes ~60 ms: the shaping, not the machine, sets the pace.
#
# ---- As a library (bash): source it, then
#   tnc_up NAME NODES RATE      create the cluster (RATE: tc syntax such as 1gbit, 100mbit, or "none"). Installs an
#                               EXIT/INT/TERM/HUP trap that tears it down, whatever happens. Returns 77 (with
#                               "SKIPPED: cannot create network namespaces (need root, ip, tc)") where it cannot
#                               be done, so a ctest script can `tnc_up ... || exit $?` with SKIP_RETURN_CODE 77.
#   tnc_run NODE CMD...         run CMD in node NODE (0..NODES-1) with TERN_HOSTID=<node name> and
#                               TERN_SOCKET_IFNAME=tern0 (CMD must be a program, not a shell function)
#   tnc_spawn NODE CMD...       the same in the background; TNC_PID is the program's pid (tnc_down kills what
#                               is left in the namespaces anyway)
#   tnc_addr NODE               print the node's IPv4 address
#   tnc_ns NODE / tnc_hostid NODE   print the node's namespace / host id
#   tnc_launch [OPTIONS] [--] PROG ARGS...
#                               run a tern job over the cluster with tools/tern-run (one tern-run per node, or
#                               per rank), wait for it, print the ranks' output tagged with global ranks, and
#                               return the first failure's exit code (the other nodes' tern-runs are then
#                               stopped). Options:
#                                 -p N        ranks per node (default 1)
#                                 --order block|cyclic   block: node i has ranks i*p..i*p+p-1 (default);
#                                             cyclic: node i has ranks i, i+NODES, ... (a rank order that
#                                             alternates between nodes)
#                                 -x NAME=VALUE   extra environment for every rank (repeatable)
#                                 --timeout S tern-run --timeout (default 600)
#                                 --tern-run PATH (default $TNC_TERN_RUN, else tern-run in PATH)
#                                 --pin       give node i its own share of the machine's CPUs (taskset; CPUs
#                                             i*k..i*k+k-1 with k = max(1, CPUs / NODES), wrapping around),
#                                             the way real nodes each have their own; without it the ranks of
#                                             all nodes float over every CPU (tnc_cpus_of NODE prints the share)
#                                 --rt PRIO   run the job's processes SCHED_FIFO at PRIO (chrt -f): a simulated
#                                             node has no CPUs of its own, and on a loaded machine each wake-up
#                                             of a rank otherwise waits for other processes' time slices (a 64 MiB
#                                             2-rank TCP allreduce measured 7x slower). For benchmarks; the ranks
#                                             mostly sleep on the 1 Gb/s links, and the kernel keeps 5% of each
#                                             CPU for others (sched_rt_runtime_us).
#   tnc_down                    tear the cluster down (kills what still runs in its namespaces); idempotent
#   tnc_gc                      remove clusters left behind by owners that no longer exist (a SIGKILLed test)
#
# ---- As a command
#   netns_cluster.sh up NAME NODES RATE   create a cluster owned by the calling shell ($PPID); prints its id.
#                                         It stays until `down` (or `gc` after its owner exited).
#   netns_cluster.sh run ID NODE CMD...   run CMD in a node (ID as printed by up, or NAME if only one such cluster)
#   netns_cluster.sh launch ID [OPTIONS] [--] PROG ARGS...   tnc_launch on that cluster
#   netns_cluster.sh addr ID NODE | info ID | down ID | gc | list
#   netns_cluster.sh exec NAME NODES RATE CMD...
#                                         up, run CMD in the host namespace with TNC_ID and TNC_SCRIPT exported
#                                         (so it can call "$TNC_SCRIPT" run "$TNC_ID" 0 ...), then down
#
# Example: 2 nodes x 2 ranks at 1 Gb/s
#   tests/cluster/netns_cluster.sh exec demo 2 1gbit bash -c \
#     '"$TNC_SCRIPT" launch "$TNC_ID" -p 2 --tern-run build/bin/tern-run build/bin/all_reduce_perf -b 64M -e 64M'

TNC_SKIP_CODE=77
TNC_IFNAME=tern0
TNC_STATE_ROOT=${TNC_STATE_ROOT:-/run/tern-netns}
TNC_SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")

# Current cluster (set by tnc_up or tnc_attach).
TNC_ID=""
TNC_NODES=0
TNC_RATE=""
TNC_SUBNET=""  # e.g. 10.123.45 (the /24's first three octets)
TNC_OWNED=0    # 1 when this shell created the cluster and its trap must remove it
TNC_LAUNCHES=0

tnc__say() { echo "netns_cluster: $*" >&2; }

tnc__skip() {
  echo "SKIPPED: cannot create network namespaces (need root, ip, tc): $*" >&2
  return "$TNC_SKIP_CODE"
}

tnc_ns() { echo "tnc-${TNC_ID}-n$1"; }
tnc_bridge_ns() { echo "tnc-${TNC_ID}-br"; }
tnc_hostid() { echo "${TNC_ID}-n$1"; }
tnc_addr() { echo "${TNC_SUBNET}.$(($1 + 1))"; }

tnc__check_node() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 < TNC_NODES)) && return 0
  tnc__say "no node '$1' in cluster ${TNC_ID:-<none>} (nodes 0..$((TNC_NODES - 1)))"
  return 2
}

# Can this process make namespaces, veths, bridges and tbf qdiscs at all? Tries once, in a scratch namespace.
tnc__probe() {
  [[ $(id -u) == 0 ]] || {
    tnc__skip "not root"
    return
  }
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    tnc__skip "ip or tc (iproute2) not installed"
    return
  fi
  local p="tnc-probe-$$"
  if ! ip netns add "$p" 2>/dev/null; then
    tnc__skip "ip netns add failed"
    return
  fi
  local ok=1 why=""
  ip -n "$p" link add tnp0 type veth peer name tnp1 2>/dev/null || {
    ok=0
    why="veth not available"
  }
  ((ok)) && ! ip -n "$p" link add tnpbr type bridge 2>/dev/null && {
    ok=0
    why="bridge not available"
  }
  ((ok)) && ! tc -n "$p" qdisc add dev tnp0 root tbf rate 1gbit burst 64kb latency 10ms 2>/dev/null && {
    ok=0
    why="tc tbf not available"
  }
  ip netns del "$p" 2>/dev/null
  ((ok)) || tnc__skip "$why"
}

# Writes the state file other processes (the CLI's run/down) attach to.
tnc__save() {
  mkdir -p "$TNC_STATE_ROOT" || return 1
  {
    echo "TNC_ID=$TNC_ID"
    echo "TNC_NODES=$TNC_NODES"
    echo "TNC_RATE=$TNC_RATE"
    echo "TNC_SUBNET=$TNC_SUBNET"
  } >"$TNC_STATE_ROOT/$TNC_ID"
}

# tnc_attach ID-or-NAME: make an existing cluster the current one.
tnc_attach() {
  local want=$1 file="" f matches=()
  if [[ -f "$TNC_STATE_ROOT/$want" ]]; then
    file="$TNC_STATE_ROOT/$want"
  else
    for f in "$TNC_STATE_ROOT/$want"-*; do [[ -f "$f" ]] && matches+=("$f"); done
    if ((${#matches[@]} == 1)); then
      file=${matches[0]}
    elif ((${#matches[@]} > 1)); then
      tnc__say "several clusters named $want; give the full id: ${matches[*]##*/}"
      return 2
    fi
  fi
  [[ -n "$file" ]] || {
    tnc__say "no cluster $want (see: $0 list)"
    return 2
  }
  local line
  while IFS= read -r line; do
    case "$line" in
      TNC_ID=* | TNC_NODES=* | TNC_RATE=* | TNC_SUBNET=*) declare -g "$line" ;;
    esac
  done <"$file"
  TNC_OWNED=0
}

# Shapes one interface's egress to TNC_RATE. Burst: 1 ms at the rate, at least 64 KiB, so that a whole TSO/GSO
# packet (up to 64 KiB) passes the bucket without being split by tbf; latency bounds the queue (what a switch
# port buffers), beyond which packets are dropped and TCP backs off as on a real congested link.
tnc__shape() {  # ns dev
  [[ "$TNC_RATE" == none ]] && return 0
  local bps burst
  bps=$(tnc__rate_bps "$TNC_RATE") || return 1
  burst=$((bps / 8 / 1000))
  ((burst < 65536)) && burst=65536
  tc -n "$1" qdisc replace dev "$2" root tbf rate "$TNC_RATE" burst "$burst" latency 20ms
}

# tc rate syntax -> bits per second (bit, kbit, mbit, gbit; bps, kbps, mbps, gbps are bytes per second).
tnc__rate_bps() {
  local r=${1,,} n unit
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([a-z]*)$ ]] || {
    tnc__say "bad rate '$1' (want e.g. 1gbit, 100mbit)"
    return 1
  }
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[3]}
  local mult
  case "$unit" in
    "" | bit) mult=1 ;;
    kbit) mult=1000 ;;
    mbit) mult=1000000 ;;
    gbit) mult=1000000000 ;;
    bps) mult=8 ;;
    kbps) mult=8000 ;;
    mbps) mult=8000000 ;;
    gbps) mult=8000000000 ;;
    *)
      tnc__say "bad rate unit '$unit' in '$1'"
      return 1
      ;;
  esac
  awk -v n="$n" -v m="$mult" 'BEGIN { printf "%.0f\n", n * m }'
}

# tnc_up NAME NODES RATE [OWNER_PID]
tnc_up() {
  local name=$1 nodes=$2 rate=$3 owner=${4:-$$}
  if [[ -n "$TNC_ID" && "$TNC_OWNED" == 1 ]]; then
    tnc__say "a cluster ($TNC_ID) is already up in this shell; tnc_down first"
    return 2
  fi
  [[ "$name" =~ ^[A-Za-z0-9_.]+$ ]] || {
    tnc__say "NAME must be letters, digits, _ or . (got '$name')"
    return 2
  }
  if ! [[ "$nodes" =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 250)); then
    tnc__say "NODES must be 1..250 (got '$nodes')"
    return 2
  fi
  if [[ "$rate" != none ]]; then tnc__rate_bps "$rate" >/dev/null || return 2; fi
  tnc__probe || return
  tnc_gc

  TNC_ID="${name}-${owner}"
  TNC_NODES=$nodes
  TNC_RATE=$rate
  # A private /24 inside our namespaces only; varying it by owner just keeps logs of parallel clusters apart.
  TNC_SUBNET="10.$((100 + owner % 100)).$((owner / 100 % 250))"
  TNC_OWNED=1
  # Tear down whatever happens from here on, including a failure half-way through creation.
  trap 'tnc_down' EXIT
  trap 'tnc_down; trap - INT; kill -INT $$' INT
  trap 'tnc_down; trap - TERM; kill -TERM $$' TERM
  trap 'tnc_down; trap - HUP; kill -HUP $$' HUP
  tnc__save || {
    tnc__say "cannot write state to $TNC_STATE_ROOT"
    tnc_down
    return 1
  }

  local br i ns
  br=$(tnc_bridge_ns)
  if ! {
    ip netns add "$br" &&
      ip -n "$br" link set lo up &&
      ip -n "$br" link add br0 type bridge &&
      ip -n "$br" link set br0 up
  }; then
    tnc__say "cannot create the bridge namespace $br"
    tnc_down
    return 1
  fi
  for ((i = 0; i < nodes; i++)); do
    ns=$(tnc_ns "$i")
    # The veth is created inside the node namespace with its peer moved straight into the bridge namespace, so no
    # interface ever appears in the host namespace (no name clashes with parallel clusters or the machine's own).
    if ! {
      ip netns add "$ns" &&
        ip -n "$ns" link set lo up &&
        ip -n "$ns" link add "$TNC_IFNAME" type veth peer name "n$i" netns "$br" &&
        ip -n "$ns" addr add "$(tnc_addr "$i")/24" dev "$TNC_IFNAME" &&
        ip -n "$ns" link set "$TNC_IFNAME" up &&
        ip -n "$br" link set "n$i" master br0 &&
        ip -n "$br" link set "n$i" up &&
        tnc__shape "$ns" "$TNC_IFNAME" &&
        tnc__shape "$br" "n$i"
    }; then
      tnc__say "cannot create node $i ($ns)"
      tnc_down
      return 1
    fi
  done
  tnc__say "cluster $TNC_ID up: $nodes node(s) ${TNC_SUBNET}.1..$nodes/24, links $rate each way"
}

tnc_run() {
  local node=$1
  shift
  tnc__check_node "$node" || return
  local -a prefix
  tnc__prefix "$node"
  "${prefix[@]}" "$@"
}

# tnc_spawn NODE CMD...: tnc_run in the background; TNC_PID is the program's own pid (kill it, wait for it).
tnc_spawn() {
  local node=$1
  shift
  tnc__check_node "$node" || return
  local -a prefix
  tnc__prefix "$node"
  "${prefix[@]}" "$@" &
  # shellcheck disable=SC2034  # for the caller
  TNC_PID=$!
}

# Sets the caller's array `prefix` to the command line that runs a program in node $1 (ip netns exec execs the
# program in place, so a pid from `"${prefix[@]}" prog &` is the program's own pid).
tnc__prefix() {
  prefix=(ip netns exec "$(tnc_ns "$1")" env TERN_HOSTID="$(tnc_hostid "$1")" TERN_SOCKET_IFNAME="$TNC_IFNAME")
}

tnc_info() {
  local i
  echo "cluster $TNC_ID: $TNC_NODES node(s), link rate $TNC_RATE per direction, bridge ns $(tnc_bridge_ns)"
  for ((i = 0; i < TNC_NODES; i++)); do
    echo "  node $i: ns $(tnc_ns "$i") addr $(tnc_addr "$i") ifname $TNC_IFNAME hostid $(tnc_hostid "$i")"
  done
}

tnc__random_secret() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }

# tnc_cpus_of NODE : node NODE's share of the CPUs under tnc_launch --pin, as a taskset list.
tnc_cpus_of() {
  local cpus k n i first
  mapfile -t cpus < <(taskset -pc $$ | sed 's/.*: *//' | tr ',' '\n' |
    awk -F- '{ if (NF == 2) for (c = $1; c <= $2; c++) print c; else print $1 }')
  n=${#cpus[@]}
  k=$((n / TNC_NODES))
  ((k >= 1)) || k=1
  first=$((($1 * k) % n))
  local share=("${cpus[@]:first:k}")
  (IFS=,; echo "${share[*]}")
}

tnc_launch() {
  local per_node=1 order=block timeout=600 tern_run=${TNC_TERN_RUN:-} extra=() rt=() pin=0
  while (($#)); do
    case "$1" in
      --pin)
        pin=1
        shift
        ;;
      -p)
        per_node=$2
        shift 2
        ;;
      --order)
        order=$2
        shift 2
        ;;
      -x)
        extra+=(-x "$2")
        shift 2
        ;;
      --timeout)
        timeout=$2
        shift 2
        ;;
      --tern-run)
        tern_run=$2
        shift 2
        ;;
      --rt)
        rt=(chrt -f "$2")
        shift 2
        ;;
      --)
        shift
        break
        ;;
      *) break ;;
    esac
  done
  (($#)) || {
    tnc__say "tnc_launch: missing program"
    return 2
  }
  [[ "$order" == block || "$order" == cyclic ]] || {
    tnc__say "tnc_launch: --order block|cyclic"
    return 2
  }
  [[ -n "$tern_run" ]] || tern_run=$(command -v tern-run) || {
    tnc__say "tnc_launch: no tern-run (give --tern-run PATH or set TNC_TERN_RUN)"
    return 2
  }
  tern_run=$(readlink -f "$tern_run")
  local world=$((TNC_NODES * per_node)) secret port i
  secret=$(tnc__random_secret)
  # A fresh port per job, so a job never meets the previous job's lingering listener.
  TNC_LAUNCHES=$((TNC_LAUNCHES + 1))
  # Below the kernel's ephemeral range (32768 and up): a port there may be held by an earlier job's connection in
  # TIME_WAIT, which a listener cannot bind over.
  port=$((20000 + (RANDOM + TNC_LAUNCHES) % 12000))
  local -a common=(--world-size "$world" --root-addr "$(tnc_addr 0):$port" --secret "$secret"
    --timeout "$timeout" "${extra[@]}")
  local -a pids=() prefix placement
  for ((i = 0; i < TNC_NODES; i++)); do
    if [[ "$order" == block ]]; then
      placement=(--rank-offset $((i * per_node)))
    else
      placement=(--rank-offset "$i" --rank-stride "$TNC_NODES")
    fi
    tnc__prefix "$i"
    local cpuset=()
    ((pin)) && cpuset=(taskset -c "$(tnc_cpus_of "$i")")
    "${prefix[@]}" "${cpuset[@]}" "${rt[@]}" "$tern_run" -n "$per_node" "${placement[@]}" "${common[@]}" -- "$@" &
    pids+=($!)
  done
  tnc_wait_nodes "tern-run" "${pids[@]}"
}

# tnc_wait_nodes WHAT PID... : waits for one launcher per node (background jobs of this shell). The first failure
# wins: the other nodes are stopped then (their ranks would otherwise wait for the lost peer until TERN_TIMEOUT,
# e.g. when a rank died during bootstrap). Returns the first non-zero exit status, else 0.
tnc_wait_nodes() {
  local what=$1
  shift
  local rc=0 done_pid status p
  local -a running=("$@")
  while ((${#running[@]} > 0)); do
    status=0
    done_pid=""
    wait -n -p done_pid "${running[@]}" || status=$?
    [[ -n "$done_pid" ]] || break
    local -a still=()
    for p in "${running[@]}"; do [[ "$p" == "$done_pid" ]] || still+=("$p"); done
    running=("${still[@]}")
    if ((status != 0 && rc == 0)); then
      rc=$status
      tnc__say "$what on a node exited $status; stopping the others"
      for p in "${running[@]}"; do kill -TERM "$p" 2>/dev/null; done
    fi
  done
  ((${#running[@]} == 0)) || wait "${running[@]}" 2>/dev/null
  return "$rc"
}

# Removes the current cluster: kills what runs in its namespaces (all started through this cluster), deletes the
# namespaces (which deletes their veths, bridge and qdiscs) and the state file. Safe to call twice.
tnc_down() {
  [[ -n "$TNC_ID" ]] || return 0
  local id=$TNC_ID ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^tnc-${id//./\\.}-(br|n[0-9]+)$"); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [[ -n "$pids" ]]; then
      # shellcheck disable=SC2086  # word splitting of the pid list is intended
      kill -KILL $pids 2>/dev/null
      # Reap the ones that are this shell's background jobs, quietly (no "Killed" job reports).
      # shellcheck disable=SC2086
      wait $pids 2>/dev/null
    fi
    ip netns del "$ns" 2>/dev/null
  done
  rm -f "$TNC_STATE_ROOT/$id"
  if [[ "$TNC_OWNED" == 1 ]]; then
    trap - EXIT INT TERM HUP
    tnc__say "cluster $id down"
  fi
  TNC_ID=""
  TNC_NODES=0
  TNC_OWNED=0
}

# Removes clusters whose owner process is gone (named tnc-NAME-OWNERPID-...), and probe namespaces (tnc-probe-PID)
# of a tnc_up killed while probing.
tnc_gc() {
  local ns owner id
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tnc-probe-[0-9]+$'); do
    [[ -d /proc/${ns#tnc-probe-} ]] || ip netns del "$ns" 2>/dev/null
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tnc-.+-[0-9]+-(br|n[0-9]+)$'); do
    id=${ns#tnc-}
    id=${id%-*}
    owner=${id##*-}
    [[ -d /proc/$owner ]] && continue
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null && tnc__say "removed stale namespace $ns (owner $owner gone)"
    rm -f "$TNC_STATE_ROOT/$id"
  done
}

tnc__main() {
  local cmd=${1:-}
  shift || true
  case "$cmd" in
    up)
      (($# == 3)) || {
        echo "usage: $0 up NAME NODES RATE" >&2
        return 2
      }
      tnc_up "$1" "$2" "$3" "$PPID" || return
      # The cluster outlives this command: it belongs to the calling shell now.
      trap - EXIT INT TERM HUP
      TNC_OWNED=0
      echo "$TNC_ID"
      ;;
    run)
      (($# >= 3)) || {
        echo "usage: $0 run ID NODE CMD..." >&2
        return 2
      }
      tnc_attach "$1" || return
      shift
      tnc_run "$@"
      ;;
    launch)
      tnc_attach "$1" || return
      shift
      tnc_launch "$@"
      ;;
    addr)
      tnc_attach "$1" || return
      tnc__check_node "$2" || return
      tnc_addr "$2"
      ;;
    info)
      tnc_attach "$1" || return
      tnc_info
      ;;
    down)
      tnc_attach "$1" || return
      TNC_OWNED=1
      tnc_down
      ;;
    gc) tnc_gc ;;
    list) ls "$TNC_STATE_ROOT" 2>/dev/null ;;
    exec)
      (($# >= 4)) || {
        echo "usage: $0 exec NAME NODES RATE CMD..." >&2
        return 2
      }
      tnc_up "$1" "$2" "$3" || return
      shift 3
      local rc=0
      TNC_ID=$TNC_ID TNC_SCRIPT=$TNC_SCRIPT_PATH "$@" || rc=$?
      tnc_down
      return "$rc"
      ;;
    *)
      sed -n '2,/^$/p' "$TNC_SCRIPT_PATH" | sed 's/^# \{0,1\}//' >&2
      return 2
      ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  tnc__main "$@"
  exit
fi
