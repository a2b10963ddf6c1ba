"""The FastMCP side of `cargo bench -p toolsmith --bench mcp`: the same `echo` tool (run with
subprocess.run) and the same 1000 extra tools as the toolsmith side.

    python fastmcp_server.py stdio
    python fastmcp_server.py http PORT
"""

import subprocess
import sys

from fastmcp import FastMCP

mcp = FastMCP("bench")


@mcp.tool
def echo(text: str) -> str:
    """Print the text."""
    return subprocess.run(["echo", text], capture_output=True, text=True, check=True).stdout


def bulk(i):
    def tool() -> str:
        return ""

    tool.__doc__ = f"Bulk tool {i}."
    return tool


for i in range(1000):
    mcp.tool(bulk(i), name=f"bulk_{i:04}")

if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run(show_banner=False, log_level="ERROR")
    else:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False,
                log_level="error", stateless_http=True, json_response=True)
