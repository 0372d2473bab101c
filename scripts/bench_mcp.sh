#!/usr/bin/env bash
# What lllm adds to an MCP tool call: the reference server (server-everything, over stdio) called
# through lllm's MCP tool and through the bare SDK client, in alternating blocks; the difference of
# the medians is lllm's own time per call (argument check, timeout, result conversion). Two message
# sizes. Installs the server into the cache first (scripts/servers/mcp.sh).
#   scripts/bench_mcp.sh [--write]    # --write puts the figures into BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/servers/mcp.sh install)"
cargo build --release --quiet -p lllm-bench --bin mcp_overhead
small=$("${CARGO_TARGET_DIR:-target}"/release/mcp_overhead 2000 43 -- "$LLLM_MCP_EVERYTHING" stdio)
large=$("${CARGO_TARGET_DIR:-target}"/release/mcp_overhead 500 32768 -- "$LLLM_MCP_EVERYTHING" stdio)
echo "$small"
echo "$large"
python3 - "$small" "$large" <<'PY'
import json, sys
for f in map(json.loads, sys.argv[1:3]):
    print(f"MCP echo of {f['message_bytes']} bytes, {f['calls']} calls: lllm p50 {f['through_lllm']['p50_us']:.0f} us, "
          f"SDK p50 {f['through_sdk']['p50_us']:.0f} us; lllm's own time per call: "
          f"{f['overhead_p50_us']:.1f} us at the median, {f['overhead_mean_us']:.1f} us on average")
PY
if [ "${1:-}" = --write ]; then
  python3 - "$small" "$large" <<'PY'
import json, os, platform, re, sys, time
rows = []
for f in map(json.loads, sys.argv[1:3]):
    l, s = f["through_lllm"], f["through_sdk"]
    rows.append(
        f"| {f['message_bytes']:,} B | {f['calls']:,} | {l['p50_us']:.0f} / {l['p90_us']:.0f} / {l['mean_us']:.0f} µs | "
        f"{s['p50_us']:.0f} / {s['p90_us']:.0f} / {s['mean_us']:.0f} µs | **{f['overhead_p50_us']:.1f} µs** | {f['overhead_mean_us']:.1f} µs |"
    )
section = (
    "<!-- mcp:start -->\n"
    f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores); command "
    "`scripts/bench_mcp.sh --write`. The reference server `@modelcontextprotocol/server-everything` over stdio, "
    "its `echo` tool, one call at a time; the same server program started twice, once behind lllm's MCP tool "
    "(the call as an agent makes it: arguments checked against the server's schema, the call with its timeout, "
    "the result turned into the model's text) and once behind the bare `rmcp` client, in alternating blocks of "
    "100 calls.\n\n"
    "| message | calls | through lllm p50 / p90 / mean | bare SDK p50 / p90 / mean | lllm's own time, median | lllm's own time, mean |\n"
    "|---|---|---|---|---|---|\n"
    + "\n".join(rows) + "\n"
    "<!-- mcp:end -->"
)
text = open("BENCHMARKS.md").read()
if "<!-- mcp:start -->" not in text:
    text = text.rstrip("\n") + "\n\n## MCP tool calls: what lllm adds\n\n<!-- mcp:start -->\n<!-- mcp:end -->\n"
text = re.sub(r"<!-- mcp:start -->.*<!-- mcp:end -->", lambda _: section, text, flags=re.S)
open("BENCHMARKS.md", "w").write(text)
PY
fi
