#!/usr/bin/env python3
"""Replays an agentic trace (Dynamo's `dynamo.agentic_mooncake` version-2 JSONL, as lllm writes it) in
NVIDIA Dynamo 1.6.1's offline simulator: simulated vLLM engines ("mocker"), Dynamo's KV-aware router or
round robin, simulated time (a run takes well under a second; no server, no GPU, no network).

Usage: python3 scripts/replay_agentic.py TRACE.jsonl [--router kv_router|round_robin|both] [--workers N]
                                         [--check] [--json] [--lanes N] [--timing polynomial|fixed]
                                         [--kv-blocks N] [--tolerance-ms MS]

Runs with the Python of the Dynamo virtualenv that scripts/servers/dynamo.sh installs
(${LLLM_CACHE_DIR:-~/.cache/lllm}/dynamo/venv); started with another Python it re-executes itself there.

The trace is first checked against the format's rules (the same rules, and mostly the same messages, as
the simulator's loader, aisimulate-core 0.13.0 `AgenticTraceBuilder`), which names the offending field
where the simulator would only say "failed to parse line N".

--check: exits 1 unless every request of the trace completed, every trajectory (play) completed, and
every request was dispatched no earlier than each dependency's trigger time (the dependency's dispatch
or completion) plus its delay_ms, and no earlier than its not_before_ms (shifted, as the simulator
does, so that the smallest not_before_ms of the trace is 0; not checked with --lanes, which re-bases
each play). The simulator's clock is a float of milliseconds (no ticks), so the tolerance is tiny.

Exit status: 0 fine, 1 a --check failed, 2 bad input (no file, bad trace, no Dynamo).
"""

import argparse
import json
import math
import os
import sys
import time

SCHEMA = "dynamo.agentic_mooncake"
VERSION = 2
TRIGGERS = ("dispatch", "completion")
RELATIONS = ("sequence", "spawn", "join", "replay_barrier")
# Relations other than spawn must be triggered by completion (aisimulate AgenticTraceBuilder::push).
COMPLETION_ONLY = ("sequence", "join", "replay_barrier")
U64_MAX = 2**64 - 1


def die(message, status=2):
    print(f"replay_agentic: {message}", file=sys.stderr)
    sys.exit(status)


# --- finding Dynamo ---------------------------------------------------------------------------------


def venv_python():
    cache = os.environ.get("LLLM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lllm")
    return os.path.join(cache, "dynamo", "venv", "bin", "python")


def import_dynamo():
    """Returns run_trace_replay, re-executing this script with the Dynamo venv's Python if needed."""
    os.environ.setdefault("DYN_LOG", "warn")  # the simulator logs every routing decision at info
    try:
        from dynamo.replay.api import run_trace_replay
        return run_trace_replay
    except ImportError as error:
        python = venv_python()
        if os.environ.get("LLLM_REPLAY_REEXEC") != "1" and os.access(python, os.X_OK):
            os.environ["LLLM_REPLAY_REEXEC"] = "1"
            os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
        hint = (f"{python} exists but cannot import it either ({error})" if os.access(python, os.X_OK)
                else f"there is no Dynamo virtualenv at {os.path.dirname(os.path.dirname(python))}; "
                     "install it once with: scripts/servers/dynamo.sh up && scripts/servers/dynamo.sh down")
        die(f"cannot import dynamo.replay ({error}); {hint}")


# --- loading and validating the trace ---------------------------------------------------------------


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def nonempty_str(value):
    return isinstance(value, str) and value.strip() != ""


