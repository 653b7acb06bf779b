# shellcheck shell=bash
# What scripts/nats-cluster.sh and scripts/nats-supercluster.sh share: their common options, the nodes' pid,
# env and log files under DIR, the monitoring queries, launching and stopping a node. Sourced, not run; the
# caller sets ROOT, BIN and CONF and may define `extra_option NAME VALUE` (returns 0 when it took the option).

# --dir, --base-port, --sync, --timeout into DIR, BASE, SYNC, TIMEOUT (the caller sets their defaults first);
# a relative DIR is taken from the repository root.
parse_options() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) DIR="$2"; shift 2 ;;
      --base-port) BASE="$2"; shift 2 ;;
      --sync) case "$2" in always) SYNC=always ;; default) SYNC=120s ;; *) echo "--sync takes 'always' or 'default'" >&2; exit 2 ;; esac; shift 2 ;;
      --timeout) TIMEOUT="$2"; shift 2 ;;
      *)
        if declare -F extra_option >/dev/null && extra_option "$1" "${2:-}"; then shift 2; else echo "unknown option: $1" >&2; exit 2; fi ;;
    esac
  done
  case "$DIR" in /*) ;; *) DIR="$ROOT/$DIR" ;; esac
}

require_bin() { [ -x "$BIN" ] || { echo "nats-server not found at $BIN (run scripts/setup.sh)" >&2; exit 1; }; }

pid_of() { local f="$DIR/$1.pid"; [ -f "$f" ] && cat "$f" || true; }
# A pid file only counts while its process is still a nats-server (pids get reused).
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null && ps -p "$p" -o comm= 2>/dev/null | grep -q nats-server; }
# Ports of a node as saved at start, so status/stop work without repeating --base-port.
monitor_port() { sed -n 's/^NATS_HTTP=127.0.0.1://p' "$DIR/$1.env" 2>/dev/null; }
client_port() { sed -n 's/^NATS_LISTEN=127.0.0.1://p' "$DIR/$1.env" 2>/dev/null; }
jsz_leader() { curl -fsS --max-time 2 "http://127.0.0.1:$1/jsz" 2>/dev/null | jq -r '.meta_cluster.leader // empty' 2>/dev/null || true; }
healthy() { curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$1/healthz" 2>/dev/null; }

# Starts node $1 in the background with the environment saved in DIR/$1.env; its log appends to DIR/$1.log.
launch() {
  # shellcheck disable=SC2046
  env $(cat "$DIR/$1.env") nohup "$BIN" -c "$CONF" >>"$DIR/$1.log" 2>&1 </dev/null &
  echo $! >"$DIR/$1.pid"
}

# SIGTERM to each named node, then SIGKILL to any still running after 10 s; their pid files removed.
stop_nodes() {
  local n p
  for n in "$@"; do p=$(pid_of "$n"); [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true; done
  for n in "$@"; do
    p=$(pid_of "$n"); [ -n "$p" ] || continue
    local tries=0
    while kill -0 "$p" 2>/dev/null && [ $tries -lt 50 ]; do sleep 0.2; tries=$((tries + 1)); done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
    rm -f "$DIR/$n.pid"
  done
}
