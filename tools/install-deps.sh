#!/usr/bin/env bash
# Installs the Debian packages tern needs to build, test and benchmark, but only those that are missing, so that
# `make test` / `make run` work on a fresh Debian 12 machine with no other step. Safe to run repeatedly.
set -euo pipefail

packages=(
  cmake g++ make pkg-config            # toolchain
  libgtest-dev libgmock-dev googletest # unit tests
  libbenchmark-dev                     # perf/codec_bench and friends
  libcli11-dev nlohmann-json3-dev      # command lines, JSON
  libpugixml-dev                       # NCCL topology XML files
  libhwloc-dev hwloc                   # topology detection
  libssl-dev                           # libcrypto: HMAC-SHA256 handshakes between ranks
  libucx-dev                           # UCX transport
  libibverbs-dev ibverbs-utils         # ibverbs transport
  libgloo-dev                          # comparison baseline (perf/compare)
  libopenmpi-dev openmpi-bin           # comparison baseline (perf/compare)
  iproute2                             # simulated clusters (network namespaces, tc)
  python3 python3-matplotlib           # perf/plot.py
  python3-venv python3-dev             # the project venv (tools/python-env.sh) and tern._C (Python.h)
  util-linux                           # flock: one tools/python-env.sh at a time per venv
)

# `tools/install-deps.sh --fuzz` (tools/fuzz.sh): clang for the libFuzzer targets too. `make test` never needs it.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tern: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tern: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
