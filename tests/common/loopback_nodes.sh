# shellcheck shell=bash
# For test scripts that play several nodes on this one machine: one tern-run per "node", each with its own
# TERN_HOSTID, joined into one job over loopback (shared memory inside a node, TCP between nodes). Source it after
# setting BIN (the directory holding tern-run).

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# loopback_nodes NODES RANKS OUT [tern-run options...] -- PROGRAM [ARGS...]: one job of NODES nodes of RANKS ranks
# each; node k's output goes to OUT.nodek. Returns the last non-zero exit status of the tern-runs (0 if none).
loopback_nodes() {
  local nodes=$1 ranks=$2 out=$3 options=() port secret pids=() rc=0 node p
  shift 3
  while (($#)) && [[ $1 != -- ]]; do
    options+=("$1")
    shift
  done
  shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  for ((node = 0; node < nodes; node++)); do
    "$BIN/tern-run" -n "$ranks" --rank-offset $((node * ranks)) --world-size $((nodes * ranks)) \
      --root-addr "127.0.0.1:$port" --secret "$secret" -x TERN_HOSTID="loopback-node$node" -x TERN_SOCKET_IFNAME=lo \
      "${options[@]}" "$@" >"$out.node$node" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  return "$rc"
}
