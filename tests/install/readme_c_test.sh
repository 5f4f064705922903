#!/usr/bin/env bash
# The README's install story for C users, as a new user pastes it: its install block (`cmake --install build
# --prefix "$HOME/.local"` and the exports) against this build tree, then its C example built with pkg-config and
# with find_package(tern), each run on 4 ranks under the installed tern-run. HOME is a temporary folder, so the
# prefix is too. Usage: readme_c_test.sh README.md BUILD_DIR
set -euo pipefail
shopt -s inherit_errexit
readme=$(realpath "$1")
build_dir=$(realpath "$2")
source "$(dirname "$0")/readme_blocks.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home
mkdir -p "$HOME"
# The README's commands name the build tree `build`, relative to the repository root.
ln -s "$build_dir" "$work/build"
cd "$work"
run_block "$readme" install.sh >/dev/null
if [ "$(command -v tern-run)" != "$HOME/.local/bin/tern-run" ]; then
  echo "FAIL: after the install block tern-run is $(command -v tern-run), not the installed $HOME/.local/bin/tern-run" >&2
  exit 1
fi
[ -f "$HOME/.local/lib/pkgconfig/tern.pc" ] && [ -f "$HOME/.local/lib/cmake/tern/ternConfig.cmake" ] &&
  [ -f "$HOME/.local/include/tern/tern.h" ] || { echo "FAIL: tern.pc, ternConfig.cmake or tern.h not installed" >&2; exit 1; }
# The installed tern.pc must name the install-time prefix, not the build's configured one.
[ "$(pkg-config --variable=prefix tern)" = "$HOME/.local" ] ||
  { echo "FAIL: tern.pc's prefix is $(pkg-config --variable=prefix tern), not $HOME/.local" >&2; exit 1; }

# Every installed program and library finds what it links (libtern, libtern_train) without LD_LIBRARY_PATH.
for f in "$HOME"/.local/bin/* "$HOME"/.local/lib/lib*.so; do
  if ldd "$f" | grep "not found" >/dev/null; then
    ldd "$f" >&2
    echo "FAIL: installed $f does not find its libraries" >&2
    exit 1
  fi
done

mkdir "$HOME/hello" && cd "$HOME/hello"
readme_block "$readme" example.c >example.c
expect_example_output "$(run_block "$readme" run.sh)" 4
# The binary finds the installed libtern by itself (RPATH), not through the build tree.
# grep without -q reads all of ldd's output: with -q it may exit at the first match while ldd still writes, and
# under pipefail ldd's SIGPIPE would fail the check.
ldd ./example | grep "$HOME/.local/lib/libtern.so" >/dev/null ||
  { ldd ./example; echo "FAIL: not the installed libtern" >&2; exit 1; }

mkdir "$HOME/hello-cmake" && cd "$HOME/hello-cmake"
readme_block "$readme" example.c >example.c
readme_block "$readme" CMakeLists.txt >CMakeLists.txt
expect_example_output "$(run_block "$readme" cmake.sh)" 4
echo "PASS: the README's install block, C example, pkg-config and find_package(tern) work as written"
