"""N turns of one dialog through Python lllm (lllm-core 0.2.1, native runtime, LiteLLM invoker): the
Python side of scripts/bench_vs_python.sh. Usage: python python_lllm_turns.py API_BASE N"""
import sys

from lllm.runtimes.native.core.agent import Agent
from lllm.runtimes.native.core.prompt import Prompt
from lllm.runtimes.native.invokers import build_invoker

api_base, turns = sys.argv[1], int(sys.argv[2])
agent = Agent(
    name="bench",
    system_prompt=Prompt(path="bench/system", prompt="You are a concise assistant."),
    model="hosted_vllm/stub",
    llm_invoker=build_invoker({"invoker": "litellm"}),
    model_args={"api_base": api_base, "api_key": "none", "max_tokens": 16},
)
agent.open("main")
last = None
for turn in range(turns):
    agent.receive(f"turn {turn}: say something short")
    last = agent.respond()
print(getattr(last, "content", last))
