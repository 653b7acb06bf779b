#!/usr/bin/env bash
# Installs what the JetStream evaluation (npm run bench:jetstream, loadtest/test/bench-jetstream.test.ts) needs
# beyond nats-server: the nats CLI (natscli, for `nats bench`), a Go build pinned to one version, into the
# git-ignored .tools/bin like nats-server. Idempotent and quiet when present; concurrent runs wait on a lock,
# and the binary appears in .tools/bin only once it is complete.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
NATSCLI_VERSION=v0.5.1
mkdir -p "$TOOLS"

say() { printf '[setup-bench-tools] %s\n' "$*"; }

# `go install` builds record their module version; read it from the binary rather than trusting --version.
have_natscli() { [ -x "$TOOLS/nats" ] && go version -m "$TOOLS/nats" 2>/dev/null | grep -Eq "^\s+mod\s+github\.com/nats-io/natscli\s+$NATSCLI_VERSION\s"; }

have_natscli && exit 0
exec 9>"$TOOLS/.natscli.lock"
flock -w 600 9 || { say "timed out waiting for another install of natscli"; exit 1; }
have_natscli && exit 0
say "building natscli $NATSCLI_VERSION (nats bench) with go install (about 90 s on 2 cores)"
tmp=$(mktemp -d "$TOOLS/.natscli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/nats-io/natscli/nats@$NATSCLI_VERSION"
mv -f "$tmp/nats" "$TOOLS/nats"
exit 0
