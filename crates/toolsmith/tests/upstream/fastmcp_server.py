"""A FastMCP server the federation tests put behind toolsmith (stdio, or Streamable HTTP with
--http PORT). Its behaviour is set by the test: the description of `describe` is read from
the file in TS_DESCRIPTION (read at start; `gone` there: no such tool), a tool `extra`
exists when the file TS_EXTRA names exists, TS_EXIT_AT_START makes it exit at once after a
line on stderr (which shows the secret in TS_SECRET, to see it redacted), TS_MARK names a file where `hang` notes that it was cancelled, and the description of the prompt `greet` is read from the file in TS_PROMPT.
It offers resources too: a text, a binary one and a template."""
import asyncio
import os
import sys

from fastmcp import Context, FastMCP

if os.environ.get("TS_EXIT_AT_START"):
    secret = os.environ.get("TS_SECRET", "")
    print(f"boom: this server refuses to start (key {secret})", file=sys.stderr, flush=True)
    sys.exit(3)

mcp = FastMCP("toolsmith-test")
description_file = os.environ.get("TS_DESCRIPTION")
description = "Describe something."
if description_file and os.path.exists(description_file):
    with open(description_file) as f:
        description = f.read().strip()


def describe(thing: str) -> str:
    return f"{thing} is a thing"


if description != "gone":
    mcp.tool(description=description)(describe)


prompt_file = os.environ.get("TS_PROMPT")
prompt_description = "Greet someone."
if prompt_file and os.path.exists(prompt_file):
    with open(prompt_file) as f:
        prompt_description = f.read().strip()


@mcp.prompt(description=prompt_description)
def greet(name: str) -> str:
    return f"Say hello to {name}."


@mcp.resource("toolsmith://readme", mime_type="text/plain", description="A fixed text.")
def readme() -> str:
    return "Read me: the fixture's own resource."


@mcp.resource("toolsmith://logo", mime_type="image/png", description="Eight bytes of PNG signature.")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\n"


@mcp.resource("toolsmith://notes/{topic}", mime_type="text/plain")
def note(topic: str) -> str:
    """Notes on a topic."""
    return f"Notes on {topic}."


def extra() -> str:
    """A tool that appeared later."""
    return "extra"


if os.environ.get("TS_EXTRA") and os.path.exists(os.environ["TS_EXTRA"]):
    mcp.tool(annotations={"readOnlyHint": True})(extra)


@mcp.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool(annotations={"readOnlyHint": True})
def pick(value: int | str) -> str:
    """Echo a number or a word (a union OpenAI's strict mode cannot take)."""
    return str(value)


@mcp.tool(annotations={"readOnlyHint": True})
async def ask(ctx: Context) -> str:
    """Ask the user for a name (elicitation), and greet it."""
    answer = await ctx.elicit("What is your name?", response_type=str)
    if answer.action == "accept":
        return f"hello {answer.data}"
    return f"no name ({answer.action})"


@mcp.tool(annotations={"readOnlyHint": True})
async def roots(ctx: Context) -> str:
    """List the caller's roots (roots/list, asked during the call)."""
    listed = await ctx.request_context.session.list_roots()
    return " ".join(str(r.uri) for r in listed.roots) or "no roots"


@mcp.tool(annotations={"readOnlyHint": True})
async def chatty(ctx: Context) -> str:
    """Log a debug, an info and a warning message during the call."""
    await ctx.debug("debug note")
    await ctx.info("info note")
    await ctx.warning("warning note")
    return "said"


@mcp.tool
def crash() -> str:
    """Exit the whole server process mid-call."""
    os._exit(1)


@mcp.tool
async def hang(seconds: float = 60) -> str:
    """Sleep, noting a cancellation in the file TS_MARK names."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark = os.environ.get("TS_MARK")
        if mark:
            with open(mark, "w") as f:
                f.write("cancelled")
        raise
    return "slept"


@mcp.tool
def flood(megabytes: int = 4) -> str:
    """Write this many MiB to stderr."""
    line = "x" * 1023 + "\n"
    for _ in range(megabytes * 1024):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "flooded"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp", show_banner=False)
    else:
        mcp.run(show_banner=False)
