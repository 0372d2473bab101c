"""A hostile MCP server for the adversarial suite (lllm-cli/tests/adversarial/mcp.rs), in plain Python 3.

No SDK: it speaks newline-delimited JSON-RPC 2.0 on stdin/stdout by hand, so that it can break the
protocol on purpose. It answers `initialize` properly (echoing a protocol version the client
offers), ignores notifications, answers `ping`, and then misbehaves as its mode says:

    python3 hostile_server.py MODE              # stdio
    python3 hostile_server.py http MODE         # streamable HTTP on 127.0.0.1 (any free port); the
                                                # first line on stdout is "port N"

Over HTTP the modes are `list-echo` (a JSON-RPC error for tools/list that quotes the Authorization
header) and `serve`; POSTs are answered with JSON, and GET (the server's own stream) with 405. A
call with `how` = `http-error` is answered with HTTP 502 and no JSON-RPC message.

Listing modes (the `tools/list` answer):
    endless-pages     every page has a nextCursor
    many-tools        5000 tools
    spaced-name       a tool called "has spaces"
    long-name         a tool whose name has 200 characters
    control-name      a tool whose name carries terminal escape sequences
    duplicate         two tools called `echo`
    string-schema     an inputSchema {"type": "string"}
    broken-schema     an inputSchema that does not compile
    long-description  a tool whose description has 1 MiB
    huge-listing      a tools/list answer of 20 MiB on one line
    junk              non-JSON lines (and a 20 MiB junk line) on stdout before and after the handshake;
                      otherwise it serves
    list-error        a JSON-RPC error for tools/list, with terminal escape sequences in the message
    secret-list       a JSON-RPC error for tools/list that quotes $API_TOKEN, also on stderr, then exit 3
    hang              never answers `initialize` (writes "hanging" on stderr)
    daemon            starts a child that calls setsid() and sleeps, a grandchild in a session of its
                      own whose parent exits, and a setsid() child that clears its environment (their
                      pids in $LLLM_TEST_PIDS); otherwise it serves
    flood             writes to stderr without end, from a thread; otherwise it serves
    serve             (or anything else) serves normally

Resources (stdio): `resources/list` never ends (one resource a page, always a next cursor), there
is no `resources/templates/list`, and `resources/read` of `hostile://big` answers 200 KiB of text,
of `hostile://slow` never answers.

When it serves, it lists `echo` ({"text": string} -> the text) and `t` ({"how": string}), whose
call does what `how` says:
    ok        the text "fine"
    huge      100 MiB of text in one result (written in chunks)
    blocks    100000 text blocks
    under     65000 text blocks (195000 JSON values, just under lllm's 200000)
    dense     550000 empty text blocks (just under 16 MiB)
    fifteen   15 MiB of text (under the 16 MiB a message may have)
    shapeless a result that is not a CallToolResult (`content` is a string)
    hologram  a content block of a type no protocol version has
    deep      structuredContent nested 1000 levels deep
    rpc-error a JSON-RPC error -32602
    never     no answer, ever
    wrong-id  an answer with another id
    close     closes stdout and sleeps (the process stays)
    die       writes escape sequences and "dying" on stderr, then kills itself with SIGKILL
    ansi      text with terminal escape sequences and control characters
    secret    a JSON-RPC error that quotes $API_TOKEN (HTTP: the Authorization header), also on stderr
    pid       its process id
"""

import json
import os
import signal
import sys
import threading
import time

MIB = 1024 * 1024
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ANSI = "\x1b[31mred\x1b[0m \x1b]0;owned title\x07 \x1b[2J\x1b[H bell\x07 back\x08space \r\x1b[1A"

