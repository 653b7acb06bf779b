#!/usr/bin/env bash
# Installs the real Centrifugo v6 server for the side-by-side runs (npm run compare:centrifugo, the peers bench's
# Centrifugo row): a Go build pinned to one version, into the git-ignored .tools/bin like nats-server. Never part of
# the product; npm test does not need it. Idempotent and quiet when present; concurrent runs wait on a lock, and the
# binary appears in .tools/bin only once it is complete. A first build fetches about 200 modules from the Go module
# proxy and takes several minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
CENTRIFUGO_VERSION=v6.9.1
mkdir -p "$TOOLS"

say() { printf '[setup-centrifugo] %s\n' "$*"; }

# `go install` builds record their module version; read it from the binary rather than trusting its --version.
have_centrifugo() {
  [ -x "$TOOLS/centrifugo" ] &&
    go version -m "$TOOLS/centrifugo" 2>/dev/null | grep -Eq "^\s+mod\s+github\.com/centrifugal/centrifugo/v6\s+$CENTRIFUGO_VERSION\s"
}

have_centrifugo && exit 0
exec 9>"$TOOLS/.centrifugo.lock"
flock -w 900 9 || { say "timed out waiting for another install of centrifugo"; exit 1; }
have_centrifugo && exit 0
say "building centrifugo $CENTRIFUGO_VERSION with go install (several minutes on 2 cores)"
tmp=$(mktemp -d "$TOOLS/.centrifugo-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/centrifugal/centrifugo/v6@$CENTRIFUGO_VERSION"
mv -f "$tmp/centrifugo" "$TOOLS/centrifugo"
exit 0