def load_trace(path):
    """Returns (header, rows) where each row carries its 1-based line number under "_line"; dies with
    every problem found (line numbers count the header as line 1, like the simulator's messages)."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        die(f"no such trace file: {path}")
    except (OSError, UnicodeDecodeError) as error:
        die(f"cannot read trace file {path}: {error}")

    errors = []
    header, rows = None, []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            errors.append(f"line {number}: not JSON ({error.msg} at column {error.colno})")
            if header is None:
                break
            continue
        if not isinstance(value, dict):
            errors.append(f"line {number}: a JSON object is expected, got {type(value).__name__}")
            if header is None:
                break
            continue
        if header is None:
            header = value
            errors += [f"line {number} (header): {e}" for e in header_errors(value)]
            if errors:
                break
            continue
        value["_line"] = number
        rows.append(value)
    if header is None and not errors:
        errors.append("the file is empty: it needs the version-2 header line and at least one request")
    elif header is not None and not rows and not errors:
        errors.append("the trace has a header but no requests")
    if not errors:
        errors += graph_errors(header, rows)
    if errors:
        shown = errors[:20] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])
        die(f"{path} is not a valid {SCHEMA} v{VERSION} trace:\n  " + "\n  ".join(shown))
    return header, rows


def header_errors(header):
    errors = []
    for key in ("schema", "version", "block_size", "hash_id_scope", "source"):
        if key not in header:
            errors.append(f"missing required key {key!r}")
    if "schema" in header and header["schema"] != SCHEMA:
        errors.append(f"schema is {header['schema']!r}; expected {SCHEMA!r}")
    if "version" in header and header["version"] != VERSION:
        errors.append(f"version is {header['version']!r}; expected {VERSION}")
    if "block_size" in header and not (is_int(header["block_size"]) and header["block_size"] > 0):
        errors.append(f"block_size must be a positive integer, got {header['block_size']!r}")
    if "hash_id_scope" in header and header["hash_id_scope"] != "local":
        errors.append(f"hash_id_scope must be \"local\" (the only scope), got {header['hash_id_scope']!r}")
    source = header.get("source")
    if "source" in header and not (isinstance(source, dict) and nonempty_str(source.get("format"))
                                   and nonempty_str(source.get("digest"))):
        errors.append("source must be an object with nonempty string \"format\" and \"digest\"")
    return errors


def row_errors(row, block_size):
    where = f"line {row['_line']}"
    errors = []
    for key in ("request_id", "play_id", "session_id", "model"):
        if key not in row:
            errors.append(f"{where}: missing required key {key!r}")
        elif not nonempty_str(row[key]):
            errors.append(f"{where}: {key} must be a nonempty string, got {row[key]!r}")
    for name, alias in (("input_length", "input_tokens"), ("output_length", "output_tokens")):
        if name in row and alias in row:
            errors.append(f"{where}: both {name} and its alias {alias} are set")
    input_length = row.get("input_length", row.get("input_tokens"))
    output_length = row.get("output_length", row.get("output_tokens"))
    if input_length is None:
        errors.append(f"{where}: missing required key 'input_length'")
    elif not (is_int(input_length) and input_length > 0):
        errors.append(f"{where}: input_length must be a positive integer, got {input_length!r}")
    if output_length is None:
        errors.append(f"{where}: missing required key 'output_length'")
    elif not (is_int(output_length) and output_length >= 0):
        errors.append(f"{where}: output_length must be a nonnegative integer, got {output_length!r}")
    hash_ids = row.get("hash_ids")
    if hash_ids is None:
        errors.append(f"{where}: missing required key 'hash_ids'")
    elif not (isinstance(hash_ids, list) and hash_ids
              and all(is_int(h) and 0 <= h <= U64_MAX for h in hash_ids)):
        errors.append(f"{where}: hash_ids must be a nonempty list of integers in [0, 2^64)")
    elif is_int(input_length) and input_length > 0:
        needed = -(-input_length // block_size)
        if len(hash_ids) != needed:
            errors.append(f"{where}: input_length {input_length} at block_size {block_size} requires "
                          f"exactly {needed} hash_ids, got {len(hash_ids)}")
    token_ids = row.get("output_token_ids")
    if token_ids is not None and (not isinstance(token_ids, list) or len(token_ids) != output_length):
        errors.append(f"{where}: output_token_ids must be a list of output_length token ids")
    if "not_before_ms" not in row:
        errors.append(f"{where}: missing required key 'not_before_ms'")
    elif not (is_number(row["not_before_ms"]) and row["not_before_ms"] >= 0):
        errors.append(f"{where}: not_before_ms must be a finite number >= 0, got {row['not_before_ms']!r}")
    dependencies = row.get("dependencies", [])
    if not isinstance(dependencies, list):
        errors.append(f"{where}: dependencies must be a list")
        return errors
    for index, dep in enumerate(dependencies):
        at = f"{where}: dependencies[{index}]"
        if not isinstance(dep, dict):
            errors.append(f"{at} must be an object")
            continue
        for key in ("request_id", "trigger", "delay_ms", "relation"):
            if key not in dep:
                errors.append(f"{at}: missing required key {key!r}")
        if "request_id" in dep and not nonempty_str(dep["request_id"]):
            errors.append(f"{at}: request_id must be a nonempty string")
        if "trigger" in dep and dep["trigger"] not in TRIGGERS:
            errors.append(f"{at}: trigger must be one of {', '.join(TRIGGERS)}; got {dep['trigger']!r}")
        if "relation" in dep and dep["relation"] not in RELATIONS:
            errors.append(f"{at}: relation must be one of {', '.join(RELATIONS)}; got {dep['relation']!r}")
        if "delay_ms" in dep and not (is_number(dep["delay_ms"]) and dep["delay_ms"] >= 0):
            errors.append(f"{at}: delay_ms must be a finite number >= 0, got {dep['delay_ms']!r}")
        if dep.get("relation") in COMPLETION_ONLY and dep.get("trigger") == "dispatch":
            errors.append(f"{at}: a {dep['relation']} dependency must use trigger \"completion\" "
                          "(only spawn may use \"dispatch\")")
    return errors


def graph_errors(header, rows):
    errors = []
    for row in rows:
        errors += row_errors(row, header["block_size"])
    if errors:
        return errors
    by_id = {}
    for row in rows:
        if row["request_id"] in by_id:
            errors.append(f"line {row['_line']}: duplicates request_id {row['request_id']} "
                          f"(first on line {by_id[row['request_id']]['_line']})")
        else:
            by_id[row["request_id"]] = row
    for row in rows:
        for dep in row.get("dependencies", []):
            source = by_id.get(dep["request_id"])
            if source is None:
                errors.append(f"line {row['_line']}: request {row['request_id']} references unknown "
                              f"request_id {dep['request_id']}")
            elif source is row:
                errors.append(f"line {row['_line']}: request {row['request_id']} cannot depend on itself")
            elif source["play_id"] != row["play_id"]:
                errors.append(f"line {row['_line']}: request {row['request_id']} in play {row['play_id']} "
                              f"depends on request {source['request_id']} in play {source['play_id']} "
                              "(dependencies must stay inside one play)")
    # Optional source_play_ordinal (orders plays for --lanes; otherwise plays go in play_id order).
    ordinals = {}
    for row in rows:
        ordinal = row.get("source_play_ordinal")
        if ordinal is not None and not (is_int(ordinal) and ordinal >= 0):
            errors.append(f"line {row['_line']}: source_play_ordinal must be a nonnegative integer")
        ordinals.setdefault(row["play_id"], set()).add(ordinal)
    if not errors and any(o != {None} for o in ordinals.values()):
        if any(len(o) != 1 for o in ordinals.values()):
            errors.append("source_play_ordinal must be the same on every request of a play")
        elif any(o == {None} for o in ordinals.values()):
            errors.append("source_play_ordinal must be set for every play when it is used")
        elif sorted(next(iter(o)) for o in ordinals.values()) != list(range(len(ordinals))):
            errors.append("source_play_ordinal values must be unique and contiguous from 0")
    if errors:
        return errors
    # Kahn's algorithm, as the simulator's validate_agentic_trace_is_acyclic.
    remaining = {rid: len(row.get("dependencies", [])) for rid, row in by_id.items()}
    dependents = {rid: [] for rid in by_id}
    for rid, row in by_id.items():
        for dep in row.get("dependencies", []):
            dependents[dep["request_id"]].append(rid)
    ready = [rid for rid, count in remaining.items() if count == 0]
    while ready:
        for target in dependents[ready.pop()]:
            remaining[target] -= 1
            if remaining[target] == 0:
                ready.append(target)
    blocked = sorted(rid for rid, count in remaining.items() if count > 0)
    if blocked:
        errors.append(f"cycle detected among {len(blocked)} requests; blocked request IDs: "
                      + ", ".join(blocked[:8]) + (" ..." if len(blocked) > 8 else ""))
    return errors


# --- running ---------------------------------------------------------------------------------------


def engine_args(block_size, kv_blocks, timing):
    timing_model = ({"type": "fixed", "prefill_ms": 1.0, "decode_ms": 1.0} if timing == "fixed"
                    else {"type": "polynomial"})
    # The mocker's defaults otherwise: vLLM scheduler, prefix caching and chunked prefill on,
    # max_num_seqs 256, max_num_batched_tokens 8192, speedup 1 (times are the modeled engine's).
    return {"engine": {"backend": "vllm", "block_size": block_size, "num_gpu_blocks": kv_blocks,
                       "enable_prefix_caching": True, "timing_model": timing_model}}


def percentile_pair(summary, p50_key, p90_key):
    return {"p50": summary.get(p50_key), "p90": summary.get(p90_key)}


def run_mode(run_trace_replay, path, header, rows, mode, args, target_model):
    started = time.monotonic()
    try:
        report = run_trace_replay(
            path, trace_format="agentic_mooncake", execution_model=target_model,
            extra_engine_args=engine_args(header["block_size"], args.kv_blocks, args.timing),
            num_workers=args.workers, router_mode=mode, agentic_lanes=args.lanes,
            capture_per_request=True)
    except Exception as error:  # the simulator raises a bare Exception with the loader's message
        die(f"the simulator rejected {path} ({mode}): {error}")
    wall = time.monotonic() - started
    summary = report.summary
    records = report.per_request or []
    completed = [r for r in records if r.get("terminal_status") == "completed"]
    input_tokens = sum(r.get("input_length") or 0 for r in records)
    reused = sum(r.get("reused_input_tokens") or 0 for r in records)
    makespan = (max(r["terminal_time_ms"] for r in records) - min(r["dispatched_at_ms"] for r in records)
                if records else None)
    result = {
        "router_mode": mode,
        "wall_time_s": round(wall, 4),
        "requests_total": len(rows),
        "requests_dispatched": len(records),
        "requests_completed": len(completed),
        "trajectories_total": summary.get("total_trajectories"),
        "trajectories_completed": summary.get("completed_trajectories"),
        "ttft_ms": percentile_pair(summary, "median_ttft_ms", "p90_ttft_ms"),
        "e2e_ms": percentile_pair(summary, "median_e2e_latency_ms", "p90_e2e_latency_ms"),
        "trajectory_e2e_ms": percentile_pair(summary, "p50_trajectory_e2e_latency_ms",
                                             "p90_trajectory_e2e_latency_ms"),
        "makespan_ms": makespan,
        "prefix_cache_reused_ratio": summary.get("prefix_cache_reused_ratio"),
        "reused_input_tokens": reused,
        "input_tokens": input_tokens,
        "play_outcomes": summary.get("agentic_play_outcomes", []),
        "requests": [{
            "request_id": r.get("request_id"), "play_id": r.get("play_id"),
            "session_id": r.get("session_id"), "status": r.get("terminal_status"),
            "arrival_ms": r.get("arrival_time_ms"), "dispatched_ms": r.get("dispatched_at_ms"),
            "first_token_ms": r.get("first_token_ms"), "completed_ms": r.get("terminal_time_ms"),
            "ttft_ms": r.get("ttft_ms"), "e2e_ms": r.get("e2e_latency_ms"),
            "input_length": r.get("input_length"), "reused_input_tokens": r.get("reused_input_tokens"),
            "worker": r.get("decode_worker_idx"),
        } for r in sorted(records, key=lambda r: (r.get("dispatched_at_ms", 0), r.get("request_id", "")))],
    }
    return result, summary, records


# --- checking --------------------------------------------------------------------------------------


def check_run(rows, summary, records, tolerance_ms, lanes=None):
    """Returns a list of failures (empty when the run is sound). `records` are the report's per-request
    records (report.per_request): request_id is the trace's request_id; dispatched_at_ms is when the
    workload driver released the request (the "dispatch" trigger fires then), terminal_time_ms with
    terminal_status "completed" is when the "completion" trigger fires."""
    failures = []
    by_id = {}
    for record in records:
        rid = record.get("request_id")
        if rid in by_id:
            failures.append(f"the report has two records for request {rid}")
        by_id[rid] = record
    trace_ids = {row["request_id"] for row in rows}
    for rid in sorted(set(by_id) - trace_ids, key=str):
        failures.append(f"the report has a record for {rid}, which is not in the trace")

    not_dispatched = [row["request_id"] for row in rows if row["request_id"] not in by_id]
    if not_dispatched:
        failures.append(f"{len(not_dispatched)} of {len(rows)} requests were never dispatched "
                        f"(skipped after a failure in their play): {', '.join(not_dispatched[:10])}")
    for row in rows:
        record = by_id.get(row["request_id"])
        if record is not None and record.get("terminal_status") != "completed":
            failures.append(f"request {row['request_id']} ended {record.get('terminal_status')!r}, "
                            "not completed")

    plays = sorted({row["play_id"] for row in rows})
    total, done = summary.get("total_trajectories"), summary.get("completed_trajectories")
    if total != len(plays) or done != len(plays):
        failures.append(f"trajectories: {done} of {total} completed; the trace has {len(plays)} plays")
    outcomes = {o.get("play_id"): o for o in summary.get("agentic_play_outcomes", [])}
    for play in plays:
        outcome = outcomes.get(play)
        if outcome is None:
            failures.append(f"play {play}: no outcome in the report")
        elif outcome.get("status") != "completed":
            detail = ""
            if outcome.get("failure_request_id"):
                detail = (f" (request {outcome['failure_request_id']} "
                          f"{outcome.get('failure_status', 'failed')})")
            failures.append(f"play {play}: {outcome.get('status')}{detail}")

    min_not_before = min(row["not_before_ms"] for row in rows)
    for row in rows:
        record = by_id.get(row["request_id"])
        if record is None:
            continue
        dispatched = record.get("dispatched_at_ms")
        if not is_number(dispatched):
            failures.append(f"request {row['request_id']}: no dispatched_at_ms in its record")
            continue
        arrival = record.get("arrival_time_ms")
        if is_number(arrival) and arrival > dispatched + tolerance_ms:
            failures.append(f"request {row['request_id']}: arrival {arrival:.3f} ms after its dispatch "
                            f"{dispatched:.3f} ms")
        if lanes is None:
            floor = row["not_before_ms"] - min_not_before
            if dispatched + tolerance_ms < floor:
                failures.append(f"request {row['request_id']}: dispatched at {dispatched:.3f} ms, before "
                                f"its not_before_ms {row['not_before_ms']} (= {floor:.3f} ms after the "
                                "trace's start)")
        for dep in row.get("dependencies", []):
            source = by_id.get(dep["request_id"])
            edge = f"{dep['request_id']} -[{dep['relation']}/{dep['trigger']}+{dep['delay_ms']}ms]-> " \
                   f"{row['request_id']}"
            if source is None:
                failures.append(f"{edge}: the dependency has no record, yet the request was dispatched")
                continue
            if dep["trigger"] == "completion":
                if source.get("terminal_status") != "completed":
                    failures.append(f"{edge}: the dependency ended {source.get('terminal_status')!r}, "
                                    "yet the request was dispatched")
                    continue
                trigger_ms = source.get("terminal_time_ms")
            else:
                trigger_ms = source.get("dispatched_at_ms")
            if not is_number(trigger_ms):
                failures.append(f"{edge}: the dependency's record has no {dep['trigger']} time")
                continue
            earliest = trigger_ms + dep["delay_ms"]
            if dispatched + tolerance_ms < earliest:
                failures.append(f"{edge}: dispatched at {dispatched:.3f} ms, {earliest - dispatched:.3f} ms "
                                f"before {dep['trigger']} ({trigger_ms:.3f} ms) + delay")
    return failures


# --- output ----------------------------------------------------------------------------------------


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_run(result, failures, checked, lanes):
    r = result
    ratio = r["prefix_cache_reused_ratio"]
    print(f"[{r['router_mode']}] requests {r['requests_completed']}/{r['requests_total']} completed"
          + (f" ({r['requests_total'] - r['requests_dispatched']} never dispatched)"
             if r["requests_dispatched"] < r["requests_total"] else "")
          + f", trajectories {r['trajectories_completed']}/{r['trajectories_total']} completed,"
          f" makespan {fmt(r['makespan_ms'])} ms  (replay took {r['wall_time_s']:.3f} s)")
    print(f"  TTFT p50 {fmt(r['ttft_ms']['p50'])} / p90 {fmt(r['ttft_ms']['p90'])} ms;"
          f" request e2e p50 {fmt(r['e2e_ms']['p50'])} / p90 {fmt(r['e2e_ms']['p90'])} ms;"
          f" trajectory e2e p50 {fmt(r['trajectory_e2e_ms']['p50'])} /"
          f" p90 {fmt(r['trajectory_e2e_ms']['p90'])} ms")
    print(f"  prefix cache: {r['reused_input_tokens']} of {r['input_tokens']} input tokens reused"
          f" ({fmt(None if ratio is None else 100 * ratio)}%)")
    if checked:
        if failures:
            print(f"  check: FAILED ({len(failures)} problems)")
            for failure in failures[:25]:
                print(f"    - {failure}")
            if len(failures) > 25:
                print(f"    ... and {len(failures) - 25} more")
        else:
            print("  check: ok (all requests and trajectories completed; every dispatch honours its "
                  "dependencies' trigger + delay_ms" + (")" if lanes else " and its not_before_ms)"))


def main():
    parser = argparse.ArgumentParser(
        description="Replay a dynamo.agentic_mooncake v2 trace in Dynamo's offline simulator.")
    parser.add_argument("trace", help="the trace (JSONL: the v2 header line, then one request a line)")
    parser.add_argument("--router", choices=("kv_router", "round_robin", "both"), default="both",
                        help="router mode(s) to simulate (default both)")
    parser.add_argument("--workers", type=int, default=2, help="simulated engines (default 2)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless all requests and plays completed and dependencies held")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--lanes", type=int, default=None,
                        help="agentic_lanes: run plays N at a time, each re-based to start when its lane "
                             "frees (default: every play at its own not_before_ms)")
    parser.add_argument("--timing", choices=("polynomial", "fixed"), default="polynomial",
                        help="engine timing model: the mocker's default polynomial (prefill cost grows "
                             "with uncached tokens), or fixed 1 ms per prefill / decode step like "
                             "Dynamo's end-to-end test configs")
    parser.add_argument("--kv-blocks", type=int, default=4096,
                        help="KV-cache blocks per engine, of the trace's block_size tokens (default 4096)")
    parser.add_argument("--tolerance-ms", type=float, default=0.001,
                        help="slack for the --check timing comparisons (default 0.001 ms)")
    args = parser.parse_args()
    if args.workers < 1:
        die("--workers must be at least 1")
    if args.lanes is not None and args.lanes < 1:
        die("--lanes must be at least 1")
    if args.kv_blocks < 1:
        die("--kv-blocks must be at least 1")

    header, rows = load_trace(args.trace)  # before importing Dynamo: bad input fails fast and clearly
    run_trace_replay = import_dynamo()
    models = sorted({row["model"] for row in rows})
    # The simulator replays every request on one configured model whatever the rows' model says
    # (policy project_to_configured_target); the name is only a label in the report.
    target_model = models[0] if len(models) == 1 else "lllm-replay-target"
    modes = ("kv_router", "round_robin") if args.router == "both" else (args.router,)

    plays = sorted({row["play_id"] for row in rows})
    edges = sum(len(row.get("dependencies", [])) for row in rows)
    out = {"trace": {"path": args.trace, "requests": len(rows), "plays": len(plays), "edges": edges,
                     "block_size": header["block_size"], "models": models,
                     "source": header.get("source")},
           "engine": {"workers": args.workers, "backend": "vllm (mocker)", "timing": args.timing,
                      "kv_blocks": args.kv_blocks, "block_size": header["block_size"],
                      "agentic_lanes": args.lanes},
           "runs": []}
    ok = True
    if not args.json:
        print(f"trace {args.trace}: {len(rows)} requests, {len(plays)} play{'s' * (len(plays) != 1)}, "
              f"{edges} dependencies, "
              f"block_size {header['block_size']}, models {', '.join(models)}")
        print(f"engine: {args.workers} simulated vLLM workers, {args.timing} timing, {args.kv_blocks} KV "
              f"blocks each" + (f", {args.lanes} agentic lanes" if args.lanes else ""))
    for mode in modes:
        result, summary, records = run_mode(run_trace_replay, args.trace, header, rows, mode, args,
                                            target_model)
        failures = check_run(rows, summary, records, args.tolerance_ms, args.lanes) if args.check else []
        if args.check:
            result["check"] = {"ok": not failures, "failures": failures}
            ok = ok and not failures
        out["runs"].append(result)
        if not args.json:
            print_run(result, failures, args.check, args.lanes)
    if args.json:
        out["ok"] = ok
        print(json.dumps(out, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
