"""The official OpenAI Python SDK as a client of `lllm serve` (run by lllm-cli's `serve` tests).

Usage: python openai_sdk.py BASE_URL MODEL
Each check prints one line "ok: ..." or raises. The stub behind the served tactic answers the
requests in order; the test script says what it answers.
"""

import sys

import openai

base, model = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key="not-needed", max_retries=0)
headers = {"thread-id": "sdk-conversation"}

ids = [m.id for m in client.models.list().data]
assert model in ids, ids
print("ok: models", ids)

chat = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": "one"}],
    extra_headers=headers,
)
assert chat.choices[0].message.content == "first answer", chat
assert chat.usage is not None and chat.usage.total_tokens >= 0
print("ok: chat", chat.choices[0].message.content)

stream = client.chat.completions.create(
    model=model,
    messages=[
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "two"},
    ],
    stream=True,
    stream_options={"include_usage": True},
    extra_headers=headers,
)
pieces, usage = [], None
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
    if chunk.usage is not None:
        usage = chunk.usage
assert "".join(pieces) == "second answer", pieces
assert usage is not None
print("ok: streamed chat", "".join(pieces))

raw = client.chat.completions.with_raw_response.create(
    model=model, messages=[{"role": "user", "content": "three"}], extra_headers=headers
)
assert raw.headers.get("x-lllm-session-id") == "sdk-conversation", raw.headers
assert raw.parse().choices[0].message.content == "third answer"
print("ok: session echoed")

first = client.responses.create(model=model, input="four", instructions="Be brief.")
assert first.output_text == "fourth answer", first
second = client.responses.create(model=model, input="five", previous_response_id=first.id)
assert second.output_text == "fifth answer", second
print("ok: responses with previous_response_id")

events = []
with client.responses.stream(model=model, input="six") as stream:
    for event in stream:
        events.append(event.type)
    final = stream.get_final_response()
assert final.output_text == "sixth answer", final
assert events[0] == "response.created" and "response.output_text.delta" in events, events
assert events[-1] == "response.completed", events
print("ok: streamed response", events)

try:
    client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    raise AssertionError("an unknown model was served")
except openai.NotFoundError as error:
    assert "no-such-model" in str(error)
print("ok: unknown model is NotFoundError")

try:
    client.chat.completions.create(model=model, messages=[])
    raise AssertionError("an empty conversation was served")
except openai.BadRequestError:
    pass
print("ok: bad request is BadRequestError")
