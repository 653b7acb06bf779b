#!/usr/bin/env bash
# Refreshes the settings table in docs/operations.md from the code (the one source of truth).
# Run after adding or changing a setting: npx tsc -p tsconfig.json && bash scripts/readme-settings.sh
# The docs test (gateway/test/unit/docs.test.ts) fails while the committed table differs from the code's.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(node dist/gateway/src/cli.js --config-table)
python3 - "$table" <<'PY'
import sys
table = sys.argv[1]
p = "docs/operations.md"
s = open(p).read()
start = "<!-- settings-table: printed by `node dist/gateway/src/cli.js --config-table` -->\n"
end = "<!-- /settings-table -->"
i = s.index(start) + len(start)
j = s.index(end)
s = s[:i] + table + "\n" + s[j:]
open(p, "w").write(s)
PY
