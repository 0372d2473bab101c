# Shared by the server scripts: where caches live, and waiting for a port.
# The cache is outside the checkout, so a fresh clone reuses a built server; it is safe to delete.
LLLM_CACHE_DIR=${LLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lllm}
mkdir -p "$LLLM_CACHE_DIR"

say() { printf '%s\n' "lllm: $*" >&2; }

# wait_for URL SECONDS PATTERN: poll URL until its body matches PATTERN (or just answers).
wait_for() {
  local url=$1 seconds=$2 pattern=${3:-}
  for _ in $(seq 1 "$seconds"); do
    if body=$(curl -sf --max-time 2 "$url" 2>/dev/null); then
      if [ -z "$pattern" ] || grep -q "$pattern" <<<"$body"; then return 0; fi
    fi
    sleep 1
  done
  return 1
}

# stop_pidfile FILE: stop the process recorded in FILE (and nothing else).
stop_pidfile() {
  local file=$1
  [ -f "$file" ] || return 0
  kill "$(cat "$file")" 2>/dev/null || true
  rm -f "$file"
}
