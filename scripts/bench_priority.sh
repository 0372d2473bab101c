#!/usr/bin/env bash
# Priority under contention on NVIDIA Dynamo's router queue: waves of multi-agent tactics (a fan-out
# of three forks and a plan/critique/revise chain) against a closed loop of long untagged background
# requests, on one simulated worker at real-time speed (`--speedup-ratio 1 --max-num-seqs 4`) behind
# the frontend's router queue (`--router-queue-threshold 0.0`). Legs, each on a freshly started Dynamo:
# `none` (no priority), `uniform` (`priority: 10` on every agent), `auto` (`priority: auto`,
# interactive); then `none` and `auto` again with `--router-track-output-blocks` added to the
# frontend (the router then uses the `osl` hint); then `none`, `uniform` and `auto` again with the
# background carrying the same hints as the tactics (an `lllm batch` run of the same settings beside
# the interactive runs: `priority: 10` under `uniform`, a batch run's `priority: 1` and no
# `strict_priority` under `auto`). Prints, per leg, the tactics' makespan, the time to first token per
# request class, the background's throughput, reordered requests and errors. About 7 minutes.
#   scripts/bench_priority.sh [--write]
# --write puts the table into BENCHMARKS.md ("Priority under contention"). Dynamo listens on
# DYNAMO_PORT (default 18100, so that it can run beside the test suite's Dynamo on 18000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/servers/common.sh
write=0
for arg in "$@"; do
  case $arg in
    --write) write=1 ;;
    *) echo "usage: scripts/bench_priority.sh [--write]" >&2; exit 2 ;;
  esac
done
export DYNAMO_PORT=${DYNAMO_PORT:-18100}
started=$SECONDS
cargo build --release --quiet -p lllm-bench --bin priority
bin=${CARGO_TARGET_DIR:-target}/release/priority
work=$(mktemp -d)
trap 'scripts/servers/dynamo.sh down; rm -rf "$work"' EXIT

