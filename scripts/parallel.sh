#!/usr/bin/env bash
# Runs each argument as a shell command, all at once, and fails if any failed. Each command's output is kept
# and printed whole when it ends (so two logs never interleave), with how long it took.
#   scripts/parallel.sh "npm run -s lint" "npm run -s test:kotlin"
set -uo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pids=()
cmds=("$@")
n=0
for cmd in "$@"; do
  ( start=$(date +%s); bash -c "$cmd" >"$dir/$n.log" 2>&1; rc=$?; echo "$rc $(( $(date +%s) - start ))" >"$dir/$n.rc" ) &
  pids+=($!)
  n=$((n + 1))
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  read -r rc secs <"$dir/$i.rc"
  printf '[parallel] %s: exit %s after %s s\n' "${cmds[$i]}" "$rc" "$secs"
  cat "$dir/$i.log"
  [ "$rc" = 0 ] || failed=1
done
exit $failed
