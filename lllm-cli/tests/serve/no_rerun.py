"""The official OpenAI Python SDK, with its default retries, against tactics that fail (run by
lllm-cli's `serve_retry` test).

Usage: python no_rerun.py BASE_URL
A run that failed after lllm's own retries must not be run again by the SDK: one call, one HTTP
request to lllm serve. An overloaded server downstream keeps the SDK's retry. lllm serve's run
list (every chat completion and response it answered, kept in memory) counts the requests it got.
Each check prints one line "ok: ..." or raises.
"""

import json
import sys
import urllib.request

import openai

base = sys.argv[1]


def runs():
    with urllib.request.urlopen(base + "/runs") as answer:
        return json.load(answer)["data"]


client = openai.OpenAI(base_url=base, api_key="not-needed")  # the default: 2 retries
assert client.max_retries == 2, client.max_retries

try:
    client.chat.completions.create(model="failing", messages=[{"role": "user", "content": "go"}])
    raise AssertionError("a failed run answered")
except openai.InternalServerError as error:
    assert error.status_code == 502, error
    assert error.response.headers.get("x-should-retry") == "false", error.response.headers
assert len(runs()) == 1, runs()
print("ok: chat failed once")

try:
    client.responses.create(model="failing", input="go")
    raise AssertionError("a failed run answered")
except openai.InternalServerError as error:
    assert error.status_code == 502, error
assert len(runs()) == 2, runs()
print("ok: response failed once")

busy = client.with_options(max_retries=1)
try:
    busy.chat.completions.create(model="busy", messages=[{"role": "user", "content": "go"}])
    raise AssertionError("an overloaded run answered")
except openai.APIStatusError as error:
    assert error.status_code == 503, error
    assert error.response.headers.get("x-should-retry") is None, error.response.headers
assert len(runs()) == 4, runs()
print("ok: overload retried")
