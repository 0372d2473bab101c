#!/usr/bin/env bash
# NVIDIA Dynamo 1.6.1 on the CPU: the frontend with its KV-aware router, and simulated engines (the
# "mocker": real tokenization and KV-cache bookkeeping, no model), all on 127.0.0.1. Installed from PyPI
# into a cached virtualenv on first use (about a minute); later starts take seconds.
#   scripts/servers/dynamo.sh up     # prints the base URL; the served model is "tiny"
#   scripts/servers/dynamo.sh down
#   scripts/servers/dynamo.sh log    # prints the frontend log's path (which worker served each request)
# Env: DYNAMO_PORT (default 18000), FRONT_ARGS (extra frontend flags), MOCK_ARGS (extra mocker flags),
#      DYNAMO_WORKERS (default 2), LLLM_CACHE_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
ROOT=$LLLM_CACHE_DIR/dynamo
VENV=$ROOT/venv
PORT=${DYNAMO_PORT:-18000}
NATS_PORT=$((PORT + 1000))
RUN=$ROOT/run-$PORT

pip_install() {
  "$VENV/bin/pip" install -q "$@" 2>>"$ROOT/install.log" || {
    say "pip install $* failed; see $ROOT/install.log"; tail -20 "$ROOT/install.log" >&2; exit 1
  }
}

install() {
  mkdir -p "$ROOT"
  if ! "$VENV/bin/python" -c 'import dynamo.frontend, dynamo.mocker' 2>/dev/null; then
    say "installing NVIDIA Dynamo 1.6.1 into $VENV (about a minute, once)"
    python3 -m venv "$VENV"
    pip_install 'ai-dynamo-runtime==1.6.1'
    # `ai-dynamo` pins a planner-only package that installs from outside PyPI: take ai-dynamo without
    # its dependencies, then the dependencies the frontend and the mocker need. (pip then warns that
    # the planner-only package is missing; the warning goes to the install log.)
    pip_install --no-deps 'ai-dynamo==1.6.1'
    pip_install 'aiohttp>=3.14.3,<4' 'certifi>=2026.10.19' 'kubernetes>=32.0.1,<33' \
      'msgspec>=0.19.0' 'prometheus-client>=0.23.1,<1' 'pyzmq>=26' 'redis>=6.2,<9' 'tqdm>=4' \
      'transformers>=4.56.0' 'typing-extensions>=4.10' 'zstandard>=0.23,<1'
  fi
  if ! command -v nats-server >/dev/null; then
    say "installing nats-server (Debian)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
  fi
  [ -f "$ROOT/tiny-model/tokenizer.json" ] || "$VENV/bin/python" "$HERE/tiny_tokenizer.py" "$ROOT/tiny-model"
}

up() {
  install
  down
  mkdir -p "$RUN/logs" "$RUN/kv" "$RUN/nats"
  # Discovery through files and the event plane through NATS on loopback: the default ZMQ event plane
  # would listen on every interface.
  export DYN_DISCOVERY_BACKEND=file DYN_FILE_KV=$RUN/kv DYN_REQUEST_PLANE=tcp DYN_EVENT_PLANE=nats
  export DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1 DYN_EVENT_PLANE_HOST=127.0.0.1
  export DYN_SYSTEM_HOST=127.0.0.1 NATS_SERVER=nats://127.0.0.1:$NATS_PORT
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$RUN/nats" >"$RUN/logs/nats.log" 2>&1 &
  echo $! >"$RUN/nats.pid"
  for _ in $(seq 1 20); do (echo >"/dev/tcp/127.0.0.1/$NATS_PORT") 2>/dev/null && break; sleep 0.5; done
  local i
  for i in $(seq 1 "${DYNAMO_WORKERS:-2}"); do
    # shellcheck disable=SC2086
    DYN_SYSTEM_PORT=$((PORT + 80 + i)) nohup "$VENV/bin/python" -m dynamo.mocker \
      --model-path "$ROOT/tiny-model" --model-name tiny --block-size 16 --speedup-ratio 10 \
      --kv-bytes-per-token 256 ${MOCK_ARGS:-} >"$RUN/logs/mocker$i.log" 2>&1 &
    echo $! >"$RUN/mocker$i.pid"
  done
  # shellcheck disable=SC2086
  nohup "$VENV/bin/python" -m dynamo.frontend --http-host 127.0.0.1 --http-port "$PORT" --router-mode kv \
    ${FRONT_ARGS:-} >"$RUN/logs/frontend.log" 2>&1 &
  echo $! >"$RUN/frontend.pid"
  wait_for "http://127.0.0.1:$PORT/v1/models" 90 '"tiny"' || {
    say "Dynamo did not come up; see $RUN/logs"; tail -5 "$RUN"/logs/*.log >&2; down; exit 1
  }
  # The frontend lists the model once one worker registered; give the second a moment too.
  sleep 2
  echo "http://127.0.0.1:$PORT/v1"
}

down() {
  local f
  for f in "$RUN"/*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  return 0
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  log) echo "$RUN/logs/frontend.log" ;;
  *) echo "usage: $0 up|down|log" >&2; exit 2 ;;
esac
