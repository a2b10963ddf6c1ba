"""A stdio MCP server (the standard library only, so any user can run it) with one tool,
`attempt`, that runs an attempt of the escape corpus inside the server's own process."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape  # noqa: E402

TOOL = {
    "name": "attempt",
    "description": "Runs one escape attempt.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
}


def reply(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if id_ is None:
        continue  # a notification
    if method == "initialize":
        reply(id_, {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "escape", "version": "1"},
        })
    elif method == "tools/list":
        reply(id_, {"tools": [TOOL]})
    elif method == "tools/call":
        out = escape.attempt(msg["params"]["arguments"]["name"])
        reply(id_, {"content": [{"type": "text", "text": json.dumps(out)}], "isError": False})
    elif method == "ping":
        reply(id_, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
