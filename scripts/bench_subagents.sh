#!/usr/bin/env bash
# Background subagents (issue 34), two figures:
#  - memory: 1,000 background `fork` subagents of a 200-message dialog started in one process
#    (through Agent::spawn, what task_start does), every child running with its request held in
#    flight when the resident set is read; then as many deep copies of the history, what a framework
#    that copies a history into each child holds. RSS per fork against the dialog's size and a copy's,
#    and against a fork in Python lllm 0.2.1 (scripts/bench/python_lllm_forks.py, installed here).
#  - makespan on NVIDIA Dynamo (scripts/servers/dynamo.sh, started here on DYNAMO_PORT, default
#    18000, with the mocker at --speedup-ratio ${SUBAGENTS_SPEEDUP:-1} so that a researcher's 256 tokens
#    take a measurable time): a lead with a 6,800-token prefix starts four fork researchers in the
#    background, against the same four run one after another (background: false, one tool at a time);
#    the wall time of each, alternating, SUBAGENTS_ROUNDS rounds (default 3).
# Prints the section; with --write, also puts it in BENCHMARKS.md.
#   scripts/bench_subagents.sh [--write] [FORKS [MESSAGES]]   # defaults 1000 200
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
. scripts/bench/common.sh
if [ "${1:-}" = --write ]; then
  bench_write_flag --write
  shift
fi
case ${1:-} in -*) echo "usage: scripts/bench_subagents.sh [--write] [FORKS [MESSAGES]]" >&2; exit 2 ;; esac
cargo build --release --quiet -p lllm-bench --bin subagent_forks --bin subagent_makespan --bin report
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT
"$bin"/subagent_forks "${1:-1000}" "${2:-200}" >"$work/forks.json"
# Python lllm's fork of the same dialog (it deep-copies the messages), into the same figures.
VENV=$LLLM_CACHE_DIR/pylllm/venv
if ! "$VENV/bin/python" -c 'import lllm.runtimes.native.core.agent' 2>/dev/null; then
  say "installing Python lllm 0.2.1 with its native runtime into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'lllm-core[native]==0.2.1'
fi
LITELLM_LOCAL_MODEL_COST_MAP=True "$VENV/bin/python" scripts/bench/python_lllm_forks.py \
  "${1:-1000}" "${2:-200}" >"$work/python.json"
python3 -c 'import json, sys; f = json.load(open(sys.argv[1])); f["python"] = json.load(open(sys.argv[2])); json.dump(f, open(sys.argv[1], "w"))' \
  "$work/forks.json" "$work/python.json"
mock="--speedup-ratio ${SUBAGENTS_SPEEDUP:-1}"
say "starting Dynamo (mocker $mock)"
url=$(MOCK_ARGS="$mock" FRONT_ARGS="--router-session-affinity-ttl-secs 300" scripts/servers/dynamo.sh up)
LLLM_DYNAMO_URL=$url "$bin"/subagent_makespan "${SUBAGENTS_ROUNDS:-3}" 256 >"$work/makespan.json"
report subagents "$work/forks.json" "$work/makespan.json" "$mock"
