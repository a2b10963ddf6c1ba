"""A FastMCP server that asks in the 2026-07-28 way (SEP-2322, "input required"): its tool
`greet` answers the first round with an elicitation for a name and the state "round-1", and
the round that brings the answer back with a greeting naming the state it got. Streamable
HTTP on the port given as the first argument, at /mcp."""
import sys

from fastmcp import Context, FastMCP
from mcp import types

mcp = FastMCP("toolsmith-guard")


@mcp.tool(annotations={"readOnlyHint": True})
async def greet(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the user for a name, then greet it."""
    answers = ctx.input_responses
    if not answers or "name" not in answers:
        return types.InputRequiredResult.model_validate(
            {
                "inputRequests": {
                    "name": {
                        "method": "elicitation/create",
                        "params": {
                            "message": "What is your name?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}},
                                "required": ["name"],
                            },
                        },
                    }
                },
                "requestState": "round-1",
            }
        )
    answer = answers["name"]
    content = getattr(answer, "content", None) or {}
    return f"hello {content.get('name')} (state {ctx.request_state})"


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp", show_banner=False)
