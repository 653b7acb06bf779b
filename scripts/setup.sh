#!/usr/bin/env bash
# Installs what is missing, idempotently: npm packages (npm ci), nats-server v2.15.2 (go install into
# .tools/bin), redis-server and chromium (apt). Quiet when everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
NATS_VERSION=v2.15.2
TOOLS="$ROOT/.tools/bin"
mkdir -p "$TOOLS"

say() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# npm packages: reinstall when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# nats-server: a Go build pinned to one version, kept in the project.
if [ ! -x "$TOOLS/nats-server" ] || ! "$TOOLS/nats-server" --version 2>/dev/null | grep -q "$NATS_VERSION"; then
  say "building nats-server $NATS_VERSION with go install (about 35 s)"
  GOBIN="$TOOLS" GOFLAGS=-mod=mod go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
fi

# apt packages used by later stages (Redis baseline, browser tests).
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >/dev/null
  as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Optional extra tools (helm, schema validators) are installed by their own script when present.
if [ -x scripts/setup-deploy-tools.sh ]; then scripts/setup-deploy-tools.sh; fi
exit 0
