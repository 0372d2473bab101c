"""Side by side: the same N-turn conversation through Python lllm and through lllm (Rust), against the
same local stand-in server. Reports whole-process wall time for one turn, the marginal CPU time of a
turn (a 100-turn run minus a 1-turn run, over 99: start-up is not a turn's cost), and peak RSS, each as a
ratio; writes the table into BENCHMARKS.md and a chart (SVG).
Usage: python compare.py API_BASE PYTHON RUST_TURNS [--write]"""
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

api_base, python, rust_turns = sys.argv[1:4]
write = "--write" in sys.argv
script = os.path.join(os.path.dirname(__file__), "python_lllm_turns.py")
env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR")


def run(cmd):
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0 or "stub answer to" not in out:
        sys.exit(f"{cmd[0]} failed (status {status}): {out[:300]}")
    return usage


def measure(cmd):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one process run.

    The peak RSS comes from GNU time, which starts the program from a small process: a child forked
    from this Python interpreter would count the interpreter's pages it had before exec."""
    start = time.perf_counter()
    usage = run(cmd)
    wall = time.perf_counter() - start
    with tempfile.NamedTemporaryFile("r") as report:
        run(["/usr/bin/time", "-f", "%M", "-o", report.name] + cmd)
        peak_kib = int(report.read().split()[-1])
    return wall, usage.ru_utime + usage.ru_stime, peak_kib / 1024


clients = {
    "Python lllm 0.2.1": lambda n: [python, script, api_base, str(n)],
    "lllm (Rust)": lambda n: [rust_turns, api_base, str(n)],
}
results = {}
for name, cmd in clients.items():
    measure(cmd(1))  # warm the page cache: both sides start from files already read once
    one = [measure(cmd(1)) for _ in range(5)]
    hundred = [measure(cmd(100)) for _ in range(3)]
    results[name] = {
        "one_turn_wall_s": statistics.median(r[0] for r in one),
        # Marginal: what a turn adds, start-up left out (a 100-turn run minus a 1-turn run, over 99).
        "cpu_per_turn_ms": 1000
        * (statistics.median(r[1] for r in hundred) - statistics.median(r[1] for r in one))
        / 99,
        "peak_rss_mib": max(r[2] for r in hundred),
    }
    print(name, results[name], file=sys.stderr)

py, rs = results["Python lllm 0.2.1"], results["lllm (Rust)"]
rows = [
    ("whole-process wall time, 1 turn", "one_turn_wall_s", "{:.3f} s", 300),
    ("marginal CPU time per turn ((100-turn − 1-turn) ÷ 99)", "cpu_per_turn_ms", "{:.3f} ms", 100),
    ("peak RSS, 100 turns", "peak_rss_mib", "{:.1f} MiB", 30),
]
lines = ["| measure | Python lllm 0.2.1 | lllm | ratio | goal |", "|---|---|---|---|---|"]
for label, key, fmt, goal in rows:
    ratio = py[key] / rs[key]
    lines.append(
        f"| {label} | {fmt.format(py[key])} | {fmt.format(rs[key])} | **{ratio:,.0f}×** | ≥{goal}× ({'met' if ratio >= goal else 'not met'}) |"
    )
table = "\n".join(lines)
print(table)


def chart(path):
    """A bar chart of the three ratios on a log scale, as SVG."""
    width, height, left, bar = 640, 220, 260, 28
    bars = []
    top = max(py[k] / rs[k] for _, k, _, _ in rows)
    import math

    scale = (width - left - 80) / math.log10(max(top, 10))
    for i, (label, key, _, goal) in enumerate(rows):
        ratio = py[key] / rs[key]
        y = 40 + i * 55
        length = max(2, scale * math.log10(max(ratio, 1)))
        goal_x = left + scale * math.log10(goal)
        bars.append(
            f'<text x="{left - 10}" y="{y + 19}" text-anchor="end" font-size="13">{label}</text>'
            f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar}" fill="#3b6fb6"/>'
            f'<text x="{left + length + 6:.1f}" y="{y + 19}" font-size="13">{ratio:,.0f}×</text>'
            f'<line x1="{goal_x:.1f}" x2="{goal_x:.1f}" y1="{y - 4}" y2="{y + bar + 4}" stroke="#c0392b" stroke-dasharray="3,2"/>'
        )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
        f'<text x="10" y="20" font-size="14" font-weight="bold">lllm vs Python lllm: how many times better (log scale; red: goal)</text>'
        + "".join(bars)
        + "</svg>\n"
    )
    with open(path, "w") as f:
        f.write(svg)


if write:
    os.makedirs("docs", exist_ok=True)
    chart("docs/bench_vs_python.svg")
    section = (
        "<!-- python:start -->\n"
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores), Linux, "
        f"Python {platform.python_version()}; command `scripts/bench_vs_python.sh --write`. Both clients run "
        "the same conversation against the same local stand-in server (`bench/src/bin/stub_server.rs`); the 1-turn "
        "time is the median of 5 whole-process runs, CPU and RSS of 3 runs of 100 turns.\n\n"
        f"{table}\n\n![ratios](docs/bench_vs_python.svg)\n<!-- python:end -->"
    )
    text = open("BENCHMARKS.md").read()
    text = re.sub(r"<!-- python:start -->.*<!-- python:end -->", lambda _: section, text, flags=re.S)
    open("BENCHMARKS.md", "w").write(text)
