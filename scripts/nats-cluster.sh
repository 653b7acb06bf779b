#!/usr/bin/env bash
# A local 3-node JetStream cluster from deploy/nats/cluster/node.conf, in the background.
#
#   scripts/nats-cluster.sh start  [--dir DIR] [--base-port P] [--sync always] [--timeout SECONDS]
#   scripts/nats-cluster.sh status [--dir DIR]
#   scripts/nats-cluster.sh stop   [--dir DIR]
#
# Ports for base P (default 4222): clients P..P+2, routes P+2000..P+2002, monitoring P+4000..P+4002.
# DIR (default ./data/nats-cluster) holds per node: nK.pid, nK.log, nK.env, store/nK. `start` returns once every
# node is healthy and all agree on a JetStream meta leader, or fails after --timeout seconds (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="${NATS_SERVER_BIN:-$ROOT/.tools/bin/nats-server}"
CONF="$ROOT/deploy/nats/cluster/node.conf"

cmd="${1:-}"; [ $# -gt 0 ] && shift
DIR="$ROOT/data/nats-cluster"
BASE=4222
SYNC=120s
TIMEOUT=30
# shellcheck source=lib/nats-common.sh
. "$ROOT/scripts/lib/nats-common.sh"
parse_options "$@"
NODES=(n1 n2 n3)

start() {
  require_bin
  for n in "${NODES[@]}"; do
    if alive "$n"; then echo "$n already running (pid $(pid_of "$n")); stop it first" >&2; exit 1; fi
  done
  mkdir -p "$DIR"
  local i=0 routes=()
  for i in 0 1 2; do routes+=("nats://127.0.0.1:$((BASE + 2000 + i))"); done
  for i in 0 1 2; do
    local n=${NODES[$i]}
    mkdir -p "$DIR/store/$n"
    cat >"$DIR/$n.env" <<EOF
NATS_NAME=$n
NATS_LISTEN=127.0.0.1:$((BASE + i))
NATS_HTTP=127.0.0.1:$((BASE + 4000 + i))
NATS_CLUSTER_LISTEN=127.0.0.1:$((BASE + 2000 + i))
NATS_ROUTE_1=${routes[0]}
NATS_ROUTE_2=${routes[1]}
NATS_ROUTE_3=${routes[2]}
NATS_STORE_DIR=$DIR/store/$n
NATS_SYNC_INTERVAL=$SYNC
EOF
    launch "$n"
  done

  local deadline=$((SECONDS + TIMEOUT)) leader=""
  while :; do
    local leaders=() ok=1
    for n in "${NODES[@]}"; do
      if ! alive "$n"; then echo "$n exited; last log lines:" >&2; tail -n 5 "$DIR/$n.log" >&2; stop_all; exit 1; fi
      local mp; mp=$(monitor_port "$n")
      if healthy "$mp"; then leaders+=("$(jsz_leader "$mp")"); else ok=0; fi
    done
    if [ "$ok" = 1 ] && [ -n "${leaders[0]}" ] && [ "${leaders[0]}" = "${leaders[1]}" ] && [ "${leaders[1]}" = "${leaders[2]}" ]; then
      leader=${leaders[0]}; break
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then echo "no JetStream meta leader within ${TIMEOUT}s; logs in $DIR" >&2; stop_all; exit 1; fi
    sleep 0.2
  done
  echo "cluster up: nats://127.0.0.1:$BASE,nats://127.0.0.1:$((BASE + 1)),nats://127.0.0.1:$((BASE + 2)) (sync_interval $SYNC, meta leader $leader, dir $DIR)"
}

status() {
  local any=0
  for n in "${NODES[@]}"; do
    local mp state; mp=$(monitor_port "$n")
    if alive "$n"; then
      any=1
      if healthy "$mp"; then state="healthy"; else state="running, not healthy"; fi
      printf '%s\tpid %s\t%s\tmonitor :%s\tmeta leader %s\n' "$n" "$(pid_of "$n")" "$state" "$mp" "$(jsz_leader "$mp")"
    else
      printf '%s\tstopped\n' "$n"
    fi
  done
  [ "$any" = 1 ]
}

stop_all() { stop_nodes "${NODES[@]}"; }

case "$cmd" in
  start) start ;;
  status) status ;;
  stop) stop_all; echo "cluster stopped (data kept in $DIR)" ;;
  *) echo "usage: $0 start|stop|status [--dir DIR] [--base-port P] [--sync always] [--timeout SECONDS]" >&2; exit 2 ;;
esac
