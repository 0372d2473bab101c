"""Memory of forks in Python lllm (lllm-core 0.2.1, native runtime): the Python side of
scripts/bench_subagents.sh. One agent's dialog of MESSAGES messages of the same text as
bench/src/bin/subagent_forks.rs, then FORKS forks of it with Agent.fork (Python lllm's only way to
branch a dialog, which deep-copies the messages), the resident set read before and after. Prints
one JSON object. Usage: python python_lllm_forks.py FORKS MESSAGES"""
import gc
import json
import sys

from lllm.runtimes.native.core.agent import Agent
from lllm.runtimes.native.core.prompt import Prompt
from lllm.runtimes.native.invokers import build_invoker


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS in /proc/self/status")


forks, messages = int(sys.argv[1]), int(sys.argv[2])
agent = Agent(
    name="lead",
    system_prompt=Prompt(
        path="bench/lead", prompt="You lead research. Start tasks for the slow parts."
    ),
    model="hosted_vllm/stub",
    llm_invoker=build_invoker({"invoker": "litellm"}),
    model_args={"api_base": "http://127.0.0.1:9", "api_key": "none"},
)
agent.open("main")
for i in range(messages):
    # The same text as the Rust side's dialog; Python lllm's dialog takes user messages from
    # `receive`, and the size of the history is what a fork copies.
    agent.receive(f"Turn {i}: " + "the module reads its settings and logs them. " * 11)
gc.collect()
before = rss()
for i in range(forks):
    agent.fork("main", f"child{i}", switch=False)
gc.collect()
after = rss()
print(
    json.dumps(
        {
            "forks": forks,
            "messages": messages,
            "version": "0.2.1",
            "per_fork_bytes": (after - before) / forks,
        }
    )
)
