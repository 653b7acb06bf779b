#!/usr/bin/env bash
# Runs a main class of the SDK's test sources (the conformance adapter, the README's example) with java,
# without Maven on the way: `mvn test-compile` runs only when a source or the pom is newer than the last
# build, under a lock (several adapters may start at once). Maven's output goes to stderr.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)"
main="$1"
shift
stamp="$dir/target/test-classpath.txt"
stale() { [ ! -f "$stamp" ] || [ -n "$(find "$dir/src" "$dir/pom.xml" -newer "$stamp" -print -quit)" ]; }
if stale; then
  mkdir -p "$dir/target"
  exec 9>"$dir/target/.build.lock"
  flock 9
  if stale; then
    (cd "$dir" && mvn -q -B -Dkotlin.compiler.daemon=false test-compile 1>&2)
    touch "$stamp"
  fi
  exec 9>&-
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$dir/target/classes:$dir/target/test-classes:$(cat "$stamp")" "$main" "$@"
