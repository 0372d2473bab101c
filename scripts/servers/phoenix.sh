#!/usr/bin/env bash
# Arize Phoenix 20.26.1, an OpenTelemetry trace backend with a web UI, on 127.0.0.1 only: OTLP/HTTP
# (protobuf) at BASE/v1/traces, OTLP/gRPC on 127.0.0.1:GRPC_PORT, a REST API (BASE/v1/projects/NAME/spans)
# and GraphQL (BASE/graphql) to read spans back, the UI at BASE/projects. Installed from PyPI into a
# cached virtualenv on first use (about 2 minutes, 850 MB). Every `up` takes about 20 s (15 s of it
# Python imports) and starts from an empty database (SQLite in a fresh run directory), with no telemetry
# and no requests to the internet. The server uses about 450 MB of memory.
#   scripts/servers/phoenix.sh install   # installs if missing (idempotent, instant when installed)
#   scripts/servers/phoenix.sh up        # (re)starts it; prints the base URL http://127.0.0.1:PORT on stdout
#   scripts/servers/phoenix.sh down      # stops it (idempotent)
#   scripts/servers/phoenix.sh log       # prints the server log's path
# Spans land in the project named by the OTLP/HTTP request header x-project-name, else by the resource
# attribute openinference.project.name, else in "default" (service.name does not choose it).
# Env: PHOENIX_PORT (HTTP, default 16006), PHOENIX_GRPC_PORT (OTLP/gRPC, default PHOENIX_PORT+1),
#      PHOENIX_UP_SECS (how long `up` waits for health, default 90), PHOENIX_STOP_SECS (grace before
#      SIGKILL on down, default 10), LLLM_CACHE_DIR. Every other PHOENIX_* or OTEL_* variable is dropped
#      from the server's environment, so a developer's settings cannot point it elsewhere.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"
VERSION=20.26.1
ROOT=$LLLM_CACHE_DIR/phoenix
VENV=$ROOT/venv
PORT=${PHOENIX_PORT:-16006}
GRPC_PORT=${PHOENIX_GRPC_PORT:-$((PORT + 1))}
UP_SECS=${PHOENIX_UP_SECS:-90}
STOP_SECS=${PHOENIX_STOP_SECS:-10}
RUN=$ROOT/run-$PORT
LOG=$RUN/phoenix.log

# Phoenix binds its OTLP/gRPC server to [::] (every interface) whatever PHOENIX_HOST says. This
# launcher makes every gRPC port it opens a loopback one, then runs `phoenix serve`.
read -r -d '' LAUNCHER <<'PY' || true
import sys
import grpc.aio

_server = grpc.aio.server

def _loopback(add):
    def add_port(address, *rest):
        port = address.rsplit(":", 1)[1]
        return add("127.0.0.1:" + port, *rest)
    return add_port

def server(*args, **kwargs):
    s = _server(*args, **kwargs)
    s.add_insecure_port = _loopback(s.add_insecure_port)
    s.add_secure_port = _loopback(s.add_secure_port)
    return s

grpc.aio.server = server
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
main()
PY

installed() {
  "$VENV/bin/python" - "$VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(version("arize-phoenix") != sys.argv[1])
PY
}

install() {
  installed && return 0
  mkdir -p "$ROOT"
  if ! python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    say "Phoenix needs Python 3.10 or later with venv (on Debian: apt-get install python3 python3-venv)"
    exit 1
  fi
  say "installing Arize Phoenix $VERSION into $VENV (about 2 minutes and 850 MB, once)"
  local fail=''
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail="python3 -m venv $VENV"
  [ -n "$fail" ] || "$VENV/bin/pip" install -q --disable-pip-version-check "arize-phoenix==$VERSION" \
    >>"$ROOT/install.log" 2>&1 || fail="pip install arize-phoenix==$VERSION"
  [ -n "$fail" ] || installed || fail="pip install (arize-phoenix $VERSION missing afterwards)"
  if [ -n "$fail" ]; then
    say "$fail failed; see $ROOT/install.log"
    tail -20 "$ROOT/install.log" >&2
    exit 1
  fi
}

