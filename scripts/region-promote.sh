#!/usr/bin/env bash
# Promotes a region's mirrors of the channel streams to be the streams themselves, after the home region is
# lost (docs/operations.md "Failover: losing the home region"). Run it against the supercluster, with the
# home region down; then restart every region's gateways with HOME_REGION set to the promoted region.
#
#   scripts/region-promote.sh <region> [--server URL] [--creds FILE] [--duplicate-window 2m] [--timeout 120]
#
# For each stream <X>-<region> that mirrors a stream <X> (the gateway's mirrors: broker/jetstream/regions.ts):
#   1. refuses if <X> still answers (promotion is for a lost home; a live one would lose what it has not copied);
#   2. deletes <X> (the JetStream meta layer does it with the remaining regions' quorum);
#   3. turns <X>-<region> into a plain stream (drops `mirror`), so it stops following the deleted origin;
#   4. creates <X> in <region> as a mirror of <X>-<region>, with its limits, and waits until it holds as much;
#   5. drops the mirror configuration of <X> (nats-server 2.12+), giving it the subjects and republish rule
#      <X>-<region> had: <X> is the origin again, in <region>, and numbers on from the last mirrored message;
#   6. creates every other region's mirror <X>-<r> again, empty: it may have copied messages <region> had not,
#      whose sequences the new origin gives to other messages. A region that is down gets its mirror from its
#      gateways once it is back (they make missing mirrors at start).
# <X>-<region> stays as a plain stream (no subjects of the gateway, no republish), a copy of what the region
# held at promotion: delete it once every gateway runs with the new HOME_REGION. The new <X> has a new
# creation time, which is the stream's epoch: clients resuming with a position of before are told
# `epochChanged` (gateway/PROTOCOL.md) and start over at its first message.
#
# Needs `nats` (natscli; .tools/bin/nats is used when present) and jq. NATS_URL / NATS_CREDS are natscli's own.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
NATS="${NATS_CLI:-$ROOT/.tools/bin/nats}"
[ -x "$NATS" ] || NATS=nats

REGION=""
ARGS=()
DUP_WINDOW=2m
TIMEOUT=120
while [ $# -gt 0 ]; do
  case "$1" in
    --server) ARGS+=(--server "$2"); shift 2 ;;
    --creds) ARGS+=(--creds "$2"); shift 2 ;;
    --duplicate-window) DUP_WINDOW="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    -*) echo "unknown option: $1" >&2; exit 2 ;;
    *) [ -z "$REGION" ] || { echo "one region only" >&2; exit 2; }; REGION="$1"; shift ;;
  esac
done
[ -n "$REGION" ] || { echo "usage: $0 <region> [--server URL] [--creds FILE] [--duplicate-window 2m] [--timeout SECONDS]" >&2; exit 2; }

# A duration as nats-server wants it in a stream config: nanoseconds.
case "$DUP_WINDOW" in
  *ms) DUP_NS=$(( ${DUP_WINDOW%ms} * 1000000 )) ;;
  *s) DUP_NS=$(( ${DUP_WINDOW%s} * 1000000000 )) ;;
  *m) DUP_NS=$(( ${DUP_WINDOW%m} * 60000000000 )) ;;
  *h) DUP_NS=$(( ${DUP_WINDOW%h} * 3600000000000 )) ;;
  *) echo "--duplicate-window takes a number with ms, s, m or h (STREAM_DUPLICATE_WINDOW's value)" >&2; exit 2 ;;
esac

# A JetStream API request; prints the JSON answer (empty when none came within the timeout).
api() { "$NATS" "${ARGS[@]}" req "\$JS.API.$1" "${2:-}" --timeout "${3:-5s}" 2>/dev/null || true; }
# Fails with the API's error, if the answer has one.
ok() {
  local answer=$1 what=$2
  if [ -z "$answer" ]; then echo "$what: no answer from JetStream" >&2; exit 1; fi
  if [ "$(jq -r '.error // empty' <<<"$answer")" != "" ]; then echo "$what: $(jq -c .error <<<"$answer")" >&2; exit 1; fi
}

# A request sent again while no answer comes (a meta leader election: right after the home region is lost the
# meta layer may answer nothing for a few seconds), up to --timeout, half a second apart; creating a stream as it
# is and updating it to what it is are no-ops, and reads change nothing. Prints the answer.
must() {
  local deadline=$((SECONDS + TIMEOUT)) answer
  while :; do
    answer=$(api "$1" "$2" 10s)
    [ -n "$answer" ] || [ "$SECONDS" -ge "$deadline" ] || { sleep 0.5; continue; }
    ok "$answer" "$3"
    printf '%s' "$answer"
    return 0
  done
}
# Whether JetStream lists the stream (its meta layer's assignments, also of a stream whose region is down).
listed() { jq -e --arg n "$1" '.streams // [] | index($n) != null' <<<"$(api STREAM.NAMES '{}' 10s)" >/dev/null; }
# Deletes a stream, also when the answer is lost: after a meta leader's loss the new leader may carry the
# deletion out without answering (seen on 2.15.2), so a missing answer is checked against the stream list.
delete_stream() {
  local deadline=$((SECONDS + TIMEOUT)) answer
  while :; do
    answer=$(api "STREAM.DELETE.$1" '' 10s)
    if [ -n "$answer" ]; then
      [ "$(jq -r '.error.err_code // empty' <<<"$answer")" = "10059" ] && return 0 # not found: gone already
      ok "$answer" "deleting $1"
      return 0
    fi
    listed "$1" || return 0
    [ "$SECONDS" -lt "$deadline" ] || { echo "deleting $1: no answer within ${TIMEOUT}s" >&2; exit 1; }
  done
}