ECHO = {
    "name": "echo",
    "description": "Sends the text back",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
HOSTILE = {
    "name": "t",
    "description": "Misbehaves as told",
    "inputSchema": {"type": "object", "properties": {"how": {"type": "string"}}, "required": ["how"]},
}


def log(line):
    sys.stderr.write(f"hostile_server: {line}\n")
    sys.stderr.flush()


def message(id, result=None, error=None):
    body = {"jsonrpc": "2.0", "id": id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return body


def tool(name, description="d", schema=None):
    return {"name": name, "description": description, "inputSchema": schema or {"type": "object"}}


def listing(mode, params):
    """The tools/list answer (a result or an error) for a listing mode, or None for the normal one."""
    if mode == "endless-pages":
        cursor = int((params or {}).get("cursor") or 0)
        return {"result": {"tools": [tool(f"tool_{cursor}")], "nextCursor": str(cursor + 1)}}
    if mode == "many-tools":
        return {"result": {"tools": [tool(f"tool_{i}") for i in range(5000)]}}
    if mode == "spaced-name":
        return {"result": {"tools": [ECHO, tool("has spaces")]}}
    if mode == "long-name":
        return {"result": {"tools": [ECHO, tool("n" * 200)]}}
    if mode == "control-name":
        return {"result": {"tools": [ECHO, tool("evil" + ANSI)]}}
    if mode == "duplicate":
        return {"result": {"tools": [ECHO, HOSTILE, ECHO]}}
    if mode == "string-schema":
        return {"result": {"tools": [ECHO, tool("stringly", schema={"type": "string"})]}}
    if mode == "broken-schema":
        schema = {"type": "object", "properties": {"a": {"type": "nonsense"}}}
        return {"result": {"tools": [ECHO, tool("broken", schema=schema)]}}
    if mode == "long-description":
        return {"result": {"tools": [ECHO, tool("verbose", description="blah " * (MIB // 5))]}}
    if mode == "list-error":
        return {"error": {"code": -32603, "message": "listing broke " + ANSI}}
    if mode == "secret-list":
        token = os.environ.get("API_TOKEN", "")
        log(f"bad token {token}")
        return {"error": {"code": -32001, "message": f"token {token} was refused"}, "exit": 3}
    return None


def call(how, id, secret):
    """The answer to a call of `t` (a message, raw bytes of one, or None for no answer)."""
    if how == "ok":
        return message(id, {"content": [{"type": "text", "text": "fine"}]})
    if how == "blocks":
        return message(id, {"content": [{"type": "text", "text": "x"}] * 100_000})
    if how == "under":
        # 65000 blocks: 195 000 JSON values, just under the 200 000 lllm reads in one message.
        return message(id, {"content": [{"type": "text", "text": "x"}] * 65_000})
    if how == "dense":
        # As many (empty) blocks as a message of just under 16 MiB holds: about 550 000.
        return message(id, {"content": [{"type": "text", "text": ""}] * 550_000})
    if how == "fifteen":
        return message(id, {"content": [{"type": "text", "text": "x" * (15 * MIB)}]})
    if how == "deep":
        # 1000 levels (JSON parsers give up at a few hundred), written by hand: json.dumps would too.
        nested = ("[" * 1000 + "]" * 1000).encode()
        return b'{"jsonrpc": "2.0", "id": ' + json.dumps(id).encode() + b', "result": {"content": [], "structuredContent": {"a": ' + nested + b"}}}"
    if how == "hologram":
        return message(id, {"content": [{"type": "hologram", "text": "from the future"}]})
    if how == "shapeless":
        return message(id, {"content": "not a list of blocks", "isError": "perhaps"})
    if how == "rpc-error":
        return message(id, error={"code": -32602, "message": "Invalid params: `how` is not to my taste"})
    if how == "never":
        return None
    if how == "wrong-id":
        other = f"not-{id}" if isinstance(id, str) else id + 1000
        return message(other, {"content": [{"type": "text", "text": "lost"}]})
    if how == "ansi":
        return message(id, {"content": [{"type": "text", "text": "colour " + ANSI + " end"}]})
    if how == "secret":
        log(f"refusing token {secret}")
        return message(id, error={"code": -32001, "message": f"your token {secret} has expired"})
    if how == "pid":
        return message(id, {"content": [{"type": "text", "text": str(os.getpid())}]})
    return message(id, {"content": [{"type": "text", "text": f"unknown how {how!r}"}], "isError": True})


def write(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(body):
    write(json.dumps(body).encode() + b"\n")


def huge_text(id):
    """A valid result of 100 MiB on one line, written in 1 MiB chunks (never held whole)."""
    write(b'{"jsonrpc": "2.0", "id": ' + json.dumps(id).encode() + b', "result": {"content": [{"type": "text", "text": "')
    chunk = b"x" * MIB
    for _ in range(100):
        sys.stdout.buffer.write(chunk)
    write(b'"}]}}\n')


def huge_listing(id):
    """A tools/list answer of 20 MiB on one line, the id last (as some SDKs write it)."""
    write(b'{"jsonrpc": "2.0", "result": {"tools": [{"name": "big", "inputSchema": {"type": "object"}, "description": "')
    chunk = b"y" * MIB
    for _ in range(20):
        sys.stdout.buffer.write(chunk)
    write(b'"}]}, "id": ' + json.dumps(id).encode() + b"}\n")


def initialized(params):
    offered = (params or {}).get("protocolVersion")
    version = offered if offered in VERSIONS else "2025-06-18"
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "hostile_server", "version": "0.0.1"},
    }


def daemonise():
    """A setsid() child, a grandchild whose parent exits (a classic double fork), and a setsid() child
    that drops its environment: all sleep."""
    pids = os.environ.get("LLLM_TEST_PIDS")
    child = os.fork()
    if child == 0:
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            os.setsid()
            os.closerange(0, 3)
            time.sleep(300)
            os._exit(0)
        if pids:
            with open(pids, "a") as f:
                f.write(f"{grandchild}\n")
        os._exit(0)
    second = os.fork()
    if second == 0:
        os.setsid()
        os.closerange(0, 3)
        time.sleep(300)
        os._exit(0)
    third = os.fork()
    if third == 0:
        # Leaves the group and drops its environment (and so lllm's mark on it).
        os.setsid()
        os.closerange(0, 3)
        os.execve("/bin/sleep", ["sleep", "300"], {})
    os.waitpid(child, 0)
    if pids:
        with open(pids, "a") as f:
            f.write(f"{second}\n{third}\n")


def flood():
    line = ("flood " * 1000 + "\n").encode()
    try:
        while True:
            sys.stderr.buffer.write(line)
    except (BrokenPipeError, OSError):
        pass


def stdio(mode):
    if mode == "junk":
        write(b"this is not JSON\n{broken\n\x00\xff\xfe\n[1, 2\n")
    if mode == "daemon":
        daemonise()
    if mode == "flood":
        threading.Thread(target=flood, daemon=True).start()
    secret = os.environ.get("API_TOKEN", "")
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or "id" not in request:
            continue  # a notification, or not a request at all
        id, method, params = request["id"], request.get("method"), request.get("params")
        if method == "initialize":
            if mode == "hang":
                log("hanging")
                continue
            send(message(id, initialized(params)))
            if mode == "junk":
                write(b"more junk after the handshake\n" + b"z" * (20 * MIB) + b"\n")
        elif method == "ping":
            send(message(id, {}))
        elif method == "tools/list":
            if mode == "huge-listing":
                huge_listing(id)
                continue
            answer = listing(mode, params)
            if answer is None:
                send(message(id, {"tools": [ECHO, HOSTILE]}))
            else:
                send(message(id, answer.get("result"), answer.get("error")))
                if "exit" in answer:
                    sys.exit(answer["exit"])
        elif method == "tools/call":
            name = (params or {}).get("name")
            arguments = (params or {}).get("arguments") or {}
            if name == "echo":
                send(message(id, {"content": [{"type": "text", "text": str(arguments.get("text"))}]}))
                continue
            how = arguments.get("how")
            if how == "huge":
                huge_text(id)
            elif how == "close":
                sys.stdout.close()
                os.close(1)
                time.sleep(300)
            elif how == "die":
                log("dying " + ANSI)
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                answer = call(how, id, secret)
                if isinstance(answer, bytes):
                    write(answer + b"\n")
                elif answer is not None:
                    send(answer)
        elif method == "resources/list":
            send(message(id, resource_page(params)))
        elif method == "resources/read":
            answer = read_resource(id, (params or {}).get("uri"))
            if answer is not None:
                send(answer)
        else:
            send(message(id, error={"code": -32601, "message": f"no method {method}"}))


def resource_page(params):
    """An endless resource listing: one resource a page, and always a next cursor."""
    page = int((params or {}).get("cursor") or 0)
    return {"resources": [{"uri": f"hostile://r/{page}", "name": f"r{page}"}], "nextCursor": str(page + 1)}


def read_resource(id, uri):
    """`hostile://big`: 200 KiB of text; `hostile://slow`: no answer; else an error."""
    if uri == "hostile://big":
        return message(id, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "é" * (100 * 1024)}]})
    if uri == "hostile://slow":
        return None
    return message(id, error={"code": -32002, "message": f"no resource {uri}"})


def http(mode):
    """Streamable HTTP, answering POSTs with JSON; GET (the server's stream) is not offered."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, body=None):
            if isinstance(body, bytes):
                data = body
            else:
                data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Mcp-Session-Id", "hostile-session")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(405)

        def do_DELETE(self):
            self.reply(200)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length))
            except ValueError:
                return self.reply(400)
            if not isinstance(request, dict) or "id" not in request:
                return self.reply(202)
            id, method, params = request["id"], request.get("method"), request.get("params")
            auth = self.headers.get("Authorization", "")
            if method == "initialize":
                return self.reply(200, message(id, initialized(params)))
            if method == "tools/list":
                if mode == "list-echo":
                    return self.reply(200, message(id, error={"code": -32001, "message": f"who is {auth}?"}))
                return self.reply(200, message(id, {"tools": [ECHO, HOSTILE]}))
            if method == "tools/call":
                how = ((params or {}).get("arguments") or {}).get("how")
                if how == "http-error":
                    return self.reply(502, b"bad gateway")
                answer = call(how, id, auth) if how != "never" else None
                if answer is None:
                    return self.reply(200, message(id, error={"code": -32603, "message": "no"}))
                return self.reply(200, answer)
            return self.reply(200, message(id, error={"code": -32601, "message": f"no method {method}"}))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


def main():
    args = sys.argv[1:]
    if args[:1] == ["http"]:
        http(args[1] if len(args) > 1 else "serve")
    else:
        stdio(args[0] if args else "serve")


if __name__ == "__main__":
    main()
