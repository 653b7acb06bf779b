#!/usr/bin/env bash
# Refreshes the settings table in README.md from the code (the one source of truth).
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(node dist/gateway/src/cli.js --config-table)
python3 - "$table" <<'PY'
import re, sys
table = sys.argv[1]
p = "README.md"
s = open(p).read()
start = "<!-- settings-table: printed by `node dist/gateway/src/cli.js --config-table` -->\n"
end = "<!-- /settings-table -->"
i = s.index(start) + len(start)
j = s.index(end)
s = s[:i] + table + "\n" + s[j:]
open(p, "w").write(s)
PY
