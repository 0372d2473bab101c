"""Formats the payoff legs (JSON lines) as a Markdown table; with --write, puts it in BENCHMARKS.md
between the payoff markers."""
import json
import os
import platform
import re
import sys
import time

legs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
rows = [
    "| leg | requests | errors | dialogs pinned to one worker | forks on parent's worker | cached ÷ ideal | prefill tokens computed | wall time |",
    "|---|---|---|---|---|---|---|---|",
]
for leg in legs:
    rows.append(
        f"| {leg['leg']} | {leg['requests']} | {leg['errors']} | {leg['pinned']}/{leg['dialogs']} "
        f"({100 * leg['pinned'] / max(leg['dialogs'], 1):.0f} %) | {leg['forks_on_parent_worker']}/{leg['forks']} | "
        f"{leg['cached_of_ideal']:.3f} | {leg['prefill_tokens']:,} | {leg['seconds']:.0f} s |"
    )
by_leg = {leg["leg"]: leg for leg in legs}
notes = []
if "none" in by_leg and "family" in by_leg and by_leg["family"]["prefill_tokens"]:
    ratio = by_leg["none"]["prefill_tokens"] / by_leg["family"]["prefill_tokens"]
    notes.append(f"Prefill tokens without identity ÷ with `family` hints: **{ratio:.2f}×**.")
table = "\n".join(rows + [""] + notes)
print(table)
if len(sys.argv) > 2 and sys.argv[2] == "--write":
    section = (
        "<!-- payoff:start -->\n"
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {platform.system()}, "
        f"NVIDIA Dynamo 1.6.1 (KV router, one mocker process with {os.environ.get('PAYOFF_WORKERS', '4')} workers × 2,048 blocks, "
        "`--speedup-ratio 1`), command `scripts/bench_payoff.sh --write`.\n\n"
        f"{table}\n<!-- payoff:end -->"
    )
    text = open("BENCHMARKS.md").read()
    text = re.sub(r"<!-- payoff:start -->.*<!-- payoff:end -->", lambda _: section, text, flags=re.S)
    open("BENCHMARKS.md", "w").write(text)
