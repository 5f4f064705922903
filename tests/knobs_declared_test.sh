#!/usr/bin/env bash
# Every TERN_* variable the library reads is declared once, in the knobs table (src/base/env.cpp), and read through
# it; the README's environment table and docs/TUNING.md say what the table says. Static checks of the source tree:
#  1. no getenv/secure_getenv in src/ outside the table's own lookup (src/base/env.cpp), the one accessor for other
#     programs' variables (launcherVariable, src/core/env_init.cpp) and UCX's own UCX_* variables (src/transport/ucx);
#     and nowhere a getenv of a "TERN_..." literal;
#  2. every name passed to envString/envInt/envFlag/envDecimal in src/ is a table entry (an undeclared one is an
#     internal error only when that line runs);
#  3. every table entry but the test hooks (TEST_*) has a row in the README's "Environment variables" table and
#     every TERN_ name there is an entry; a row's default column is the entry's default (several names in one row:
#     their defaults joined by "; ", or an empty column);
#  4. every TERN_ name docs/TUNING.md mentions is an entry.
# Usage: knobs_declared_test.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: knobs_declared_test.sh REPO_ROOT}
cd "$root"

fail=0
complain() {
  echo "FAIL: $*"
  fail=1
}

# Files still calling getenv for a knob (none now; a file listed here is exempt from check 1 while it is moved over).
pending=()

# 1. getenv outside the accessors. Comments do not count.
while IFS= read -r hit; do
  file=${hit%%:*}
  case "$file" in
    src/base/env.cpp | src/core/env_init.cpp | src/transport/ucx/*) continue ;;
  esac
  for p in "${pending[@]}"; do [[ "$file" == "$p" ]] && continue 2; done
  complain "getenv outside the knobs table's accessors: $hit (read it with envString/envInt/envFlag/envDecimal)"
done < <(grep -rnE '\b(secure_)?getenv[[:space:]]*\(' src --include='*.cpp' --include='*.hpp' --include='*.h' \
  --include='*.cu' --include='*.cuh' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
while IFS= read -r hit; do
  for p in "${pending[@]}"; do [[ "${hit%%:*}" == "$p" ]] && continue 2; done
  complain "getenv of a TERN_ name: $hit (declare it in src/base/env.cpp, read it with envString/envInt/envFlag)"
done < <(grep -rnE '\bgetenv[[:space:]]*\([[:space:]]*"TERN_' src || true)

# 2-4 need the table's entries: the knobTable() body of src/base/env.cpp, one entry per helper call
# (text/flag/integer/bytes/decimal("NAME", ..., "default", ...): the first string after the name is the default).
status=0
python3 - "$fail" "${pending[@]}" <<'EOF' || status=$?
import re, sys

fail = int(sys.argv[1])
pending = sys.argv[2:]

def complain(msg):
    global fail
    print("FAIL: " + msg)
    fail = 1

src = open("src/base/env.cpp").read()
body = src[src.index("const std::vector<KnobSpec>& knobTable()"):]
body = body[:body.index("return table;")]
body = re.sub(r"//[^\n]*", "", body)
entries = {}
for m in re.finditer(r'\b(text|flag|integer|bytes|decimal)\(\s*"([A-Z0-9_]+)"\s*,((?:[^"()]|"(?:[^"\\]|\\.)*")*)',
                     body):
    kind, name, rest = m.groups()
    default = re.search(r'"((?:[^"\\]|\\.)*)"', rest)
    if name in entries:
        complain(f"TERN_{name} is declared twice in the knobs table")
    entries[name] = default.group(1) if default else None
if len(entries) < 40:
    complain(f"found only {len(entries)} entries in src/base/env.cpp's knobTable(): has the table's form changed?")
for name, default in entries.items():
    if default is None:
        complain(f"TERN_{name}: no default in its table entry")

# 2. names read through the accessors
import os
for base, _, files in os.walk("src"):
    for f in files:
        if not f.endswith((".cpp", ".hpp", ".h", ".cu")):
            continue
        path = os.path.join(base, f)
        text = open(path, errors="replace").read()
        for m in re.finditer(r'\benv(?:String|Int|Flag|Decimal)\(\s*"([A-Z0-9_]+)"', text):
            if m.group(1) not in entries:
                line = text.count("\n", 0, m.start()) + 1
                complain(f"{path}:{line}: TERN_{m.group(1)} is read but not declared in the knobs table")
        for m in re.finditer(r'\bgetenv\(\s*"TERN_([A-Z0-9_]+)"', text):
            if path in pending and m.group(1) not in entries:
                complain(f"{path}: TERN_{m.group(1)} is read but not declared in the knobs table")

# 3. the README's environment table
readme = open("README.md").read()
start = readme.index("## Environment variables")
section = readme[start:readme.index("\n## ", start + 1)]
documented = set()
for line in section.splitlines():
    if not line.startswith("| `TERN_"):
        continue
    cells = line.strip().strip("|").split(" | ")
    names = re.findall(r"`TERN_([A-Z0-9_]+)`", cells[0])
    readme_default = cells[-1].replace("`", "").strip()
    for n in names:
        documented.add(n)
        if n not in entries:
            complain(f"README documents TERN_{n}, which the knobs table does not declare")
    if any(n not in entries for n in names):
        continue
    table_default = "; ".join(entries[n] for n in names)
    if len(names) > 1 and readme_default == "":
        continue
    if readme_default != table_default:
        complain(f"README's default for {', '.join('TERN_' + n for n in names)} is '{readme_default}', "
                 f"the knobs table's '{table_default}'")
for n in entries:
    if not n.startswith("TEST_") and n not in documented:
        complain(f"TERN_{n} is in the knobs table but not in the README's environment table")

# 4. docs/TUNING.md
for n in sorted(set(re.findall(r"TERN_([A-Z0-9_]+)", open("docs/TUNING.md").read()))):
    if n not in entries:
        complain(f"docs/TUNING.md names TERN_{n}, which the knobs table does not declare")

sys.exit(fail)
EOF
fail=$status
[[ $fail -eq 0 ]] && echo "PASS: every TERN_ variable is declared once, read through the table and documented as declared"
exit $fail
