#!/usr/bin/env bash
# Fetches what the Centrifuge SDK runners (gateway/conformance/centrifuge/runners) build with, so that their test
# builds them offline: centrifuge-go's modules into the Go module cache and centrifuge-java's Maven dependencies
# and plugins into ~/.m2 (one `mvn package` of the runner). centrifuge-python goes into the project's venv with
# the other Python tools (scripts/setup-deploy-tools.sh). Idempotent; prints nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNNERS=gateway/conformance/centrifuge/runners
M2="${MAVEN_REPO:-$HOME/.m2/repository}"

say() { printf '[setup-centrifuge-sdks] %s\n' "$*"; }

(cd "$RUNNERS/go" && go mod download)

if [ ! -f "$M2/io/github/centrifugal/centrifuge-java/0.4.1/centrifuge-java-0.4.1.jar" ] ||
  [ ! -f "$M2/com/google/code/gson/gson/2.13.1/gson-2.13.1.jar" ] ||
  [ ! -d "$M2/org/apache/maven/plugins/maven-dependency-plugin/3.8.1" ]; then
  say "fetching centrifuge-java 0.4.1 and the runner's Maven plugins (one mvn package)"
  (cd "$RUNNERS/java" && mvn -q -B package >&2)
fi
# The Java runner itself, built offline when a source is newer than its build (the integration tests run it; they
# build it themselves when it is missing or stale, this only moves that build into the set-up's parallel steps).
java_dir="$RUNNERS/java"
if [ ! -f "$java_dir/target/classpath.txt" ] || [ ! -f "$java_dir/target/classes/runner/Runner.class" ] ||
  [ -n "$(find "$java_dir/pom.xml" "$java_dir/src" -type f -newer "$java_dir/target/classes/runner/Runner.class" -print -quit)" ]; then
  (cd "$java_dir" && mvn -q -B -o package >&2)
fi
exit 0
