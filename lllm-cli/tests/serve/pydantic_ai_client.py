"""pydantic-ai (PyPI pydantic-ai-slim[openai]) as a client of `lllm serve` (run by lllm-cli's
`serve_clients` tests): its OpenAI chat model, each turn passing the last one's `message_history`
(the whole conversation is resent; no session header, no id).

Usage: python pydantic_ai_client.py BASE_URL MODEL TURNS
Prints "turn N: ANSWER" for each turn.
"""

import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base, model, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
chat = OpenAIChatModel(model, provider=OpenAIProvider(base_url=base, api_key="not-needed"))
asker = Agent(chat, instructions="Be brief.", retries=0)
history = None
for turn in range(1, turns + 1):
    result = asker.run_sync(f"question {turn}", message_history=history)
    history = result.all_messages()
    print(f"turn {turn}: {result.output}", flush=True)
