#!/usr/bin/env bash
# Builds the centrifuge peer into loadtest/peers/centrifuge/bin (git-ignored) when missing or older than its
# sources. Needs Go and the Go module proxy (github.com/centrifugal/centrifuge v0.40.1).
set -euo pipefail
cd "$(dirname "$0")"
if [[ -x bin/centrifuge-peer && bin/centrifuge-peer -nt main.go && bin/centrifuge-peer -nt go.sum ]]; then exit 0; fi
echo "[compare:peers] building the centrifuge peer (go build, first time ~1 min)" >&2
go mod tidy >/dev/null
go build -o bin/centrifuge-peer .
