#!/usr/bin/env bash
# Installs what compare:peers needs, when missing: the Socket.IO peer's packages (loadtest/package.json
# dependencies; --omit=dev leaves out the capacity tools), the centrifuge peer (go build) and the real Centrifugo
# v6 server (scripts/setup-centrifugo.sh: go install into .tools/bin, several minutes the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -d node_modules/socket.io || ! -d node_modules/@socket.io/redis-adapter || ! -d node_modules/redis ]]; then
  if [[ -d node_modules/artillery ]]; then args=(); else args=(--omit=dev); fi
  echo "[compare:peers] installing the Socket.IO peer's packages (npm ci ${args[*]:-} in loadtest/)" >&2
  npm ci --no-audit --no-fund "${args[@]}" >&2
fi
command -v redis-server >/dev/null || { echo "[compare:peers] redis-server is needed (apt-get install redis-server; npm test's set-up installs it)" >&2; exit 1; }
bash peers/centrifuge/build.sh
bash ../scripts/setup-centrifugo.sh
