"""The OpenAI Agents SDK (PyPI openai-agents) driving a served tactic with its own `@function_tool`
(run by lllm-cli's `serve_clients` tests): the tactic's agent calls the tool, the SDK runs it here
and sends the result back, and the tactic answers.

Usage: python caller_tools_agents.py chat|responses BASE_URL MODEL
Prints "tool ran: ARGS" when the tool runs, then "answer: ANSWER".
"""

import asyncio
import sys

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

mode, base, model_name = sys.argv[1], sys.argv[2], sys.argv[3]
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=base, api_key="not-needed")


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    print(f"tool ran: {city}", flush=True)
    return f"sunny in {city}"


if mode == "chat":
    model = OpenAIChatCompletionsModel(model=model_name, openai_client=client)
else:
    model = OpenAIResponsesModel(model=model_name, openai_client=client)
agent = Agent(name="asker", instructions="Be brief.", model=model, tools=[weather])


async def main():
    result = await Runner.run(agent, "What is the weather in Paris?")
    print(f"answer: {result.final_output}", flush=True)


asyncio.run(main())