mock="--speedup-ratio 1 --max-num-seqs 4"
queue="--router-queue-threshold 0.0"
# setup:leg, in order; each leg gets a fresh Dynamo.
# `hinted`: the queue alone, the background carrying the leg's hints (LLLM_PRIORITY_BG_HINTS=1).
legs=(queue:none queue:uniform queue:auto tracking:none tracking:auto hinted:none hinted:uniform hinted:auto)
files=()
for entry in "${legs[@]}"; do
  setup=${entry%%:*} leg=${entry#*:}
  front=$queue
  [ "$setup" = tracking ] && front="$queue --router-track-output-blocks"
  say "leg $leg on Dynamo with $front"
  url=$(DYNAMO_WORKERS=1 MOCK_ARGS="$mock" FRONT_ARGS="$front" scripts/servers/dynamo.sh up)
  out=$work/$setup-$leg.json
  bg_hints=0
  [ "$setup" = hinted ] && bg_hints=1
  LLLM_DYNAMO_URL=$url LLLM_DYNAMO_LOG=$(scripts/servers/dynamo.sh log) LLLM_PRIORITY_LEG=$leg \
    LLLM_PRIORITY_SETUP="$front" LLLM_PRIORITY_BG_HINTS=$bg_hints "$bin" >"$out"
  cat "$out"
  files+=("$out")
done
scripts/servers/dynamo.sh down
elapsed=$((SECONDS - started))

python3 - "$write" "$elapsed" "$mock" "${files[@]}" <<'PY'
import json, os, platform, re, sys, time
write, elapsed, mock = sys.argv[1] == "1", int(sys.argv[2]), sys.argv[3]
legs = [json.load(open(f)) for f in sys.argv[4:]]
HINTED = "queue, background with the same hints"
setup_name = lambda d: (HINTED if d.get("background_hints") else
                        "queue + output tracking" if "track-output" in d["setup"] else "queue")
by = {(setup_name(d), d["leg"]): d for d in legs}
ms = lambda v: "–" if v is None else f"{v:,.0f}"
s = lambda v: "–" if v is None else f"{v:.1f}"
classes = ["lead", "fork", "join", "chain", "background"]

def ttft(d, c):
    t = d["ttft_ms"].get(c)
    return f"{ms(t['p50'])} / {ms(t['p90'])}" if t else "–"

def row(d):
    m, r = d["makespan_s"]["all"], d["reordered"]
    w, f = d["background_in_tactic_window"], d["background_in_fixed_window"]
    q = lambda p: " / ".join(ms(d["ttft_ms"].get(c, {}).get(p)) for c in classes)
    return [setup_name(d), f"`{d['leg']}`", f"{m['n']}/{d['workload']['tactic_runs']}", f"{s(m['p50'])} / {s(m['p90'])} s",
            q("p50"), q("p90"),
            f"{w['requests_per_s']:.2f} req/s, {w['output_tokens_per_s']:.0f} tok/s",
            f"{f['requests_per_s']:.2f} req/s, {f['output_tokens_per_s']:.0f} tok/s",
            f"{r['tactic_reordered']}/{r['tactic_requests']}, {r['background_reordered']}/{r['background_requests']}",
            str(d["errors"])]

header = ["Dynamo", "leg", "runs done", "tactic makespan p50 / p90", "TTFT p50, ms: lead / fork / join / chain / background",
          "TTFT p90, ms", "background while tactics ran", "background, fixed window", "reordered: tactic, background", "errors"]
rows = [row(d) for d in legs]

# The human table: one block per leg.
for d, r in zip(legs, rows):
    print(f"{r[0]:<38} {d['leg']:<8} runs {r[2]}, makespan p50/p90 {r[3]}, errors {r[-1]}")
    print("  TTFT p50/p90 ms: " + ", ".join(f"{c} {ttft(d, c)}" for c in classes))
    print(f"  background: {r[6]} while tactics ran ({d['background_in_tactic_window']['seconds']:.1f} s), "
          f"{r[7]} over the fixed {d['background_in_fixed_window']['seconds']:.0f} s")
    rr = d["reordered"]
    print(f"  reordered: {rr['tactic_reordered']}/{rr['tactic_requests']} tactic requests, "
          f"{rr['background_reordered']}/{rr['background_requests']} background requests "
          f"({rr['pairs_tactic_over_background']} tactic-over-background pairs, "
          f"{rr['pairs_background_over_tactic']} background-over-tactic)")
    if d["first_errors"]:
        print("  errors: " + "; ".join(d["first_errors"]))

def carried(d):
    return ", ".join(f"{c['kind']} ({c['priority']}, {c['strict_priority'] if c['strict_priority'] is not None else '–'})"
                     f" ×{c['requests']}" for c in d["carried"] if c["kind"] != "background")

def bg_carried(d):
    """The background's (priority, strict_priority) × requests, its osl aside; "none" if untagged."""
    n = {}
    for c in d["carried"]:
        if c["kind"] == "background":
            key = (c["priority"], c["strict_priority"])
            n[key] = n.get(key, 0) + c["requests"]
    if all(p is None and t is None for p, t in n):
        return "none"
    return ", ".join(f"({'–' if p is None else p}, {'–' if t is None else t}) ×{k}"
                     for (p, t), k in sorted(n.items(), key=str))

auto, none, uniform = by.get(("queue", "auto")), by.get(("queue", "none")), by.get(("queue", "uniform"))
if auto:
    print("auto leg, (kind, priority, strict_priority) carried: " + carried(auto))
for d in legs:
    print(f"{setup_name(d)}, {d['leg']}: background carried (priority, strict_priority) {bg_carried(d)}")

conclusion = []
if auto and none:
    ratio = none["makespan_s"]["all"]["p50"] / auto["makespan_s"]["all"]["p50"]
    tw = auto["background_in_tactic_window"]["output_tokens_per_s"] / none["background_in_tactic_window"]["output_tokens_per_s"] - 1
    fw = auto["background_in_fixed_window"]["output_tokens_per_s"] / none["background_in_fixed_window"]["output_tokens_per_s"] - 1
    met = ratio >= 1.5 and abs(tw) <= 0.15
    conclusion.append(
        f"`auto` against `none`: tactic makespan p50 **{ratio:.2f}× shorter** "
        f"({s(none['makespan_s']['all']['p50'])} s → {s(auto['makespan_s']['all']['p50'])} s); background output "
        f"throughput {tw * 100:+.1f} % while the tactics ran, {fw * 100:+.1f} % over the fixed window. "
        f"Goal (≥ 1.5× with the background within 15 %): {'met' if met else 'not met'}.")
if auto and uniform:
    ra = auto["makespan_s"]["all"]["p50"] / uniform["makespan_s"]["all"]["p50"]
    line = (f"`uniform` (`priority: 10` on every agent): makespan p50 {s(uniform['makespan_s']['all']['p50'])} s, "
            f"`auto` {s(auto['makespan_s']['all']['p50'])} s (auto's is {ra:.2f}× uniform's).")
    if abs(ra - 1) <= 0.15:
        line += (" `auto` ties `uniform` here: the gain comes from jumping the background queue, which both do "
                 "(`auto` by the `strict_priority: 1` tier, `uniform` by a head start of 10 s under the `fcfs` "
                 f"policy, more than `none`'s waits of about {s(none['ttft_ms']['background']['p50'] / 1e3) if none else '–'} s); "
                 "the weights only order tactic requests among themselves, which are short and few at a time, "
                 "and across runs they favour starting runs (lead 5, plan 3) over finishing ones (join and revise 1): "
                 f"join TTFT p50 {ms(auto['ttft_ms']['join']['p50'])} ms under `auto` against "
                 f"{ms(uniform['ttft_ms']['join']['p50'])} ms under `uniform`, which does not shorten the median run.")
    conclusion.append(line)
ta, tn = by.get(("queue + output tracking", "auto")), by.get(("queue + output tracking", "none"))
if ta and tn and auto and none:
    ca = ta["makespan_s"]["all"]["p50"] / auto["makespan_s"]["all"]["p50"] - 1
    cn = tn["makespan_s"]["all"]["p50"] / none["makespan_s"]["all"]["p50"] - 1
    ct = (ta["background_in_fixed_window"]["output_tokens_per_s"] / auto["background_in_fixed_window"]["output_tokens_per_s"] - 1)
    line = (f"With `--router-track-output-blocks` (the router then tracks output blocks, which the `osl` every leg sends "
            f"shapes): makespan p50 `none` {s(tn['makespan_s']['all']['p50'])} s ({cn * 100:+.0f} %), `auto` "
            f"{s(ta['makespan_s']['all']['p50'])} s ({ca * 100:+.0f} %), background throughput {ct * 100:+.1f} % for `auto`.")
    if abs(ca) <= 0.15 and abs(cn) <= 0.15:
        line += (" `osl` changes nothing measurable here: with one worker the router has no choice of worker to make with "
                 "the load it predicts, and the queue's threshold is a fraction of the worker's prefill-token capacity "
                 "(`max_num_batched_tokens`), not of its KV blocks.")
    conclusion.append(line)
hn, hu, ha = (by.get((HINTED, leg)) for leg in ("none", "uniform", "auto"))
if hn and hu and ha:
    p50 = lambda d: d["makespan_s"]["all"]["p50"]
    tput = lambda d: d["background_in_fixed_window"]["output_tokens_per_s"]
    ru = p50(hu) / p50(ha)
    line = (f"With the background carrying the same hints (an `lllm batch` run of the same settings beside the "
            f"interactive runs): tactic makespan p50 `none` {s(p50(hn))} s, `uniform` {s(p50(hu))} s, `auto` "
            f"{s(p50(ha))} s, so `auto`'s is **{ru:.2f}× shorter** than `uniform`'s"
            + (f" (against an untagged background: `uniform` {s(p50(uniform))} s, `auto` {s(p50(auto))} s)"
               if uniform and auto else "")
            + f"; background output throughput over the fixed window {(tput(hu) / tput(hn) - 1) * 100:+.1f} % "
            f"under `uniform` and {(tput(ha) / tput(hn) - 1) * 100:+.1f} % under `auto`, against `none`.")
    if ru >= 1.5 and abs(p50(hu) / p50(hn) - 1) <= 0.25:
        line += (" A written number separates nothing when the background writes it too: every request carries "
                 "`priority: 10`, the same head start, so the tactics wait behind the background in arrival "
                 "order as under `none`. `auto` keeps its gain because the class, not the number, separates "
                 "them: the interactive runs' requests are in the `strict_priority: 1` tier, and the batch run's "
                 "send only their weight (`priority: 1`) with no tier, so the router queue serves every waiting "
                 "tactic request before any background request.")
    conclusion.append(line)
for line in conclusion:
    print(line)
print(f"took {elapsed} s")

if write:
    w = legs[0]["workload"]
    table = ("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n"
             + "\n".join("| " + " | ".join(r) + " |" for r in rows))
    section = (
        "<!-- priority:start -->\n"
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores), NVIDIA Dynamo 1.6.1; "
        f"command `scripts/bench_priority.sh --write` ({elapsed // 60} min {elapsed % 60} s). One simulated worker "
        f"(`{mock}`: real-time speed, four sequences at a time) behind the frontend's router queue "
        "(`--router-queue-threshold 0.0`), started afresh for each leg. Background: a closed loop of "
        f"{w['background_clients']} clients sending, back to back and without any hint, prompts of "
        f"{w['background_prompt_words']:,} fresh random words with `max_tokens` {w['background_max_tokens'][0]}–"
        f"{w['background_max_tokens'][1]}, so that requests always wait in the router queue; it warms up "
        f"{w['warmup_s']:.0f} s, then runs through the tactics. Tactics: {w['waves']} waves, {w['wave_gap_s']:.0f} s "
        f"apart, of {w['runs_per_wave']} concurrent `steps` runs started {w['stagger_ms']} ms apart, alternately a "
        "fan-out (lead turn, three forks of its dialog in `parallel`, a join that reads their answers) and a "
        f"chain (plan, critique by a second agent, revise), `max_tokens` {w['tactic_max_tokens']}, each run with its own "
        "team and session prefix, all with `profile: dynamo` (so `osl` is sent); the legs differ only in "
        "`priority`. Makespan: a run's start to its answer. TTFT: the frontend's `ttft_ms` for each "
        "request (the simulated engine streams no text, so no client-side first piece arrives). "
        "Background throughput: completed background requests and their output tokens per second, inside "
        "the window in which tactics ran, and inside the same fixed "
        f"{w['fixed_window_s']:.0f} s window from the first tactic's start in every leg. Reordered: requests "
        "whose first token came before that of some request sent at least 10 ms earlier, which was then still "
        "waiting (tactic requests of all kinds, then background requests). The last three rows (\"queue, "
        "background with the same hints\") rerun `none`, `uniform` and `auto` with the background carrying the "
        "hints the tactics' agents carry in that leg, as an `lllm batch` run of the same settings beside the "
        "interactive runs (`profile: dynamo`, its own session prefix, each request a lone request of a batch "
        "run): nothing under `none`, `priority: 10` under `uniform`, the batch class's `priority: 1` (the "
        "weight of a lone request) and no `strict_priority` under `auto`.\n\n" + table + "\n\n")
    if auto:
        section += ("What the `auto` leg's tactic requests carried, as (kind, `priority`, `strict_priority`) × "
                    f"requests: {carried(auto)}; background requests carried none")
        if hu and ha:
            section += (f"; with the same hints, as (`priority`, `strict_priority`) × requests, {bg_carried(hu)} "
                        f"under `uniform` and {bg_carried(ha)} under `auto`")
        section += ".\n\n"
    section += " ".join(conclusion) + "\n<!-- priority:end -->"
    text = open("BENCHMARKS.md").read()
    if "<!-- priority:start -->" not in text:
        text = text.rstrip("\n") + "\n\n## Priority under contention\n\n<!-- priority:start -->\n<!-- priority:end -->\n"
    text = re.sub(r"<!-- priority:start -->.*<!-- priority:end -->", lambda _: section, text, flags=re.S)
    open("BENCHMARKS.md", "w").write(text)
PY