# public_listeners PIDFILE: prints the TCP sockets that the group's processes listen on at an address
# other than loopback (none expected).
public_listeners() {
  local pgid
  read -r pgid _ <"$1" || return 0
  # shellcheck disable=SC2046
  "$VENV/bin/python" -I - $(group_pids "$pgid") <<'PY'
import os, sys
inodes = set()
for pid in sys.argv[1:]:
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
loopback = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            addr, port = cols[1].split(":")
            if cols[3] == "0A" and cols[9] in inodes and addr not in loopback:
                print(f"{table[10:]} {addr}:{int(port, 16)}")
PY
}

# ready: Phoenix answers GET /readyz with 200 (the venv's Python: it starts fast, unlike a pyenv shim).
ready() {
  "$VENV/bin/python" -I - "http://127.0.0.1:$PORT/readyz" 2>/dev/null <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(r.status != 200)
PY
}

up() {
  install
  down
  rm -rf "$RUN"
  mkdir -p "$RUN/work" "$RUN/tmp"
  local v
  for v in $(compgen -e); do
    case $v in PHOENIX_* | OTEL_*) unset "$v" ;; esac
  done
  export PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$PORT PHOENIX_GRPC_PORT=$GRPC_PORT
  export PHOENIX_WORKING_DIR=$RUN/work PHOENIX_SQL_DATABASE_URL=sqlite:///$RUN/work/phoenix.db
  # Phoenix keeps a pid file under $TMPDIR/.arize-phoenix: keep it in the run directory as well.
  export TMPDIR=$RUN/tmp
  # No telemetry pixels, no web fonts or downloads, no agent assistant (it would call out), no auth.
  export PHOENIX_TELEMETRY_ENABLED=false PHOENIX_ALLOW_EXTERNAL_RESOURCES=false
  export PHOENIX_DISABLE_AGENT_ASSISTANT=true PHOENIX_ENABLE_AUTH=false PHOENIX_ENABLE_PROMETHEUS=false
  export PHOENIX_LOG_MIGRATIONS=false PYTHONUNBUFFERED=1
  local p
  for p in "$PORT" "$GRPC_PORT"; do
    if (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      say "port $p on 127.0.0.1 is taken by another program: set PHOENIX_PORT (and PHOENIX_GRPC_PORT)"; exit 1
    fi
  done
  start_group "$RUN/phoenix.pid" "$LOG" "$VENV/bin/python" -c "$LAUNCHER"
  # Poll /readyz (it answers once the database is migrated and both servers listen) against a wall-clock
  # deadline; give up at once if the server died.
  local pgid deadline=$((SECONDS + UP_SECS))
  read -r pgid _ <"$RUN/phoenix.pid"
  until ready; do
    if [ -z "$(group_pids "$pgid")" ]; then
      say "Phoenix exited while starting; see $LOG"; tail -20 "$LOG" >&2; down; exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "Phoenix did not come up on 127.0.0.1:$PORT within $UP_SECS s; see $LOG"; tail -20 "$LOG" >&2; down; exit 1
    fi
    sleep 0.5
  done
  local public
  public=$(public_listeners "$RUN/phoenix.pid")
  if [ -n "$public" ]; then
    say "Phoenix listens beyond loopback (stopping it):"; printf '%s\n' "$public" >&2; down; exit 1
  fi
  say "Phoenix $VERSION up: OTLP/HTTP http://127.0.0.1:$PORT/v1/traces, OTLP/gRPC 127.0.0.1:$GRPC_PORT, log $LOG"
  echo "http://127.0.0.1:$PORT"
}

down() {
  [ -f "$RUN/phoenix.pid" ] || return 0
  stop_groups -t "$STOP_SECS" "$RUN/phoenix.pid"
}

case "${1:-up}" in
  install) install ;;
  up) up ;;
  down) down ;;
  log) echo "$LOG" ;;
  *) echo "usage: $0 install|up|down|log" >&2; exit 2 ;;
esac
