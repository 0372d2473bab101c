"""An MCP server of one protocol era, for lllm's tests of both handshakes, on the official Python SDK
(PyPI `mcp` 2.x), over stdio. The SDK serves both eras, deciding by the client's first request;
this server is made to serve one:

    python era_server.py modern   # 2026-07-28 only: `server/discover`; `initialize` is refused
    python era_server.py legacy   # the older protocol only: `initialize`; `server/discover` is unknown

The tool `protocol` returns the protocol version of the session.
"""

import sys

import mcp.server.runner as runner
from mcp.server.mcpserver import Context, MCPServer

era = sys.argv[1]
server = MCPServer("era_server", version="1.0.0", log_level="WARNING")
if era == "legacy":
    # No request is taken for a 2026-07-28 one, so every connection is served in the handshake era.
    runner._has_modern_envelope = lambda params: False
    del server._lowlevel_server._request_handlers["server/discover"]
else:
    # Every connection is served in the 2026-07-28 era, which refuses `initialize`.
    modern = runner._serve_modern_stream

    async def modern_only(server, read, write, *, lifespan_state, raise_exceptions=False, **_):
        await modern(server, read, write, lifespan_state=lifespan_state, raise_exceptions=raise_exceptions)

    runner._serve_legacy_stream = modern_only


@server.tool(structured_output=False)
async def protocol(ctx: Context) -> str:
    """The session's protocol version."""
    return f"{ctx.protocol_version}"


if __name__ == "__main__":
    sys.stderr.write(f"era_server: {era}, ready\n")
    sys.stderr.flush()
    server.run("stdio")
