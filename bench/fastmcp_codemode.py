"""FastMCP's code mode, for `cargo bench -p toolsmith --bench codemode` to measure beside
toolsmith's: a FastMCP server with GitHub's REST API imported from the same OpenAPI document
(`FastMCP.from_openapi`), the same local tool (`yes`, listing the working folder), and the
experimental `CodeMode` transform (its `search`, `get_schema` and `execute`, programs run by
`pydantic-monty`), served over Streamable HTTP (stateless, JSON answers).

Usage: fastmcp_codemode.py PORT [OPENAPI.json] — without the document, the local tool alone.
"""

import json
import os
import sys
import time

import httpx2
from fastmcp import FastMCP
from fastmcp.experimental.transforms.code_mode import CodeMode


def main() -> None:
    port = int(sys.argv[1])
    started = time.perf_counter()
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as f:
            spec = json.load(f)
        mcp = FastMCP.from_openapi(
            openapi_spec=spec,
            # Never called: the bench lists and searches these tools, it does not call GitHub.
            client=httpx2.AsyncClient(base_url="http://127.0.0.1:9"),
            name="github",
        )
    else:
        mcp = FastMCP("local")

    @mcp.tool
    def yes() -> list[str]:
        """Lists the workspace."""
        return sorted(os.listdir("."))

    mcp.add_transform(CodeMode())
    print(f"imported in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        stateless_http=True,
        json_response=True,
        show_banner=False,
        log_level="error",
    )


if __name__ == "__main__":
    main()
