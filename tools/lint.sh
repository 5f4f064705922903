#!/usr/bin/env bash
# Lint the project's own C++ code: clang-format (src/, include/) and clang-tidy (src/**/*.cpp, using .clang-tidy).
#
#   bash tools/lint.sh [BUILD_DIR]        BUILD_DIR defaults to build/ and must hold compile_commands.json
#
# Environment: CLANG_FORMAT, CLANG_TIDY (binaries to use), LINT_JOBS (parallel clang-tidy runs, default nproc).
# Exits 0 when both tools report nothing, 1 on any finding, 2 on a setup problem.
set -uo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
BUILD_DIR="${1:-build}"
BUILD_DIR="$(cd "$BUILD_DIR" 2>/dev/null && pwd)" || {
  echo "lint: build directory '${1:-build}' does not exist" >&2
  exit 2
}

pick_tool() {  # pick_tool NAME [OVERRIDE]: the override, else NAME, else NAME-<version>
  local name="$1" override="${2:-}"
  if [[ -n "$override" ]]; then echo "$override"; return; fi
  if command -v "$name" >/dev/null 2>&1; then echo "$name"; return; fi
  local v
  for v in 19 18 17 16 15 14; do
    if command -v "$name-$v" >/dev/null 2>&1; then echo "$name-$v"; return; fi
  done
}
CLANG_FORMAT="$(pick_tool clang-format "${CLANG_FORMAT:-}")"
CLANG_TIDY="$(pick_tool clang-tidy "${CLANG_TIDY:-}")"
for tool in "$CLANG_FORMAT" "$CLANG_TIDY"; do
  if [[ -z "$tool" ]] || ! command -v "$tool" >/dev/null 2>&1; then
    echo "lint: clang-format and clang-tidy are required (set CLANG_FORMAT / CLANG_TIDY to override)" >&2
    exit 2
  fi
done

DB="$BUILD_DIR/compile_commands.json"
if [[ ! -f "$DB" ]]; then
  echo "lint: $DB not found. Produce it with:" >&2
  echo "  cmake -S . -B ${1:-build} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON" >&2
  exit 2
fi

JOBS="${LINT_JOBS:-$(nproc 2>/dev/null || echo 2)}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# clang-tidy reads the build's commands through a copy without the GCC-only flags it may not know (the TLS
# dialect, cmake/TernLayers.cmake).
mkdir -p "$TMP/db"
sed 's/ -mtls-dialect=gnu2//g' "$DB" >"$TMP/db/compile_commands.json"

# ---- clang-format: every C++ source and header of ours ----
mapfile -t FORMAT_FILES < <(find src include -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) | sort)
"$CLANG_FORMAT" --dry-run --Werror "${FORMAT_FILES[@]}" >"$TMP/format.txt" 2>&1
FORMAT_FILES_BAD=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: error:' "$TMP/format.txt" | cut -d: -f1 | sort -u | wc -l)
if [[ "$FORMAT_FILES_BAD" -gt 0 ]]; then
  grep -E '^[^ ]+:[0-9]+:[0-9]+: error:' "$TMP/format.txt" | sort -u
fi

# ---- clang-tidy: src/**/*.cpp (not .cu) that the build compiles ----
# Sources of optional parts (UCX, ibverbs, training layer) are only in the database when the build enables them.
sed -n 's/^[[:space:]]*"file":[[:space:]]*"\(.*\)",\{0,1\}[[:space:]]*$/\1/p' "$DB" | sed "s#^$ROOT/##" |
  grep -E '^src/' >"$TMP/in_db.txt"
sort -u -o "$TMP/in_db.txt" "$TMP/in_db.txt"
find src -type f -name '*.cpp' | sort >"$TMP/all.txt"
comm -12 "$TMP/all.txt" "$TMP/in_db.txt" >"$TMP/tidy_files.txt"
comm -23 "$TMP/all.txt" "$TMP/in_db.txt" >"$TMP/skipped.txt"
TIDY_COUNT=$(wc -l <"$TMP/tidy_files.txt")
SKIPPED=$(wc -l <"$TMP/skipped.txt")

echo "lint: clang-tidy on $TIDY_COUNT files with $JOBS jobs ($CLANG_TIDY, database $DB)"
mkdir -p "$TMP/tidy"
TIDY_DB="$TMP/db"
export CLANG_TIDY TIDY_DB TMP
# One output file per translation unit; a non-zero status (compile error, crash) is recorded next to it.
xargs -a "$TMP/tidy_files.txt" -P "$JOBS" -I{} bash -c '
  out="$TMP/tidy/$(echo "$1" | tr / _)"
  "$CLANG_TIDY" -p "$TIDY_DB" --quiet "$1" >"$out.txt" 2>"$out.err" || echo "$1" >"$out.failed"
' _ {}

# Header findings repeat once per including file: count each distinct location and check once.
cat "$TMP"/tidy/*.txt 2>/dev/null | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' | sort -u >"$TMP/findings.txt"
FINDINGS=$(wc -l <"$TMP/findings.txt")
FAILED=$(cat "$TMP"/tidy/*.failed 2>/dev/null | wc -l)
if [[ "$FINDINGS" -gt 0 ]]; then  # each diagnostic with its notes and source excerpt, once
  cat "$TMP"/tidy/*.txt | awk '/^[^ ]+:[0-9]+:[0-9]+: (warning|error):/ { show = !($0 in seen); seen[$0] = 1 } show'
fi
if [[ "$FAILED" -gt 0 && "$FINDINGS" -eq 0 ]]; then
  echo "lint: clang-tidy failed on:"; cat "$TMP"/tidy/*.failed
  for f in "$TMP"/tidy/*.failed; do tail -n 20 "${f%.failed}.err"; done
fi

echo "---- lint summary ----"
echo "clang-format: ${#FORMAT_FILES[@]} files checked, $FORMAT_FILES_BAD need formatting"
echo "clang-tidy:   $TIDY_COUNT files checked, $FINDINGS findings, $FAILED files with errors"
if [[ "$SKIPPED" -gt 0 ]]; then
  echo "              $SKIPPED src/ files not in the compile database (optional parts not configured), skipped"
fi
if [[ "$FINDINGS" -gt 0 ]]; then
  echo "by check:"
  grep -oE '\[[A-Za-z0-9.,-]+\]$' "$TMP/findings.txt" | sort | uniq -c | sort -rn
fi
if [[ "$FORMAT_FILES_BAD" -gt 0 || "$FINDINGS" -gt 0 || "$FAILED" -gt 0 ]]; then
  echo "lint: FAILED"
  exit 1
fi
echo "lint: OK"
