#!/usr/bin/env bash
# A local JetStream supercluster of three regions (a, b, c) from deploy/nats/supercluster/region.conf, in the
# background: each region a single-node cluster, joined to the others by gateways (docs/operations.md "Regions").
#
#   scripts/nats-supercluster.sh start  [--dir DIR] [--base-port P] [--sync always] [--timeout SECONDS]
#   scripts/nats-supercluster.sh status [--dir DIR]
#   scripts/nats-supercluster.sh stop   [--dir DIR] [--region a|b|c]
#   scripts/nats-supercluster.sh start  --region a      (starts one stopped region again, same ports and store)
#
# Ports for base P (default 5222): clients P..P+2 (regions a, b, c), routes P+2000.., gateways P+3000..,
# monitoring P+4000... DIR (default ./data/nats-supercluster) holds per region: <r>.pid, <r>.log, <r>.env,
# store/<r>. `start` returns once every running region is healthy, sees the other two gateways and agrees on one
# JetStream meta leader, or fails after --timeout seconds (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="${NATS_SERVER_BIN:-$ROOT/.tools/bin/nats-server}"
CONF="$ROOT/deploy/nats/supercluster/region.conf"

cmd="${1:-}"; [ $# -gt 0 ] && shift
DIR="$ROOT/data/nats-supercluster"
BASE=5222
SYNC=120s
TIMEOUT=30
ONLY=""
extra_option() {
  case "$1" in
    --region) case "$2" in a|b|c) ONLY="$2" ;; *) echo "--region takes a, b or c" >&2; exit 2 ;; esac ;;
    *) return 1 ;;
  esac
}
# shellcheck source=lib/nats-common.sh
. "$ROOT/scripts/lib/nats-common.sh"
parse_options "$@"
REGIONS=(a b c)

gateways_up() { curl -fsS --max-time 2 "http://127.0.0.1:$1/gatewayz" 2>/dev/null | jq -r '.outbound_gateways | length' 2>/dev/null || echo 0; }

write_env() {
  local i=$1 r=${REGIONS[$1]}
  mkdir -p "$DIR/store/$r"
  cat >"$DIR/$r.env" <<ENV
NATS_NAME=n-$r
NATS_REGION=$r
NATS_LISTEN=127.0.0.1:$((BASE + i))
NATS_HTTP=127.0.0.1:$((BASE + 4000 + i))
NATS_CLUSTER_LISTEN=127.0.0.1:$((BASE + 2000 + i))
NATS_ROUTE=nats://127.0.0.1:$((BASE + 2000 + i))
NATS_GATEWAY_LISTEN=127.0.0.1:$((BASE + 3000 + i))
NATS_GATEWAY_ADVERTISE=127.0.0.1:$((BASE + 3000 + i))
NATS_GW_1_NAME=a
NATS_GW_1_URL=nats://127.0.0.1:$((BASE + 3000))
NATS_GW_2_NAME=b
NATS_GW_2_URL=nats://127.0.0.1:$((BASE + 3001))
NATS_GW_3_NAME=c
NATS_GW_3_URL=nats://127.0.0.1:$((BASE + 3002))
NATS_STORE_DIR=$DIR/store/$r
NATS_SYNC_INTERVAL=$SYNC
ENV
}

start() {
  require_bin
  mkdir -p "$DIR"
  if [ -n "$ONLY" ]; then
    alive "$ONLY" && { echo "region $ONLY already running (pid $(pid_of "$ONLY"))" >&2; exit 1; }
    [ -f "$DIR/$ONLY.env" ] || { echo "region $ONLY was never started in $DIR; start all three first" >&2; exit 1; }
    launch "$ONLY"
  else
    for r in "${REGIONS[@]}"; do
      if alive "$r"; then echo "region $r already running (pid $(pid_of "$r")); stop it first" >&2; exit 1; fi
    done
    for i in 0 1 2; do write_env "$i"; launch "${REGIONS[$i]}"; done
  fi

  local deadline=$((SECONDS + TIMEOUT)) leader=""
  while :; do
    local leaders=() ok=1
    for r in "${REGIONS[@]}"; do
      alive "$r" || { [ -n "$ONLY" ] && continue; echo "region $r exited; last log lines:" >&2; tail -n 5 "$DIR/$r.log" >&2; stop_all; exit 1; }
      local mp; mp=$(monitor_port "$r")
      if healthy "$mp" && [ "$(gateways_up "$mp")" -ge 2 ]; then leaders+=("$(jsz_leader "$mp")"); else ok=0; fi
    done
    if [ "$ok" = 1 ] && [ -n "${leaders[0]:-}" ] && [ "$(printf '%s\n' "${leaders[@]}" | sort -u | wc -l)" = 1 ]; then
      leader=${leaders[0]}; break
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then echo "regions not joined with one JetStream meta leader within ${TIMEOUT}s; logs in $DIR" >&2; [ -z "$ONLY" ] && stop_all; exit 1; fi
    sleep 0.2
  done
  local urls=()
  for r in "${REGIONS[@]}"; do urls+=("$r=nats://127.0.0.1:$(client_port "$r")"); done
  echo "supercluster up: ${urls[*]} (sync_interval $SYNC, meta leader $leader, dir $DIR)"
}

status() {
  local any=0
  for r in "${REGIONS[@]}"; do
    local mp state; mp=$(monitor_port "$r")
    if alive "$r"; then
      any=1
      if healthy "$mp"; then state="healthy"; else state="running, not healthy"; fi
      printf 'region %s\tpid %s\t%s\tclient :%s\tmonitor :%s\tgateways out %s\tmeta leader %s\n' \
        "$r" "$(pid_of "$r")" "$state" "$(client_port "$r")" "$mp" "$(gateways_up "$mp")" "$(jsz_leader "$mp")"
    else
      printf 'region %s\tstopped\n' "$r"
    fi
  done
  [ "$any" = 1 ]
}

stop_all() { stop_nodes "${REGIONS[@]}"; }

case "$cmd" in
  start) start ;;
  status) status ;;
  stop)
    if [ -n "$ONLY" ]; then stop_nodes "$ONLY"; echo "region $ONLY stopped (data kept in $DIR)"; else stop_all; echo "supercluster stopped (data kept in $DIR)"; fi ;;
  *) echo "usage: $0 start|stop|status [--dir DIR] [--base-port P] [--sync always] [--timeout SECONDS] [--region a|b|c]" >&2; exit 2 ;;
esac
