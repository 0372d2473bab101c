"""An MCP server whose tool list changes, for lllm's tests of `list_changed`, on the official Python
SDK (PyPI `mcp` 2.x), over stdio.

Run it with the interpreter that scripts/servers/mcp.sh installs ($LLLM_MCP_PYTHON):
    python changing_server.py

The tools:
- add_tool: adds the tool `added` and says the tool list changed;
- flood: says the tool list changed `count` times, as fast as it can;
- listings: how many times the client listed the tools.
After each notification burst it pings the client, so that the notifications are read before the
call's result.
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing_server", version="1.0.0", log_level="WARNING")
listings = 0
listed = server.list_tools


async def counted_listing():
    global listings
    listings += 1
    return await listed()


server.list_tools = counted_listing


def added() -> str:
    """A tool added during the run."""
    return "added ran"


@server.tool(structured_output=False)
async def add_tool(ctx: Context) -> str:
    """Adds the tool `added`."""
    server.add_tool(added, name="added", structured_output=False)
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_ping()
    return "added `added`"


@server.tool(structured_output=False)
async def flood(ctx: Context, count: int) -> str:
    """Says the tool list changed `count` times."""
    for _ in range(count):
        await ctx.session.send_tool_list_changed()
    await ctx.session.send_ping()
    return f"sent {count}"


@server.tool(structured_output=False)
async def count_listings() -> str:
    """How many times the client listed the tools."""
    return str(listings)


if __name__ == "__main__":
    sys.stderr.write("changing_server: ready\n")
    sys.stderr.flush()
    server.run("stdio")
