"""pydantic-ai (PyPI pydantic-ai-slim[openai]) driving a served tactic with its own tool (run by
lllm-cli's `serve_clients` tests): the tactic's agent calls the tool, pydantic-ai runs it here and
sends the result back, and the tactic answers.

Usage: python caller_tools_pydantic.py BASE_URL MODEL
Prints "tool ran: ARGS" when the tool runs, then "answer: ANSWER".
"""

import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base, model_name = sys.argv[1], sys.argv[2]
chat = OpenAIChatModel(model_name, provider=OpenAIProvider(base_url=base, api_key="not-needed"))
asker = Agent(chat, instructions="Be brief.", retries=0)


@asker.tool_plain
def weather(city: str) -> str:
    """The weather in a city."""
    print(f"tool ran: {city}", flush=True)
    return f"sunny in {city}"


result = asker.run_sync("What is the weather in Paris?")
print(f"answer: {result.output}", flush=True)
