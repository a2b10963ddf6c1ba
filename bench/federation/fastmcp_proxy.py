"""FastMCP's proxy in front of the same upstream, for `cargo bench -p toolsmith --bench
federation`: `create_proxy` (FastMCP 4.1.6's recommended way) over a stdio transport.

    python fastmcp_proxy.py UPSTREAM_PYTHON UPSTREAM_SCRIPT
"""
import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

proxy = create_proxy(StdioTransport(command=sys.argv[1], args=[sys.argv[2]]), name="proxy")

if __name__ == "__main__":
    proxy.run(show_banner=False, log_level="ERROR")
