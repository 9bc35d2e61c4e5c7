#!/usr/bin/env bash
# Runs a warden cluster on this machine: N clustered nats-servers with JetStream
# and M warden nodes joined to them, all on loopback.
#
#   deploy/local-cluster.sh start  [--nats N] [--nodes M] [--dir DIR] [--base-port P]
#                                  [--gateway-port G] [--timeout SECONDS]
#   deploy/local-cluster.sh status [--dir DIR]
#   deploy/local-cluster.sh stop   [--dir DIR]
#
# Defaults: 3 nats-servers (client ports 4222.., cluster ports = client + 2000,
# HTTP monitoring ports = client + 4000), 2 nodes (gateways 8890..), DIR
# <repo>/data/local-cluster. Other node settings (LOG_LEVEL, HEARTBEAT_MS,
# LEASE_TTL_MS, PARTITIONS, ...) pass through from the environment.
#
# Uses only bash, coreutils and curl (node's fetch when curl is missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROG="deploy/local-cluster.sh"

die() {
  printf '%s: %s\n' "$PROG" "$*" >&2
  exit 1
}
say() { printf '%s\n' "$*"; }

usage() {
  sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ---------------------------------------------------------------- arguments

COMMAND="${1:-}"
[[ -n "$COMMAND" ]] || { usage >&2; exit 2; }
shift
case "$COMMAND" in
  start | stop | status) ;;
  -h | --help | help) usage; exit 0 ;;
  *) usage >&2; die "unknown command '$COMMAND' (start, stop or status)" ;;
esac

NATS_COUNT=3
NODE_COUNT=2
DIR="$ROOT/data/local-cluster"
BASE_PORT=4222
GATEWAY_PORT=8890
TIMEOUT=60

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
whole() { [[ "$2" =~ ^[0-9]+$ ]] && (( 10#$2 >= $3 && 10#$2 <= $4 )) || die "$1 must be a whole number from $3 to $4, got '$2'"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --nats) need_value "$@"; NATS_COUNT="$2"; shift 2 ;;
    --nodes) need_value "$@"; NODE_COUNT="$2"; shift 2 ;;
    --dir) need_value "$@"; DIR="$2"; shift 2 ;;
    --base-port) need_value "$@"; BASE_PORT="$2"; shift 2 ;;
    --gateway-port) need_value "$@"; GATEWAY_PORT="$2"; shift 2 ;;
    --timeout) need_value "$@"; TIMEOUT="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see '$PROG --help')" ;;
  esac
done

