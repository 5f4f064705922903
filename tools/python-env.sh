#!/usr/bin/env bash
# Creates (first time) or updates the project virtual environment and installs tern into it, then prints the
# venv's python on stdout (everything else goes to stderr), so that `make test` needs no other step:
#   py=$(bash tools/python-env.sh)
# The venv lives outside the repository, named after the hash of tools/python-requirements.txt and the base
# Python's version, so fresh clones (CI) reuse it and a changed requirement list gets a new one:
#   ${TERN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tern/venv-<hash>}
# TERN_PYTHON picks the base interpreter (default python3; on Debian it needs python3-venv and python3-dev, which
# tools/install-deps.sh installs). The project is installed with `pip install --no-build-isolation .` into the
# persistent wheel build folder of pyproject.toml (build-wheel-*), so a second run rebuilds only what changed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements=$root/tools/python-requirements.txt
base_python=${TERN_PYTHON:-python3}
log() { echo "tern: $*" >&2; }

command -v "$base_python" >/dev/null || { log "no $base_python on PATH (set TERN_PYTHON)"; exit 1; }
base_version=$("$base_python" -c 'import sys; print(sys.implementation.cache_tag, sys.version)')
key=$({ cat "$requirements"; echo "$base_version"; } | sha256sum | cut -c1-12)
venv=${TERN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tern/venv-$key}
python=$venv/bin/python
# Written only once every requirement is installed, so an interrupted first run (a 5 GB download) resumes.
ready=$venv/.tern-requirements-installed

mkdir -p "$(dirname "$venv")"
# Two `make test` at once (two clones, CI jobs on one runner) must not install into the same venv together.
exec 9>"$venv.lock"
flock 9

if [ ! -f "$ready" ] || ! cmp -s "$requirements" "$ready"; then
  if [ ! -x "$python" ]; then
    log "creating the project virtual environment $venv"
    "$base_python" -m venv "$venv" >&2 || {
      log "'$base_python -m venv' failed (Debian: apt-get install python3-venv, or run tools/install-deps.sh)"
      rm -rf "$venv"
      exit 1
    }
  fi
  log "installing $(grep -cv '^\s*\(#\|$\)' "$requirements") pinned requirements into it (torch: a few GB, once)"
  "$python" -m pip install --quiet --upgrade pip >&2
  "$python" -m pip install --quiet -r "$requirements" >&2
  cp "$requirements" "$ready"
fi

log "installing tern into $venv (pip install --no-build-isolation .)"
# --no-deps: the requirements above already hold torch; pip must not reach the network for an up-to-date venv.
"$python" -m pip install --quiet --no-build-isolation --no-deps "$root" >&2
echo "$python"