names=$(must STREAM.NAMES '{}' "listing streams")
promoted=0
for m in $(jq -r '.streams[]?' <<<"$names" | grep -- "-$REGION\$" || true); do
  info=$(must "STREAM.INFO.$m" '' "stream $m")
  origin=$(jq -r '.config.mirror.name // empty' <<<"$info")
  [ -n "$origin" ] && [ "$origin-$REGION" = "$m" ] || continue
  src=$(jq -r '.config.republish.src // empty' <<<"$info")
  [ -n "$src" ] || { echo "mirror $m has no republish rule: not one of the gateway's mirrors" >&2; exit 1; }

  # 1. The origin must be gone.
  live=$(api "STREAM.INFO.$origin")
  if [ -n "$live" ] && [ "$(jq -r '.error // empty' <<<"$live")" = "" ]; then
    echo "stream $origin still answers (region $(jq -r '.cluster.name' <<<"$live")): promote only a lost home region" >&2
    exit 1
  fi
  echo "promoting $m (mirror of $origin, at seq $(jq -r '.state.last_seq' <<<"$info")) to $origin in region $REGION"

  # 2. Delete the lost origin (its assignment; its region's copy goes once that region is back).
  delete_stream "$origin"

  # 3. The region's mirror stops following it.
  plain=$(jq -c '.config | del(.mirror, .republish) | .mirror_direct = false' <<<"$info")
  must "STREAM.UPDATE.$m" "$plain" "making $m a plain stream" >/dev/null

  # 4. The new origin, as a mirror of it first (the same sequences, timestamps and limits).
  copy=$(jq -c --arg n "$origin" --arg m "$m" '.config | del(.republish, .metadata) | .name = $n | .mirror = {name: $m} | .mirror_direct = false' <<<"$info")
  must "STREAM.CREATE.$origin" "$copy" "creating $origin as a copy of $m" >/dev/null
  want=$(jq -r '.state.last_seq' <<<"$(must "STREAM.INFO.$m" '' "stream $m")")
  deadline=$((SECONDS + TIMEOUT))
  until [ "$(jq -r '.state.last_seq // 0' <<<"$(api "STREAM.INFO.$origin")")" -ge "$want" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "$origin did not copy $m up to seq $want within ${TIMEOUT}s" >&2; exit 1; }
    sleep 0.2
  done

  # 5. Promote: no mirror; the subjects and the republish rule the region's mirror had.
  cur=$(must "STREAM.INFO.$origin" '' "stream $origin")
  final=$(jq -c --arg src "$src" --argjson rp "$(jq -c '.config.republish' <<<"$info")" --argjson dw "$DUP_NS" \
    '.config | del(.mirror) | .mirror_direct = false | .subjects = [$src] | .republish = $rp | .duplicate_window = $dw' <<<"$cur")
  done_=$(must "STREAM.UPDATE.$origin" "$final" "promoting $origin")
  echo "  $origin is the origin in region $(jq -r '.config.placement.cluster' <<<"$done_"): $(jq -r '.state.messages' <<<"$done_") messages, last seq $(jq -r '.state.last_seq' <<<"$done_"), epoch $(jq -r '.created' <<<"$done_")"

  # 6. Every other region's mirror of it starts over.
  for other in $(jq -r '.streams[]?' <<<"$names" | grep -- "^$origin-" || true); do
    [ "$other" != "$m" ] || continue
    oi=$(api "STREAM.INFO.$other")
    if [ -z "$oi" ]; then
      # Its region is down too: the copy there may be ahead of this one; its gateways make it again once back.
      delete_stream "$other"
      echo "  $other deleted (its region does not answer): its gateways make it again at start" >&2
      continue
    fi
    [ "$(jq -r '.config.mirror.name // empty' <<<"$oi")" = "$origin" ] || continue
    delete_stream "$other"
    again=$(api "STREAM.CREATE.$other" "$(jq -c '.config | del(.metadata)' <<<"$oi")" 30s)
    if [ -n "$again" ] && [ "$(jq -r '.error // empty' <<<"$again")" = "" ]; then
      echo "  $other made again, empty: it copies $origin from its first message"
    else
      echo "  $other deleted; not made again ($(jq -c '.error // "no answer"' <<<"$again" 2>/dev/null)): its region's gateways make it at start" >&2
    fi
  done
  promoted=$((promoted + 1))
done
[ "$promoted" -gt 0 ] || { echo "no mirror in region $REGION to promote (streams named <stream>-$REGION that mirror <stream>)" >&2; exit 1; }
echo "promoted $promoted stream(s) to region $REGION: restart every region's gateways with HOME_REGION=$REGION"