whole --nats "$NATS_COUNT" 1 9
whole --nodes "$NODE_COUNT" 1 20
whole --base-port "$BASE_PORT" 1 61000
whole --gateway-port "$GATEWAY_PORT" 1 65000
whole --timeout "$TIMEOUT" 1 3600
NATS_COUNT=$((10#$NATS_COUNT)) NODE_COUNT=$((10#$NODE_COUNT))
BASE_PORT=$((10#$BASE_PORT)) GATEWAY_PORT=$((10#$GATEWAY_PORT)) TIMEOUT=$((10#$TIMEOUT))
CLUSTER_BASE_PORT=$((BASE_PORT + 2000))
MONITOR_BASE_PORT=$((BASE_PORT + 4000))

[[ "$DIR" == /* ]] || DIR="$PWD/$DIR"
DIR="${DIR%/}"
PIDS="$DIR/pids"

# ---------------------------------------------------------------- helpers

# The pid recorded for NAME, if its file holds one.
recorded_pid() {
  local file="$PIDS/$1.pid" pid
  [[ -f "$file" ]] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  [[ -n "$pid" ]] || return 1
  printf '%s\n' "$pid"
}

# True when PID runs and is one of this cluster's processes (its command line
# names DIR, or this script started it and it has not exec'd yet), so a pid
# reused by an unrelated process is never signalled.
is_ours() {
  local pid="$1" cmdline stat
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    [[ "$cmdline" != *"$DIR/"* ]] || return 0
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }" # fields after "pid (comm) ": state, ppid, ...
    stat="${stat#* }"
    [[ "${stat%% *}" == "$$" ]]
  else
    return 0 # no /proc (macOS): trust the pid file
  fi
}

# Names recorded in the pid directory, with the given prefix, in numeric order.
recorded_names() {
  local prefix="$1" file
  [[ -d "$PIDS" ]] || return 0
  for file in "$PIDS/$prefix"-*.pid; do
    [[ -e "$file" ]] || continue
    file="${file##*/}"
    printf '%s\n' "${file%.pid}"
  done | sort -V
}

# True when something accepts TCP connections on 127.0.0.1:PORT.
accepts_tcp() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# Prints the body of GET URL, then a last line with the HTTP status (000 if none).
http_get() {
  if command -v curl >/dev/null 2>&1; then
    curl -s --max-time 3 -w '\n%{http_code}' "$1" 2>/dev/null || true
  else
    node -e '
      fetch(process.argv[1], { signal: AbortSignal.timeout(3000) })
        .then(async (r) => process.stdout.write(`${await r.text()}\n${r.status}`))
        .catch(() => process.stdout.write("\n000"));
    ' "$1" 2>/dev/null || printf '\n000'
  fi
}

http_status() { http_get "$1" | tail -n 1; }

show_log_tail() {
  local log="$1"
  if [[ -s "$log" ]]; then
    printf -- '--- last lines of %s ---\n' "$log" >&2
    tail -n 20 "$log" >&2
    printf -- '---\n' >&2
  else
    printf '(%s is empty)\n' "$log" >&2
  fi
}

# nats-server configuration accepts JSON strings: quote every path.
json_string() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  printf '"%s"' "$s"
}

find_nats_server() {
  local candidate
  if [[ -n "${NATS_SERVER_BIN:-}" ]]; then
    [[ -x "$NATS_SERVER_BIN" ]] && { printf '%s\n' "$NATS_SERVER_BIN"; return 0; }
    return 1
  fi
  if command -v nats-server >/dev/null 2>&1; then
    command -v nats-server
    return 0
  fi
  for candidate in /usr/sbin/nats-server /usr/local/sbin/nats-server /usr/local/bin/nats-server /usr/bin/nats-server /sbin/nats-server; do
    [[ -x "$candidate" ]] && { printf '%s\n' "$candidate"; return 0; }
  done
  return 1
}

# Sends SIGTERM to NAME's process and waits up to WAIT seconds, then SIGKILL.
stop_one() {
  local name="$1" wait="$2" pid i
  if ! pid="$(recorded_pid "$name")"; then
    rm -f "$PIDS/$name.pid" "$PIDS/$name.url"
    return 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    say "$name (pid $pid) was not running"
  elif ! is_ours "$pid"; then
    say "$name: pid $pid now belongs to another process; not signalling it"
  else
    printf '%s' "stopping $name (pid $pid)..."
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < wait * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      say " did not exit within ${wait}s: killed"
    else
      say " stopped"
    fi
  fi
  rm -f "$PIDS/$name.pid" "$PIDS/$name.url"
}

stop_cluster() {
  local name any=0
  # Nodes first, one at a time, so each hands its actors to the nodes still
  # running; then the nats-servers, which the nodes needed for the hand-over.
  for name in $(recorded_names node); do any=1; stop_one "$name" 30; done
  for name in $(recorded_names nats); do any=1; stop_one "$name" 30; done
  [[ -d "$PIDS" ]] && rmdir "$PIDS" 2>/dev/null || true
  [[ $any -eq 1 ]] || say "nothing recorded in $PIDS: no cluster to stop"
}

# ---------------------------------------------------------------- status

cmd_status() {
  local name pid url state all=0 any=0 code
  for name in $(recorded_names node) $(recorded_names nats); do
    any=1
    pid="$(recorded_pid "$name" || true)"
    url="$(cat "$PIDS/$name.url" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && is_ours "$pid"; then
      state="running"
      if [[ "$name" == node-* && -n "$url" ]]; then
        code="$(http_status "$url/readyz")"
        if [[ "$code" == 200 ]]; then state="running, ready"; else state="running, not ready (readyz $code)"; fi
      fi
    else
      state="NOT RUNNING"
      all=1
    fi
    printf '%-8s pid %-8s %-24s %s\n' "$name" "${pid:-?}" "$url" "$state"
  done
  if [[ $any -eq 0 ]]; then
    say "no cluster recorded in $PIDS"
    return 1
  fi
  return $all
}

# ---------------------------------------------------------------- start

STARTED=() # names started by this run, stopped again if the start fails

fail_start() {
  printf '%s: %s\n' "$PROG" "$1" >&2
  if [[ ${#STARTED[@]} -gt 0 ]]; then
    say "stopping what this run started (logs stay in $DIR)" >&2
    stop_cluster >&2 || true
  fi
  exit 1
}

cmd_start() {
  local nats_bin i j name port cport pid url conf routes log replicas
  local -a nats_urls=() nats_ports=() cluster_ports=() monitor_ports=() gateway_ports=() nodes=()

  # Prerequisites.
  nats_bin="$(find_nats_server)" ||
    die "nats-server is not installed: run 'sudo apt-get install nats-server' (or set NATS_SERVER_BIN)"
  command -v node >/dev/null 2>&1 || die "node is not installed: install Node.js 20 or newer"
  [[ -f "$ROOT/dist/service/main.js" ]] ||
    die "warden is not built ($ROOT/dist/service/main.js is missing): run 'npm start' once or 'node scripts/setup.mjs'"
  command -v timeout >/dev/null 2>&1 || die "'timeout' (coreutils) is missing"

  # A cluster already running from DIR?
  for name in $(recorded_names node) $(recorded_names nats); do
    pid="$(recorded_pid "$name" || true)"
    if [[ -n "$pid" ]] && is_ours "$pid"; then
      die "a cluster already runs from $DIR ($name, pid $pid): run '$PROG stop --dir $DIR' first"
    fi
    rm -f "$PIDS/$name.pid" "$PIDS/$name.url" # left by an earlier run that did not stop cleanly
  done

  # Ports.
  for ((i = 1; i <= NATS_COUNT; i++)); do
    nats_ports+=($((BASE_PORT + i - 1)))
    cluster_ports+=($((CLUSTER_BASE_PORT + i - 1)))
    monitor_ports+=($((MONITOR_BASE_PORT + i - 1)))
    nats_urls+=("nats://127.0.0.1:$((BASE_PORT + i - 1))")
  done
  for ((i = 1; i <= NODE_COUNT; i++)); do gateway_ports+=($((GATEWAY_PORT + i - 1))); done
  local -a all_ports=("${nats_ports[@]}" "${monitor_ports[@]}" "${gateway_ports[@]}")
  if ((NATS_COUNT > 1)); then all_ports+=("${cluster_ports[@]}"); fi
  local dup
  dup="$(printf '%s\n' "${all_ports[@]}" | sort -n | uniq -d | head -n 1)"
  [[ -z "$dup" ]] || die "port $dup is used twice: choose --base-port and --gateway-port so the ranges (client, client+2000, client+4000, gateway) do not overlap"
  local busy=()
  for port in "${all_ports[@]}"; do
    ((port <= 65535)) || die "port $port is beyond 65535: lower --base-port or --gateway-port"
    if accepts_tcp "$port"; then busy+=("$port"); fi
  done
  [[ ${#busy[@]} -eq 0 ]] ||
    die "port(s) ${busy[*]} on 127.0.0.1 already in use: stop what uses them or pick other ports with --base-port / --gateway-port"

  mkdir -p "$PIDS"
  replicas=$((NATS_COUNT < 3 ? NATS_COUNT : 3))
  local nats_url_list
  nats_url_list="$(IFS=,; printf '%s' "${nats_urls[*]}")"

  # nats-servers.
  for ((i = 1; i <= NATS_COUNT; i++)); do
    name="nats-$i"
    port="${nats_ports[i - 1]}"
    cport="${cluster_ports[i - 1]}"
    mkdir -p "$DIR/$name"
    conf="$DIR/$name/nats-server.conf"
    {
      printf '# written by %s\n' "$PROG"
      printf 'server_name: %s\n' "$(json_string "$name")"
      printf 'listen: %s\n' "$(json_string "127.0.0.1:$port")"
      printf 'http: %s\n' "$(json_string "127.0.0.1:${monitor_ports[i - 1]}")"
      printf 'max_payload: 8388608\n'
      # nats-server keeps its JetStream data in <store_dir>/jetstream.
      printf 'jetstream { store_dir: %s }\n' "$(json_string "$DIR/$name")"
      if ((NATS_COUNT > 1)); then
        routes=""
        for ((j = 1; j <= NATS_COUNT; j++)); do
          if ((j == i)); then continue; fi
          routes+="${routes:+, }$(json_string "nats://127.0.0.1:${cluster_ports[j - 1]}")"
        done
        printf 'cluster {\n  name: "warden-local"\n  listen: %s\n  routes: [%s]\n}\n' "$(json_string "127.0.0.1:$cport")" "$routes"
      fi
    } >"$conf"
    log="$DIR/$name.log"
    nohup "$nats_bin" -c "$conf" >"$log" 2>&1 </dev/null &
    pid=$!
    printf '%s\n' "$pid" >"$PIDS/$name.pid"
    printf '%s\n' "nats://127.0.0.1:$port" >"$PIDS/$name.url"
    STARTED+=("$name")
  done

  for ((i = 1; i <= NATS_COUNT; i++)); do
    name="nats-$i"
    port="${nats_ports[i - 1]}"
    pid="$(recorded_pid "$name")"
    local ok=0
    for ((j = 0; j < 200; j++)); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if accepts_tcp "$port"; then ok=1; break; fi
      sleep 0.1
    done
    if ((ok == 0)); then
      show_log_tail "$DIR/$name.log"
      fail_start "$name did not accept connections on 127.0.0.1:$port (see $DIR/$name.log)"
    fi
  done
  say "nats: ${NATS_COUNT} server(s) accepting on ${nats_url_list}"

  # JetStream: a clustered server answers its /healthz with 200 once it knows the
  # meta leader (a few seconds after the routes form). Nodes started earlier
  # would spend their start-up retries on timeouts.
  local js_deadline=$((SECONDS + TIMEOUT)) js_pending
  while :; do
    js_pending=()
    for ((i = 1; i <= NATS_COUNT; i++)); do
      pid="$(recorded_pid "nats-$i")"
      kill -0 "$pid" 2>/dev/null || { show_log_tail "$DIR/nats-$i.log"; fail_start "nats-$i exited (see $DIR/nats-$i.log)"; }
      [[ "$(http_status "http://127.0.0.1:${monitor_ports[i - 1]}/healthz")" == 200 ]] || js_pending+=("nats-$i")
    done
    [[ ${#js_pending[@]} -gt 0 ]] || break
    if ((SECONDS >= js_deadline)); then
      for name in "${js_pending[@]}"; do
        i="${name#nats-}"
        printf '%s: GET http://127.0.0.1:%s/healthz -> %s\n' "$name" "${monitor_ports[i - 1]}" "$(http_get "http://127.0.0.1:${monitor_ports[i - 1]}/healthz" | tr '\n' ' ')" >&2
        show_log_tail "$DIR/$name.log"
      done
      fail_start "JetStream not ready on ${js_pending[*]} within ${TIMEOUT}s"
    fi
    sleep 0.5
  done
  say "nats: JetStream ready (replicas for warden's buckets and streams: $replicas)"

  # warden nodes. --data-dir is also passed as a flag so the process's command
  # line names DIR (stop and status use that to recognise their processes).
  for ((i = 1; i <= NODE_COUNT; i++)); do
    name="node-$i"
    nodes+=("$name")
    port="${gateway_ports[i - 1]}"
    mkdir -p "$DIR/$name"
    log="$DIR/$name.log"
    (
      cd "$ROOT"
      export NATS_URL="$nats_url_list" JS_REPLICAS="$replicas" PORT="$port" HOST=127.0.0.1 \
        NODE_ID="$name" DATA_DIR="$DIR/$name" MALLOC_ARENA_MAX=2
      exec nohup node --max-semi-space-size=24 dist/service/main.js --data-dir "$DIR/$name" >"$log" 2>&1 </dev/null
    ) &
    pid=$!
    printf '%s\n' "$pid" >"$PIDS/$name.pid"
    printf '%s\n' "http://127.0.0.1:$port" >"$PIDS/$name.url"
    STARTED+=("$name")
  done

  # Readiness: every node's /readyz answers 200.
  local deadline=$((SECONDS + TIMEOUT)) pending=("${nodes[@]}") still failed=()
  while [[ ${#pending[@]} -gt 0 ]]; do
    still=()
    for name in "${pending[@]}"; do
      pid="$(recorded_pid "$name")"
      if ! kill -0 "$pid" 2>/dev/null; then
        failed+=("$name")
        printf '%s exited during start-up\n' "$name" >&2
        show_log_tail "$DIR/$name.log"
        continue
      fi
      url="$(cat "$PIDS/$name.url")"
      [[ "$(http_status "$url/readyz")" == 200 ]] || still+=("$name")
    done
    pending=("${still[@]+"${still[@]}"}")
    [[ ${#failed[@]} -eq 0 ]] || fail_start "node(s) ${failed[*]} failed to start"
    [[ ${#pending[@]} -gt 0 ]] || break
    if ((SECONDS >= deadline)); then
      for name in "${pending[@]}"; do
        url="$(cat "$PIDS/$name.url")"
        printf '%s not ready after %ss: GET %s/readyz -> %s\n' "$name" "$TIMEOUT" "$url" "$(http_get "$url/readyz" | tr '\n' ' ')" >&2
        show_log_tail "$DIR/$name.log"
      done
      fail_start "node(s) ${pending[*]} not ready within ${TIMEOUT}s"
    fi
    sleep 0.5
  done

  # Membership: wait briefly until every node lists every node as live.
  local converged=0 body
  for ((j = 0; j < 40; j++)); do
    converged=1
    for name in "${nodes[@]}"; do
      body="$(http_get "$(cat "$PIDS/$name.url")/readyz" | grep -o '"liveNodes":\[[^]]*\]' || true)"
      for i in "${nodes[@]}"; do
        [[ "$body" == *"\"$i\""* ]] || converged=0
      done
    done
    if ((converged == 1)); then break; fi
    sleep 0.25
  done
  ((converged == 1)) || say "warning: not every node lists all ${NODE_COUNT} nodes as live yet (see /readyz)"

  say ""
  say "warden local cluster is ready (data, logs: $DIR)"
  say "  JetStream replicas: $replicas"
  for ((i = 1; i <= NATS_COUNT; i++)); do
    say "  nats-$i   ${nats_urls[i - 1]}   ($( ((NATS_COUNT > 1)) && printf 'cluster port %s, ' "${cluster_ports[i - 1]}")monitoring http://127.0.0.1:${monitor_ports[i - 1]}, log $DIR/nats-$i.log)"
  done
  for ((i = 1; i <= NODE_COUNT; i++)); do
    say "  node-$i   http://127.0.0.1:${gateway_ports[i - 1]}   (log $DIR/node-$i.log)"
  done
  say "  NATS_URL=$nats_url_list"
  say "stop with: $PROG stop --dir $DIR"
}

case "$COMMAND" in
  start) cmd_start ;;
  status) cmd_status ;;
  stop) stop_cluster ;;
esac
