#!/usr/bin/env bash
# 1,000 concurrent dialogs × 10 turns against a local stand-in server in the same process: throughput,
# peak RSS (client and stub server together), and a check that no message was lost.
#   scripts/bench_concurrency.sh [--write]    # --write puts the figures into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
# Each dialog in flight holds a client and a server socket.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 8192
cargo build --release --quiet -p lllm-bench --bin concurrency
figures=$("${CARGO_TARGET_DIR:-target}"/release/concurrency)
echo "$figures"
if [ "${1:-}" = --write ]; then
  python3 - "$figures" <<'PY'
import json, os, platform, re, sys, time
f = json.loads(sys.argv[1])
section = (
    "<!-- concurrency:start -->\n"
    f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores); command "
    "`scripts/bench_concurrency.sh --write`. One process holds the agent and the stand-in server (which "
    "keeps every request it received, so the memory figure includes the server's record).\n\n"
    "| dialogs in flight | turns each | requests | wall time | turns per second | peak RSS | dialogs with a lost or crossed message |\n"
    "|---|---|---|---|---|---|---|\n"
    f"| {f['dialogs']:,} | {f['turns_per_dialog']} | {f['requests']:,} | {f['seconds']:.2f} s | "
    f"{f['turns_per_second']:,.0f} | {f['peak_rss_mib']:.0f} MiB | {f['dialogs_with_lost_or_crossed_messages']} |\n"
    "<!-- concurrency:end -->"
)
text = open("BENCHMARKS.md").read()
text = re.sub(r"<!-- concurrency:start -->.*<!-- concurrency:end -->", lambda _: section, text, flags=re.S)
open("BENCHMARKS.md", "w").write(text)
PY
fi
