"""The upstream of `cargo bench -p toolsmith --bench federation`: a stdio MCP server on the
standard library alone, so that what is measured is the proxy, not the upstream. Tools:
`ping` (answers at once, inline), `nap` (sleeps `ms` milliseconds on a thread of its own, so
many naps overlap) and TS_EXTRA more (`t_0000`…, for listing); one resource
(`bench://note`) and one prompt (`hello`, argument `name`), answered inline.

    python upstream.py
"""
import json
import os
import sys
import threading
import time

READ_ONLY = {"readOnlyHint": True}
TOOLS = [
    {"name": "ping", "description": "Answers pong.", "annotations": READ_ONLY,
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "nap", "description": "Sleeps ms milliseconds.", "annotations": READ_ONLY,
     "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}},
                     "required": ["ms"]}},
]
for i in range(int(os.environ.get("TS_EXTRA", "0"))):
    TOOLS.append({"name": f"t_{i:04}", "description": f"Extra tool {i}: reads one record.",
                  "annotations": READ_ONLY,
                  "inputSchema": {"type": "object", "properties": {
                      "id": {"type": "string", "description": "The record's id"},
                      "fields": {"type": "array", "items": {"type": "string"}}},
                      "required": ["id"]}})

out = threading.Lock()


def answer(id, result):
    line = json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n"
    with out:
        sys.stdout.write(line)
        sys.stdout.flush()


def nap(id, ms):
    time.sleep(ms / 1000)
    answer(id, {"content": [{"type": "text", "text": "slept"}], "isError": False})


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        answer(message["id"], {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                               "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                               "serverInfo": {"name": "bench", "version": "1"}})
    elif method == "tools/list":
        answer(message["id"], {"tools": TOOLS})
    elif method == "resources/list":
        answer(message["id"], {"resources": [{"uri": "bench://note", "name": "note", "mimeType": "text/plain"}]})
    elif method == "resources/templates/list":
        answer(message["id"], {"resourceTemplates": []})
    elif method == "resources/read":
        answer(message["id"], {"contents": [{"uri": params.get("uri"), "mimeType": "text/plain", "text": "a note"}]})
    elif method == "prompts/list":
        answer(message["id"], {"prompts": [{"name": "hello", "description": "Greets someone.",
                                            "arguments": [{"name": "name", "required": True}]}]})
    elif method == "prompts/get":
        who = (params.get("arguments") or {}).get("name", "")
        answer(message["id"], {"messages": [{"role": "user", "content": {"type": "text", "text": f"Say hello to {who}."}}]})
    elif method == "tools/call" and params.get("name") == "nap":
        ms = params.get("arguments", {}).get("ms", 0)
        threading.Thread(target=nap, args=(message["id"], ms), daemon=True).start()
    elif method == "tools/call":
        answer(message["id"], {"content": [{"type": "text", "text": "pong"}], "isError": False})
    else:
        answer(message["id"], {})
