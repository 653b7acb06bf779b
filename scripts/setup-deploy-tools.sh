#!/usr/bin/env bash
# Installs the offline validators used by deploy/test: helm (Go build, pinned) into .tools/bin and a Python
# venv in .tools/venv with kubernetes-validate (ships the Kubernetes schemas) and jsonschema (for the
# compose-spec schema vendored in deploy/schema), and cent, Centrifugo's Python server API client (the
# Centrifugo server API test drives the gateway with it), and centrifuge-python, Centrifugo's Python client SDK
# (gateway/conformance/centrifuge/runners/python drives it). Idempotent; prints nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
VENV="$ROOT/.tools/venv"
HELM_VERSION=v3.22.0
KUBERNETES_VALIDATE_VERSION=1.37.0
JSONSCHEMA_VERSION=4.26.0
CENT_VERSION=5.2.0
CENTRIFUGE_PYTHON_VERSION=0.7.0
mkdir -p "$TOOLS"

say() { printf '[setup-deploy-tools] %s\n' "$*"; }

# `go install` builds carry no version ldflags (helm prints "v3.22"), so read the module version from the binary.
if [ ! -x "$TOOLS/helm" ] || ! go version -m "$TOOLS/helm" 2>/dev/null | grep -Eq "^\s+mod\s+helm\.sh/helm/v3\s+$HELM_VERSION\s"; then
  say "building helm $HELM_VERSION with go install (a few minutes on 2 cores)"
  GOBIN="$TOOLS" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

want_py() {
  "$VENV/bin/python" - "$KUBERNETES_VALIDATE_VERSION" "$JSONSCHEMA_VERSION" "$CENT_VERSION" "$CENTRIFUGE_PYTHON_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
names = ("kubernetes-validate", "jsonschema", "cent", "centrifuge-python")
sys.exit(0 if tuple(version(n) for n in names) == tuple(sys.argv[1:5]) else 1)
EOF
}

if [ ! -x "$VENV/bin/python" ] || ! want_py; then
  say "creating $VENV with kubernetes-validate $KUBERNETES_VALIDATE_VERSION, jsonschema $JSONSCHEMA_VERSION, cent $CENT_VERSION and centrifuge-python $CENTRIFUGE_PYTHON_VERSION"
  PY=$(command -v python3.11 || command -v python3)
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  # The venv's python, not its pip script: a copied venv's pip names the original's interpreter in its #! line.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "jsonschema==$JSONSCHEMA_VERSION" "pyyaml==6.0.3" "cent==$CENT_VERSION" \
    "centrifuge-python==$CENTRIFUGE_PYTHON_VERSION"
fi
exit 0
