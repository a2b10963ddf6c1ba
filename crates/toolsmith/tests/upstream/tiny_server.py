"""The smallest stdio MCP server (the standard library only, so it starts in milliseconds):
one tool, `ping` (read-only). With TS_HELPER=1 it leaves a `sleep` behind at start, in a
session of its own, as a careless server's helper would; the crash tests check that toolsmith
ends it with the server. With TS_ECHO_META=1 `ping` answers with the call's `_meta` as JSON
(the trace tests read the `traceparent` toolsmith passed on), and it offers a resource
`tiny://meta` and a prompt `meta` that answer the same way. With TS_SLOW_OR_HUGE=1 `ping`
also takes `sleep_s` (it answers that late) and `huge_mb` (its answer is one line that long)."""
import json
import os
import subprocess
import sys
import time

if os.environ.get("TS_HELPER") == "1":
    subprocess.Popen(["sleep", "300"], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# For the web UI's server pages: TS_FAIL_FILE makes it refuse to start while that file exists;
# TS_DESCRIPTION_FILE gives `ping` the description in that file, read at every listing (one
# that mentions "volume" adds a `volume` parameter too).
FAIL_FILE = os.environ.get("TS_FAIL_FILE")
if FAIL_FILE and os.path.exists(FAIL_FILE):
    print(f"tiny: refusing to start while {FAIL_FILE} exists", file=sys.stderr, flush=True)
    sys.exit(3)
DESCRIPTION_FILE = os.environ.get("TS_DESCRIPTION_FILE")
if DESCRIPTION_FILE:
    print(f"tiny: started as {os.getpid()}", file=sys.stderr, flush=True)

TOOL = {"name": "ping", "description": "Answers pong.", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"loud": {"type": "boolean", "description": "Shout it"}}}}

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-06-18")
        capabilities = {"tools": {}}
        if os.environ.get("TS_ECHO_META") == "1":
            capabilities.update({"resources": {}, "prompts": {}})
        result = {"protocolVersion": version, "capabilities": capabilities,
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif method == "resources/list":
        result = {"resources": [{"uri": "tiny://meta", "name": "meta", "mimeType": "application/json"}]}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": []}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "meta", "description": "The request's _meta."}]}
    elif method == "resources/read":
        meta = json.dumps(message.get("params", {}).get("_meta", {}))
        # Caching hints as a server might give them: toolsmith keeps the freshness and makes
        # the scope private (what a caller may see depends on its view).
        result = {"contents": [{"uri": "tiny://meta", "mimeType": "application/json", "text": meta}],
                  "ttlMs": 30000, "cacheScope": "public"}
    elif method == "prompts/get":
        meta = json.dumps(message.get("params", {}).get("_meta", {}))
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": meta}}]}
    elif method == "tools/list":
        tool = dict(TOOL)
        if DESCRIPTION_FILE and os.path.exists(DESCRIPTION_FILE):
            with open(DESCRIPTION_FILE) as f:
                tool["description"] = f.read().strip()
            # A description that speaks of volume comes with a `volume` parameter: a schema
            # change as well.
            if "volume" in tool["description"]:
                schema = json.loads(json.dumps(tool["inputSchema"]))
                schema["properties"]["volume"] = {"type": "integer", "description": "How loud"}
                tool["inputSchema"] = schema
        if os.environ.get("TS_SLOW_OR_HUGE") == "1":
            schema = json.loads(json.dumps(tool["inputSchema"]))
            schema["properties"]["sleep_s"] = {"type": "number"}
            schema["properties"]["huge_mb"] = {"type": "integer"}
            tool["inputSchema"] = schema
        result = {"tools": [tool]}
    elif method == "tools/call":
        loud = message.get("params", {}).get("arguments", {}).get("loud") is True
        text = "PONG" if loud else "pong"
        if os.environ.get("TS_ECHO_META") == "1":
            text = json.dumps(message.get("params", {}).get("_meta", {}))
        arguments = message.get("params", {}).get("arguments", {})
        time.sleep(arguments.get("sleep_s", 0))
        if arguments.get("huge_mb"):
            text = "x" * (arguments["huge_mb"] << 20)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
