"""An MCP server for the MCP client's fault-injection tests, on the official Python SDK (PyPI `mcp` 2.x).

Run it with the interpreter that scripts/servers/mcp.sh installs ($LLLM_MCP_PYTHON):
    python fault_server.py                  # stdio (newline-delimited JSON-RPC on stdin/stdout)
    python fault_server.py --http PORT      # streamable HTTP on http://127.0.0.1:PORT/mcp (PORT 0: any free port)
    python fault_server.py --http PORT --json-response   # ... answering POSTs with JSON instead of SSE
    python fault_server.py --die-at-start   # "fault_server: cannot start: bad config" on stderr, exit 2
    python fault_server.py --hang-at-start  # never answers `initialize` (HTTP: accepts, never responds)

Once it serves, it writes "fault_server: ready" on stderr; over HTTP the line goes on with the URL
("fault_server: ready http://127.0.0.1:PORT/mcp"), written once the port listens.
Nothing but JSON-RPC is written on stdout. The tools are listed below; each one's description is its docstring.
"""

import argparse
import asyncio
import base64
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from typing import Annotated, TypedDict

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, EmbeddedResource, ImageContent, TextContent, TextResourceContents


def log(line: str) -> None:
    sys.stderr.write(f"fault_server: {line}\n")
    sys.stderr.flush()


def tiny_png() -> str:
    """A valid 1x1 red RGB PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


PNG = tiny_png()

server = MCPServer("fault_server", version="1.0.0", log_level="WARNING")


def tool(structured: bool = False):
    # Unstructured by default: the result is exactly the content the tool returns, no structuredContent.
    return server.tool(structured_output=structured)


@tool()
def echo(text: Annotated[str, Field(description="The text to send back")]) -> str:
    """Returns `text` unchanged, as one text content item."""
    return text


@tool()
def add(a: Annotated[int, Field(description="First addend")], b: Annotated[int, Field(description="Second addend")]) -> str:
    """Returns the sum of two integers as text."""
    return str(a + b)


class Sum(TypedDict):
    sum: int


@tool(structured=True)
def add_structured(
    a: Annotated[int, Field(description="First addend")], b: Annotated[int, Field(description="Second addend")]
) -> Sum:
    """Returns the sum of two integers as structuredContent {"sum": a+b} (and the same as JSON text)."""
    return {"sum": a + b}


@tool()
def fail(reason: Annotated[str, Field(description="The error text to return")]) -> CallToolResult:
    """Returns a tool error (isError: true) whose text content is `reason`."""
    return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)


@tool()
def crash() -> str:
    """Makes the server process exit at once (status 3) without answering."""
    log("crashing on purpose")
    os._exit(3)


@tool()
async def slow(seconds: Annotated[float, Field(description="How long to sleep, in seconds")]) -> str:
    """Sleeps `seconds` seconds, then answers "done". A cancelled call stops sleeping (stderr: "slow cancelled")."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log("slow cancelled")
        raise
    return "done"


@tool()
def env(name: Annotated[str, Field(description="Name of the environment variable")]) -> str:
    """Returns the value of environment variable `name` in the server's environment, or "<unset>"."""
    return os.environ.get(name, "<unset>")


@tool()
def image() -> ImageContent:
    """Returns one image content item (a 1x1 PNG) and no text."""
    return ImageContent(type="image", data=PNG, mime_type="image/png")


@tool()
def resource() -> EmbeddedResource:
    """Returns one embedded text resource: file:///tmp/x.txt, text/plain, "hello"."""
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="file:///tmp/x.txt", mime_type="text/plain", text="hello"),
    )


@tool()
def big(n: Annotated[int, Field(description="Number of bytes", ge=0)]) -> str:
    """Returns a text content item of `n` bytes of 'x'."""
    return "x" * n


@tool()
def spawn_sleeper() -> str:
    """Starts `sleep 300` as a child in the server's process group (not waited on); answers with its pid."""
    # Its stdio goes to /dev/null so that it holds none of the server's pipes open.
    child = subprocess.Popen(
        ["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return str(child.pid)


@tool()
def pid() -> str:
    """Returns the server's own process id."""
    return str(os.getpid())


def listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def hang(port: int | None) -> None:
    log("hanging at start")
    if port is None:
        while True:  # never reads stdin, never answers
            time.sleep(3600)
    sock = listen(port)
    held = []
    while True:  # accepts connections, never answers
        held.append(sock.accept()[0])


async def serve_http(sock: socket.socket, json_response: bool) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=json_response, host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    port = sock.getsockname()[1]
    log(f"ready http://127.0.0.1:{port}/mcp")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser(description="MCP server for fault-injection tests")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--json-response", action="store_true", help="HTTP: answer with JSON instead of SSE")
    parser.add_argument("--die-at-start", action="store_true", help="exit 2 before speaking MCP")
    parser.add_argument("--hang-at-start", action="store_true", help="never answer initialize")
    args = parser.parse_args()
    if args.die_at_start:
        log("cannot start: bad config")
        sys.exit(2)
    if args.hang_at_start:
        hang(args.http)
    if args.http is None:
        log("ready")
        server.run("stdio")
    else:
        sock = listen(args.http)
        asyncio.run(serve_http(sock, args.json_response))


if __name__ == "__main__":
    main()
