"""The OpenAI Agents SDK (PyPI openai-agents) as a client of `lllm serve` (run by lllm-cli's
`serve_clients` tests).

Usage: python agents_sdk.py MODE BASE_URL MODEL TURNS
MODE says how the SDK keeps the conversation:
  session       the Chat Completions model with a SQLiteSession (resends the whole history);
  previous      the Responses model, each turn naming the last one's `previous_response_id`;
  conversation  the Responses model with a `conversation_id` (sends only the new input).
Prints "turn N: ANSWER" for each turn; the last turn of `session` is streamed.
"""

import asyncio
import sys

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

mode, base, model, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=base, api_key="not-needed", max_retries=0)


def agent(responses: bool) -> Agent:
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    return Agent(name="asker", instructions="Be brief.", model=kind(model=model, openai_client=client))


async def session() -> None:
    chat, memory = agent(False), SQLiteSession("agents-sdk-conversation")
    for turn in range(1, turns + 1):
        if turn < turns:
            result = await Runner.run(chat, f"question {turn}", session=memory)
        else:
            result = Runner.run_streamed(chat, f"question {turn}", session=memory)
            async for _ in result.stream_events():
                pass
        print(f"turn {turn}: {result.final_output}", flush=True)


async def previous() -> None:
    responses, last = agent(True), None
    for turn in range(1, turns + 1):
        result = await Runner.run(responses, f"question {turn}", previous_response_id=last)
        last = result.last_response_id
        print(f"turn {turn}: {result.final_output}", flush=True)


async def conversation() -> None:
    responses = agent(True)
    for turn in range(1, turns + 1):
        result = await Runner.run(responses, f"question {turn}", conversation_id="conv_agents_sdk")
        print(f"turn {turn}: {result.final_output}", flush=True)


asyncio.run({"session": session, "previous": previous, "conversation": conversation}[mode]())
