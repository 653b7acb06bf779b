#!/usr/bin/env bash
# Runs a main class of the SDK's test sources (the conformance adapter, the README's example) with java,
# without Maven on the way: `mvn test-compile` runs only when a source or the pom is newer than the last
# build. The build runs detached and under a lock: several adapters may start at once, and one that its
# runner kills while it waits (a cold compile can outlast a 20 s deadline) leaves the build to finish for the
# next. Maven's output goes to stderr: stdout is the adapter's.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)"
main="$1"
shift
stale() { [ ! -f "$dir/target/.built" ] || [ -n "$(find "$dir/src" "$dir/pom.xml" -newer "$dir/target/.built" -print -quit)" ]; }
if stale; then
  mkdir -p "$dir/target"
  setsid flock "$dir/target/.build.lock" bash -c '
    cd "$1" && if [ ! -f target/.built ] || [ -n "$(find src pom.xml -newer target/.built -print -quit)" ]; then
      touch target/.building && mvn -q -B -Dkotlin.compiler.daemon=false test-compile 1>&2 && mv target/.building target/.built
    fi' _ "$dir" &
  wait $!
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$dir/target/classes:$dir/target/test-classes:$(cat "$dir/target/test-classpath.txt")" "$main" "$@"
