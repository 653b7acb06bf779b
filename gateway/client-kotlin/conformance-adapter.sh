#!/usr/bin/env bash
# The Kotlin SDK's conformance adapter (src/test/kotlin/dev/fanout/conformance/Adapter.kt): JSON lines on
# stdin and stdout, as gateway/conformance/README.md describes. Compiles the SDK and its tests first when a
# source is newer than the last build (Maven's output goes to stderr: stdout carries only protocol lines).
exec "$(dirname "$0")/scripts/run-test-main.sh" dev.fanout.conformance.AdapterKt "$@"
