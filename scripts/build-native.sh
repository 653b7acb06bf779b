#!/usr/bin/env bash
# Builds sub-cluster's native engine (subtools/native: Go, standard library only) into .tools/bin/sub-native
# (or $SUB_NATIVE_BIN) when it is missing or a source is newer; quiet when it is up to date. Run by
# `setup.sh --test` (the tests use the engine) and by sub-cluster itself when `--engine native` is asked for;
# `npm start` never needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
NATIVE="${SUB_NATIVE_BIN:-$(pwd)/.tools/bin/sub-native}"
if [ -x "$NATIVE" ] && [ -z "$(find subtools/native -newer "$NATIVE" -type f 2>/dev/null | head -1)" ]; then exit 0; fi
command -v go >/dev/null || { echo "[setup] sub-cluster's native engine needs Go (go build) to be built" >&2; exit 1; }
mkdir -p "$(dirname "$NATIVE")"
printf '[setup] building sub-cluster'"'"'s native engine (go build)\n' >&2
# Built beside the target and renamed into place: a run that starts meanwhile never sees half a binary.
(cd subtools/native && go build -trimpath -o "$NATIVE.tmp.$$" .)
mv -f "$NATIVE.tmp.$$" "$NATIVE"
