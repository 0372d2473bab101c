"""An MCP server whose tool samples the client's model and then waits, for lllm's test that a resumed
run answers a sample already answered from its journal, on the official Python SDK (PyPI `mcp` 2.x),
over stdio.

The tool `sample_and_wait` (idempotent, so a resumed run calls it again) asks for one completion,
appends the answer to the file `sampled` (in the server's folder), and then returns it if the file
`go` exists, or else waits a minute (the test stops the run meanwhile).
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import SamplingMessage, TextContent, ToolAnnotations

server = MCPServer("resume_server", version="1.0.0", log_level="WARNING")


@server.tool(structured_output=False, annotations=ToolAnnotations(idempotentHint=True))
async def sample_and_wait(ctx: Context) -> str:
    """Samples once, then returns the answer once the file `go` exists."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text="name a colour"))],
        max_tokens=16,
    )
    answer = result.content.text if isinstance(result.content, TextContent) else str(result.content)
    with open("sampled", "a") as f:
        f.write(answer + "\n")
    if not os.path.exists("go"):
        await asyncio.sleep(60)
    return "sampled: " + answer


if __name__ == "__main__":
    sys.stderr.write("resume_server: ready\n")
    sys.stderr.flush()
    server.run("stdio")
