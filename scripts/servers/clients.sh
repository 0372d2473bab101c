#!/usr/bin/env bash
# Real clients of `lllm serve`, for its tests, installed into a cache on first use (about half a
# minute) and checked in well under a second later on:
#   - the official OpenAI Python SDK (PyPI openai), in a virtualenv;
#   - the Codex CLI (npm @openai/codex), a coding harness that speaks the Responses API and sends
#     its conversation id as `thread-id`.
#   scripts/servers/clients.sh install   # installs what is missing, then prints the assignments below
#   scripts/servers/clients.sh env       # prints them without installing (fails if something is missing)
# Prints on stdout, one a line, for `eval`:
#   LLLM_OPENAI_PYTHON=<path of the Python with the openai SDK>
#   LLLM_CODEX=<path of the codex executable>
# Everything else goes to stderr. Needs Python 3.10+ with venv; uses the machine's Node.js 18+ with
# npm when there is one, else installs Node.js from PyPI into the venv. Env: LLLM_CACHE_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"
ROOT=$LLLM_CACHE_DIR/clients
VENV=$ROOT/venv
PYTHON=$VENV/bin/python
NODE_DIR=$ROOT/node
OPENAI_VERSION=3.63.0
CODEX_VERSION=${LLLM_CODEX_VERSION:-0.171.0}
CODEX_PKG=$NODE_DIR/node_modules/@openai/codex/package.json
# A wrapper that runs Codex with the Node.js it was installed with (which need not be on PATH).
CODEX=$ROOT/bin/codex

venv_ok() {
  [ -x "$PYTHON" ] && "$PYTHON" - "$OPENAI_VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(version("openai") != sys.argv[1])
PY
}

codex_ok() {
  [ -x "$CODEX" ] && [ -f "$CODEX_PKG" ] && grep -q "\"version\": *\"$CODEX_VERSION\"" "$CODEX_PKG" \
    && "$CODEX" --version >/dev/null 2>&1
}

install() {
  mkdir -p "$ROOT"
  if ! venv_ok; then
    need_python
    say "installing openai $OPENAI_VERSION into $VENV (once)"
    [ -x "$PYTHON" ] || python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail_install "python3 -m venv $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "openai==$OPENAI_VERSION" \
      >>"$ROOT/install.log" 2>&1 || fail_install "pip install openai==$OPENAI_VERSION"
    venv_ok || fail_install "pip install (openai $OPENAI_VERSION missing afterwards)"
  fi
  if ! codex_ok; then
    [ -x "$PYTHON" ] || { need_python; python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail_install "python3 -m venv $VENV"; }
    pick_node
    say "installing @openai/codex $CODEX_VERSION into $NODE_DIR (once)"
    mkdir -p "$NODE_DIR" "$ROOT/bin"
    PATH=$(dirname "$NODE"):$PATH "${NPM[@]}" install --prefix "$NODE_DIR" --no-audit --no-fund --save-exact \
      "@openai/codex@$CODEX_VERSION" >>"$ROOT/install.log" 2>&1 \
      || fail_install "npm install @openai/codex@$CODEX_VERSION"
    printf '#!/bin/sh\nPATH="%s:$PATH" exec "%s" "%s" "$@"\n' "$(dirname "$NODE")" "$NODE" \
      "$NODE_DIR/node_modules/@openai/codex/bin/codex.js" >"$CODEX"
    chmod +x "$CODEX"
    codex_ok || fail_install "the codex wrapper $CODEX"
  fi
}

print_env() {
  printf 'LLLM_OPENAI_PYTHON=%q\nLLLM_CODEX=%q\n' "$PYTHON" "$CODEX"
}

case "${1:-install}" in
  install) install; print_env ;;
  env)
    venv_ok || { say "openai $OPENAI_VERSION is not installed: run $0 install"; exit 1; }
    codex_ok || { say "codex $CODEX_VERSION is not installed: run $0 install"; exit 1; }
    print_env
    ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
