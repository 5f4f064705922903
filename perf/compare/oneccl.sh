# shellcheck shell=bash
# oneCCL for the comparison scripts (sourced after common.sh, not run): installs Intel's oneCCL from PyPI into a
# virtual environment of its own on first use, compiles perf/compare/oneccl_collectives.cpp against it, and says how
# to run it. Nothing in the CMake build or `make test` needs any of this. Helpers are prefixed occl_.
#
# What gets installed (ONECCL_PIP): the CPU runtime and headers (oneccl-cpu, oneccl-cpu-devel) and the Intel
# compiler runtime that libccl calls into without listing it (intel-cmplr-lib-rt: libintlc.so.5). oneccl-cpu pulls
# impi-rt, whose libfabric (lib/, providers lib/*-fi.so) is the one oneCCL's OFI transport loads here: 2022.2 wants a
# libfabric >= 2.6 from PyPI that pip cannot find, so pip settles on 2022.1.2, which is pinned for repeatable runs.
#
# Environment (defaults in brackets):
#   ONECCL_VENV [BUILD_DIR/perf-venv-oneccl]   ONECCL_PIP ["oneccl-cpu==2022.1.2 oneccl-cpu-devel==2022.1.2
#   intel-cmplr-lib-rt"]   ONECCL_PYTHON [python3]   ONECCL_CXX [c++]   ONECCL_CXXFLAGS [-O3]
#   ONECCL_COLLECTIVES [ONECCL_VENV/bin/oneccl_collectives]: a driver built elsewhere (then nothing is installed)
#   ONECCL=0: leave oneCCL out (its columns stay empty)
#
# The settings every run gets (occl_env), and why:
#   CCL_WORKER_OFFLOAD=0    the calling thread drives progress; with offload each rank's worker thread busy-spins a
#                           core of its own, which the ranks do not have on a small machine
#   CCL_WORKER_COUNT=1      no extra workers either way
#   CCL_PROCESS_LAUNCHER=none CCL_KVS_IFACE=lo   ranks come from our launcher, the KVS listens on loopback
#   CCL_ATL_TRANSPORT=ofi   oneCCL's own transport layer over libfabric. The other choice, mpi, would put Intel MPI
#                           (and its hydra launcher and PMI) under oneCCL and measure that instead
#   shm: CCL_ATL_SHM=1 FI_PROVIDER=shm   libfabric's shared-memory provider (single-copy CMA for large messages,
#                           as Open MPI's vader and tern's shm transport): what oneCCL uses between ranks of a host
#   tcp: CCL_ATL_SHM=0 FI_PROVIDER=tcp FI_TCP_IFACE=lo   libfabric's TCP provider on loopback, where tern (shm off),
#                           Open MPI's TCP BTL and Gloo run too
#   more ranks than CPUs: CCL_YIELD=sched_yield   oneCCL's setting for giving the CPU away while it polls, the
#                           counterpart of Open MPI's yield when oversubscribed. oneCCL reads it (it says so at
#                           start-up), but whether its waits honour it with CCL_WORKER_OFFLOAD=0 has not been
#                           checked on an idle machine: compare 4-rank runs with ONECCL_ENV=CCL_YIELD=pause
#   ONECCL_ENV: more VAR=value words for every oneCCL run (they come last, so they win)

: "${ONECCL:=1}"
: "${ONECCL_PIP:=oneccl-cpu==2022.1.2 oneccl-cpu-devel==2022.1.2 intel-cmplr-lib-rt}"

