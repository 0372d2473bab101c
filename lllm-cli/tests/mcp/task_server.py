"""An MCP server over stdio whose tools answer as tasks (the `io.modelcontextprotocol/tasks`
extension of MCP 2026-07-28), for lllm's tests of tasks. The official Python SDK (2.x) has no
tasks, so this one speaks JSON-RPC itself; it needs nothing but Python.

    python task_server.py LOG

Every request it receives is appended to LOG as one line: "METHOD TASK_ID" (the task id for
tasks/get and tasks/cancel). Once it serves, it writes "task_server: ready" on stderr. Tools:
- forever: a task that never ends (tasks/get says `working`, poll interval 50 ms).
- steps: a task that goes through three status messages, one per poll, then completes with
  the text "all steps done".
"""

import json
import sys

LOG = sys.argv[1]
TASKS = {}  # task id -> (tool, polls so far, cancelled)
STEPS = ["gathering", "thinking", "writing"]
STAMP = "2026-01-01T00:00:00Z"


def log(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def task(task_id: str, status: str, message: str | None) -> dict:
    body = {"taskId": task_id, "status": status, "createdAt": STAMP,
            "lastUpdatedAt": STAMP, "ttlMs": None, "pollIntervalMs": 50}
    if message is not None:
        body["statusMessage"] = message
    return body


def tool(name: str, description: str) -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {}}}


def get(task_id: str) -> dict:
    name, polls, cancelled = TASKS[task_id]
    TASKS[task_id] = (name, polls + 1, cancelled)
    if cancelled:
        return {"resultType": "complete", **task(task_id, "cancelled", None)}
    if name == "forever" or polls < len(STEPS):
        message = "still going" if name == "forever" else STEPS[polls]
        return {"resultType": "complete", **task(task_id, "working", message)}
    result = {"content": [{"type": "text", "text": "all steps done"}], "isError": False}
    return {"resultType": "complete", **task(task_id, "completed", "done"), "result": result}


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {},
                                 "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "task_server", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": [tool("forever", "A task that never ends"),
                          tool("steps", "A task of three steps")]}
    if method == "tools/call":
        task_id = f"t{len(TASKS) + 1}"
        TASKS[task_id] = (params["name"], 0, False)
        log(f"tools/call {task_id}")
        return {"resultType": "task", **task(task_id, "working", "started")}
    if method == "tasks/get":
        log(f"tasks/get {params['taskId']}")
        return get(params["taskId"])
    if method == "tasks/cancel":
        log(f"tasks/cancel {params['taskId']}")
        name, polls, _ = TASKS[params["taskId"]]
        TASKS[params["taskId"]] = (name, polls, True)
        return {"resultType": "complete"}
    if method == "ping":
        return {}
    raise KeyError(method)


def main() -> None:
    sys.stderr.write("task_server: ready\n")
    sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and answers
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "result": answer(message["method"], message.get("params") or {})}
        except KeyError as missing:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": f"no method {missing}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
