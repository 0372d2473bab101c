#!/usr/bin/env bash
# Real clients of `lllm serve`, for its tests, installed into a cache on first use (about a minute)
# and checked in well under a second later on:
#   - in one virtualenv, the official OpenAI Python SDK (PyPI openai), the OpenAI Agents SDK (PyPI
#     openai-agents) and pydantic-ai (PyPI pydantic-ai-slim[openai]): agent frameworks that resend the
#     whole history (or `previous_response_id` / `conversation`) and no session header;
#   - the Codex CLI (npm @openai/codex), a coding harness that speaks the Responses API and sends
#     its conversation id as `thread-id`;
#   - the Vercel AI SDK (npm ai with @ai-sdk/openai), whose Responses model sends earlier assistant
#     turns as `item_reference`s, and OpenCode (npm opencode-ai), a coding harness that sends its
#     session id as `x-session-id`.
#   scripts/servers/clients.sh install   # installs what is missing, then prints the assignments below
#   scripts/servers/clients.sh env       # prints them without installing (fails if something is missing)
# Prints on stdout, one a line, for `eval`:
#   LLLM_OPENAI_PYTHON=<path of the Python with openai, openai-agents and pydantic-ai>
#   LLLM_CODEX=<path of the codex executable>
#   LLLM_NODE_CLIENTS=<a node that finds ai and @ai-sdk/openai: its scripts read LLLM_NODE_MODULES>
#   LLLM_OPENCODE=<path of the opencode executable>
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
AGENTS_VERSION=0.24.0
PYDANTIC_AI_VERSION=2.78.0
PY_PINS=("openai==$OPENAI_VERSION" "openai-agents==$AGENTS_VERSION" "pydantic-ai-slim[openai]==$PYDANTIC_AI_VERSION")
CODEX_VERSION=${LLLM_CODEX_VERSION:-0.171.0}
CODEX_PKG=$NODE_DIR/node_modules/@openai/codex/package.json
# A wrapper that runs Codex with the Node.js it was installed with (which need not be on PATH).
CODEX=$ROOT/bin/codex
AI_VERSION=7.0.185
AI_OPENAI_VERSION=4.0.126
OPENCODE_VERSION=1.18.33
NODE_PINS=("ai@$AI_VERSION" "@ai-sdk/openai@$AI_OPENAI_VERSION" "opencode-ai@$OPENCODE_VERSION")
# A wrapper that runs a script with that Node.js, telling it where the packages are (an ES module
# outside this folder cannot import them by name).
NODE_CLIENTS=$ROOT/bin/node-clients
# The native binary npm placed for this machine (the package's postinstall picks it).
OPENCODE=$NODE_DIR/node_modules/opencode-ai/bin/opencode.exe

venv_ok() {
  [ -x "$PYTHON" ] && "$PYTHON" - "$OPENAI_VERSION" "$AGENTS_VERSION" "$PYDANTIC_AI_VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
wanted = dict(zip(["openai", "openai-agents", "pydantic-ai-slim"], sys.argv[1:]))
sys.exit(any(version(name) != v for name, v in wanted.items()))
PY
}

# pkg_version NAME: the version of node_modules/NAME, empty when it is not installed.
pkg_version() {
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$NODE_DIR/node_modules/$1/package.json" 2>/dev/null | head -n 1
}

node_clients_ok() {
  [ -x "$NODE_CLIENTS" ] && [ "$(pkg_version ai)" = "$AI_VERSION" ] \
    && [ "$(pkg_version @ai-sdk/openai)" = "$AI_OPENAI_VERSION" ] \
    && [ "$(pkg_version opencode-ai)" = "$OPENCODE_VERSION" ] \
    && "$OPENCODE" --version 2>/dev/null | grep -qx "$OPENCODE_VERSION"
}

codex_ok() {
  [ -x "$CODEX" ] && [ -f "$CODEX_PKG" ] && grep -q "\"version\": *\"$CODEX_VERSION\"" "$CODEX_PKG" \
    && "$CODEX" --version >/dev/null 2>&1
}

install() {
  mkdir -p "$ROOT"
  if ! venv_ok; then
    need_python
    say "installing ${PY_PINS[*]} into $VENV (once)"
    [ -x "$PYTHON" ] || python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail_install "python3 -m venv $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PINS[@]}" \
      >>"$ROOT/install.log" 2>&1 || fail_install "pip install ${PY_PINS[*]}"
    venv_ok || fail_install "pip install (${PY_PINS[*]} missing afterwards)"
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
  if ! node_clients_ok; then
    [ -x "$PYTHON" ] || { need_python; python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail_install "python3 -m venv $VENV"; }
    pick_node
    say "installing ${NODE_PINS[*]} into $NODE_DIR (once)"
    mkdir -p "$NODE_DIR" "$ROOT/bin"
    PATH=$(dirname "$NODE"):$PATH "${NPM[@]}" install --prefix "$NODE_DIR" --no-audit --no-fund --save-exact \
      "${NODE_PINS[@]}" >>"$ROOT/install.log" 2>&1 || fail_install "npm install ${NODE_PINS[*]}"
    printf '#!/bin/sh\nLLLM_NODE_MODULES="%s" PATH="%s:$PATH" exec "%s" "$@"\n' "$NODE_DIR/node_modules" \
      "$(dirname "$NODE")" "$NODE" >"$NODE_CLIENTS"
    chmod +x "$NODE_CLIENTS"
    node_clients_ok || fail_install "npm install (${NODE_PINS[*]} missing afterwards, or opencode does not start)"
  fi
}

print_env() {
  printf 'LLLM_OPENAI_PYTHON=%q\nLLLM_CODEX=%q\nLLLM_NODE_CLIENTS=%q\nLLLM_OPENCODE=%q\n' \
    "$PYTHON" "$CODEX" "$NODE_CLIENTS" "$OPENCODE"
}

case "${1:-install}" in
  install) install; print_env ;;
  env)
    venv_ok || { say "${PY_PINS[*]} are not installed: run $0 install"; exit 1; }
    codex_ok || { say "codex $CODEX_VERSION is not installed: run $0 install"; exit 1; }
    node_clients_ok || { say "${NODE_PINS[*]} are not installed: run $0 install"; exit 1; }
    print_env
    ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