# occl_setup BUILD_DIR : makes sure the venv and the driver exist; sets ONECCL_COLLECTIVES. Returns non-zero (with
# a message) when oneCCL cannot be had, so the caller leaves its columns empty.
occl_setup() {
  local build=$1 here src
  ((ONECCL)) || { echo "# oneccl: ONECCL=0, columns left empty"; return 1; }
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  src=$here/oneccl_collectives.cpp
  ONECCL_VENV=${ONECCL_VENV:-$build/perf-venv-oneccl}
  if [[ -n ${ONECCL_COLLECTIVES:-} ]]; then
    [[ -x $ONECCL_COLLECTIVES ]] && return 0
    echo "# oneccl: ONECCL_COLLECTIVES=$ONECCL_COLLECTIVES is not an executable; columns left empty"
    return 1
  fi
  mkdir -p "$(dirname "$ONECCL_VENV")" || return 1
  # Absolute, so the library paths the runs get hold wherever the ranks start.
  ONECCL_VENV=$(cd "$(dirname "$ONECCL_VENV")" && pwd)/$(basename "$ONECCL_VENV")
  local venv=$ONECCL_VENV lib=$ONECCL_VENV/lib
  ONECCL_COLLECTIVES=$venv/bin/oneccl_collectives
  if [[ ! -f $venv/.oneccl-installed || $(cat "$venv/.oneccl-installed") != "$ONECCL_PIP" ]]; then
    echo "# oneccl: installing $ONECCL_PIP into $venv (first use; a few hundred MB)"
    local pip_specs=()
    read -r -a pip_specs <<<"$ONECCL_PIP"
    if ! { [[ -x $venv/bin/pip ]] || "${ONECCL_PYTHON:-python3}" -m venv "$venv"; } ||
      ! "$venv/bin/pip" install --quiet --disable-pip-version-check "${pip_specs[@]}" >"$venv.pip.log" 2>&1; then
      echo "# oneccl: pip install failed (see $venv.pip.log); columns left empty"
      return 1
    fi
    printf '%s' "$ONECCL_PIP" >"$venv/.oneccl-installed"
  fi
  # libccl.so.1 of the CPU wheel lists libccl.so.2 as needed, yet defines every symbol itself (the name belongs to
  # the GPU wheel). Pointing the name back at the same file satisfies the loader, which maps that file only once.
  [[ -e $lib/libccl.so.2 ]] || ln -s libccl.so.1 "$lib/libccl.so.2" || return 1
  if [[ ! -f $lib/libccl.so.1 || ! -f $venv/include/oneapi/ccl.hpp || ! -f $lib/libintlc.so.5 ]]; then
    echo "# oneccl: $venv lacks libccl.so.1, oneapi/ccl.hpp or libintlc.so.5; columns left empty"
    return 1
  fi
  # Rebuilt when a source is newer than the binary.
  local stale=0 f
  [[ -x $ONECCL_COLLECTIVES ]] || stale=1
  for f in "$src" "$here/collectives.hpp" "$here/sweep_cli.hpp" "$here/driver_common.hpp" \
    "$here/../common/host_buffer.hpp"; do
    [[ $f -nt $ONECCL_COLLECTIVES ]] && stale=1
  done
  if ((stale)); then
    local cli11=() flags=()
    # CLI11 as the tree finds it: the system's headers, or the copy CMake fetched into the build directory.
    [[ -f /usr/include/CLI/CLI.hpp ]] || [[ ! -d $build/_deps/cli11-src/include ]] ||
      cli11=(-I "$build/_deps/cli11-src/include")
    read -r -a flags <<<"${ONECCL_CXXFLAGS:--O3}"
    echo "# oneccl: compiling $ONECCL_COLLECTIVES"
    if ! "${ONECCL_CXX:-c++}" -std=c++20 "${flags[@]}" -I "$venv/include" "${cli11[@]}" "$src" \
      -o "$ONECCL_COLLECTIVES.tmp" -L "$lib" -lccl -lintlc -pthread -Wl,-rpath,"$lib" >"$venv.build.log" 2>&1; then
      echo "# oneccl: compiling the driver failed (see $venv.build.log); columns left empty"
      return 1
    fi
    mv "$ONECCL_COLLECTIVES.tmp" "$ONECCL_COLLECTIVES"
  fi
  return 0
}

# occl_version : the installed wheel's version, for the report's header.
occl_version() {
  "$ONECCL_VENV/bin/pip" show oneccl-cpu 2>/dev/null | sed -n 's/^Version: //p'
}

# occl_env TRANSPORT NP : the VAR=value words a oneCCL run gets (see the header for the reasons).
occl_env() {
  local transport=$1 np=$2 lib
  lib=${ONECCL_VENV:-}/lib
  local words=(CCL_WORKER_OFFLOAD=0 CCL_WORKER_COUNT=1 CCL_PROCESS_LAUNCHER=none CCL_KVS_IFACE=lo
    CCL_ATL_TRANSPORT=ofi LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FI_PROVIDER_PATH="$lib")
  case $transport in
    shm) words+=(CCL_ATL_SHM=1 FI_PROVIDER=shm) ;;
    tcp) words+=(CCL_ATL_SHM=0 FI_PROVIDER=tcp FI_TCP_IFACE=lo) ;;
    *) cmp_die "occl_env: transport must be shm or tcp, not '$transport'" ;;
  esac
  local ncpu
  ncpu=$(cmp_usable_cpus | wc -l)
  ((np > ncpu)) && words+=(CCL_YIELD=sched_yield)
  local extra=()
  read -r -a extra <<<"${ONECCL_ENV:-}"
  printf '%s\n' "${words[@]}" "${extra[@]}"
}

# occl_launch NP LOG TRANSPORT TAG DRIVER_ARGS... : one run of NP ranks through cmp_launch_local, bootstrapped through
# a KVS address file of its own (TAG keeps runs apart, so a half-finished earlier run can never be joined).
occl_launch() {
  local np=$1 log=$2 transport=$3 tag=$4 kvs_dir
  shift 4
  local env_words=()
  mapfile -t env_words < <(occl_env "$transport" "$np")
  kvs_dir=$(mktemp -d)
  cmp_launch_local "$np" "$log" env "${env_words[@]}" "$ONECCL_COLLECTIVES" --kvs "$kvs_dir/kvs-$tag" "$@"
  local rc=$?
  rm -rf "$kvs_dir"
  return "$rc"
}
