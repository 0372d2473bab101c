"""An MCP server that asks its client things during tool calls, for the adversarial tests of
lllm's answers (sampling, elicitation), on the official Python SDK (PyPI `mcp` 2.x), over stdio.

Run it with the interpreter that scripts/servers/mcp.sh installs ($LLLM_MCP_PYTHON):
    python asking_server.py

Once it serves, it writes "asking_server: ready" on stderr. The tools:
- sample_loop: asks the client's model for a completion again and again, until an answer is refused;
  returns how many were answered and the refusal.
- sample_once: asks once (include_context as given) and returns the answer's text.
- elicit_huge: asks the user to fill a form whose requested schema has `megabytes` MB; returns the
  answer, or the client's refusal.
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import SamplingMessage, TextContent

server = MCPServer("asking_server", version="1.0.0", log_level="WARNING")


def log(line: str) -> None:
    sys.stderr.write(f"asking_server: {line}\n")
    sys.stderr.flush()


async def sample(ctx: Context, text: str, include_context: str | None = None) -> str:
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=64,
        system_prompt="You answer a server.",
        include_context=include_context,
    )
    return result.content.text if isinstance(result.content, TextContent) else str(result.content)


@server.tool(structured_output=False)
async def sample_loop(ctx: Context) -> str:
    """Samples in a loop until the client refuses."""
    answered = 0
    while True:
        try:
            await sample(ctx, f"question {answered}")
        except Exception as error:  # the client's refusal
            return f"answered {answered}; then refused: {error}"
        answered += 1


@server.tool(structured_output=False)
async def sample_once(ctx: Context, text: str, include_context: str = "none") -> str:
    """Samples once and returns the answer."""
    return "sampled: " + await sample(ctx, text, include_context)


@server.tool(structured_output=False)
async def elicit_huge(ctx: Context, megabytes: int = 10) -> str:
    """Asks for a form whose schema has megabytes of description."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "x" * (megabytes * 1024 * 1024)}},
    }
    try:
        result = await ctx.session.elicit_form("Fill this in", schema)
    except Exception as error:  # the client's refusal
        return f"refused: {error}"
    return f"answered: {result.action}"


if __name__ == "__main__":
    log("ready")
    server.run("stdio")
