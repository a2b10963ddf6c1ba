"""A real MCP client (the official Python SDK, PyPI `mcp`) against toolsmith.

Driven by tests/mcp.rs, which starts the servers and passes what to connect to:

    mcp_client.py stdio BIN WORKSPACE DB MODE     # `toolsmith mcp` over stdio; MODE auto|legacy
    mcp_client.py http URL BASE WORKSPACE         # `toolsmith serve` at URL (/mcp), REST at BASE
    mcp_client.py replicas URL_A BASE_A URL_B     # an edit on replica A reaches a client of B
    mcp_client.py sessions-stdio BIN WORKSPACE CATALOG   # sessions through `toolsmith mcp`
    mcp_client.py sessions-http URL BASE WORKSPACE       # sessions through `serve` (MCP + REST)
    mcp_client.py federation-stdio BIN WORKSPACE CATALOG MARK  # upstreams behind `toolsmith mcp`
    mcp_client.py federation-http URL MARK                     # upstreams behind `toolsmith serve`
    mcp_client.py toolsets URL BASE WORKSPACE   # /mcp/{toolset}, narrowing headers, search mode
    mcp_client.py prompt-approval URL BASE      # a held prompt approved: list_changed, new text

Every check raises AssertionError with what was expected; the exit status says pass/fail.
"""

import json
import subprocess
import sys
import time
import urllib.request

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

EXTRA = 1002  # tools the driver added beside the example catalog (1000 bulk, slow, hang)

# A server started without tokens asks for its local admin token: the driver passes it here,
# and every request of this client (MCP and REST) carries it unless it says otherwise.
BEARER = __import__("os").environ.get("TOOLSMITH_TEST_BEARER")
if BEARER:
    _urlopen = urllib.request.urlopen

    def _urlopen_with_bearer(req, *args, **kwargs):
        if isinstance(req, urllib.request.Request) and not req.has_header("Authorization"):
            req.add_header("Authorization", f"Bearer {BEARER}")
        return _urlopen(req, *args, **kwargs)

    urllib.request.urlopen = _urlopen_with_bearer
    _SdkClient = Client

    def Client(target, *args, **kwargs):  # noqa: N802 - stands in for the SDK's class
        if isinstance(target, str) and target.startswith("http"):
            target = with_headers(target, {})
        return _SdkClient(target, *args, **kwargs)


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def list_all(client):
    tools, cursor, pages = [], None, 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools, pages


async def expect_protocol_error(what, coro, code=-32602):
    try:
        await coro
    except MCPError as e:
        assert e.code == code, f"{what}: error code {e.code}, expected {code}: {e.message}"
        return e.message
    raise AssertionError(f"{what}: no protocol error")


async def common(client, workspace=None):
    """Listing, pagination, coercion, bad arguments, unknown and dangerous tools."""
    tools, pages = await list_all(client)
    names = [t.name for t in tools]
    assert len(names) == 13 + EXTRA, f"{len(names)} tools listed"
    assert names == sorted(names) and len(set(names)) == len(names), "pages overlap or are out of order"
    assert pages > 1, "1000+ tools arrived on one page"
    again, _ = await list_all(client)
    assert [t.name for t in again] == names, "the order is not deterministic"
    by = {t.name: t for t in tools}
    for t in tools:
        schema = t.input_schema
        assert schema["type"] == "object", t.name
        destructive = bool(t.annotations and t.annotations.destructive_hint)
        assert destructive == (t.name in ("remove_files", "write_file", "http_get")), f"{t.name}: destructiveHint {destructive}"
    assert by["current_time"].annotations.read_only_hint is True
    assert by["bulk_0000"].input_schema == {"type": "object", "additionalProperties": False}, by["bulk_0000"].input_schema
    assert by["word_stats"].title == "Word statistics", by["word_stats"].title
    assert by["word_stats"].output_schema["required"] == ["words", "lines", "characters", "top_words"]

    await expect_protocol_error("invalid cursor", client.list_tools(cursor="not-a-cursor"))

    # Numbers sent as strings are coerced...
    r = await client.call_tool("convert_temperature", {"value": "100", "from": "celsius", "to": "fahrenheit"})
    assert not r.is_error, text(r)
    assert r.structured_content == {"value": 212.0, "unit": "fahrenheit"}, r.structured_content
    # ...so are booleans; real strings stay strings, even when they look like JSON.
    r = await client.call_tool("sort_lines", {"text": "10\n9\n100", "numeric": "true"})
    assert not r.is_error and text(r) == "9\n10\n100\n", repr(text(r))
    r = await client.call_tool("sort_lines", {"text": '["b", "a"]'})
    assert not r.is_error and text(r) == '["b", "a"]\n', repr(text(r))
    r = await client.call_tool("count_lines", {"text": "123"})
    assert not r.is_error, text(r)
    # JSON output with an outputSchema arrives as structuredContent; an integer as a string too.
    r = await client.call_tool("word_stats", {"text": "a b a c", "top": "2"})
    assert not r.is_error, text(r)
    assert r.structured_content["words"] == 4 and len(r.structured_content["top_words"]) == 2, r.structured_content

    # Bad arguments: a result with isError that names each problem and the parameters.
    r = await client.call_tool("convert_temperature", {"value": "hot", "to": "kelvin", "extra": 1})
    assert r.is_error, text(r)
    message = text(r)
    for needle in ['"hot" is not a number', "from", "extra", "Parameters:", "celsius"]:
        assert needle in message, f"{needle!r} not in {message!r}"

    # Confinement and execution failures are results too.
    r = await client.call_tool("read_file", {"path": "../outside.txt"})
    assert r.is_error and "not allowed" in text(r), text(r)
    r = await client.call_tool("read_file", {"path": "missing.txt"})
    assert r.is_error and "missing.txt" in text(r), text(r)

    # A call running longer than a second reports progress...
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    r = await client.call_tool("slow", {}, progress_callback=on_progress)
    assert not r.is_error, text(r)
    assert progress and "slow" in (progress[0][1] or ""), f"no progress during a 2.5 s call: {progress}"
    # ...and a cancelled one is killed, process group and all.
    with anyio.move_on_after(1.0):
        await client.call_tool("hang", {})
        raise AssertionError("the hanging call returned")
    for _ in range(100):
        if subprocess.run(["pgrep", "-f", "sleep 37.25"], capture_output=True).returncode != 0:
            break
        await anyio.sleep(0.1)
    else:
        raise AssertionError("the cancelled call's process is still running")

    # Unknown tools are protocol errors.
    message = await expect_protocol_error("unknown tool", client.call_tool("no_such_tool", {}))
    assert "no_such_tool" in message, message

    # A dangerous tool is refused, runs nothing, and the text says what to do.
    if workspace:
        with open(f"{workspace}/keep.txt", "w") as f:
            f.write("keep")
    r = await client.call_tool("remove_files", {"paths": '["keep.txt"]'})
    assert r.is_error and "dangerous" in text(r) and "--allow-dangerous" in text(r), text(r)
    if workspace:
        with open(f"{workspace}/keep.txt") as f:
            assert f.read() == "keep", "the dangerous tool ran"
    return by


async def confirmations(connect, workspace):
    """A client that can ask its user: the dangerous tool runs once the user accepts."""
    asked = []

    def answering(answer):
        async def callback(context, params):
            asked.append(params.message)
            return types.ElicitResult(action=answer, content={"confirm": True} if answer == "accept" else None)
        return callback

    for answer, kept in [("decline", True), ("accept", False)]:
        with open(f"{workspace}/doomed.txt", "w") as f:
            f.write("x")
        async with connect(answering(answer)) as client:
            r = await client.call_tool("remove_files", {"paths": ["doomed.txt"]})
        import os
        assert os.path.exists(f"{workspace}/doomed.txt") == kept, f"{answer}: file kept={not kept}: {text(r)}"
        assert r.is_error == kept, f"{answer}: {text(r)}"
        if kept:
            assert "declined" in text(r), text(r)
    assert len(asked) == 2 and "remove_files" in asked[0] and "doomed.txt" in asked[0], asked


async def wait_list_changed(client, modern, events, trigger):
    """Runs `trigger` and waits for notifications/tools/list_changed; returns the latency."""
    if modern:
        async with client.listen(tools_list_changed=True) as sub:
            started = time.monotonic()
            await anyio.to_thread.run_sync(trigger)
            with anyio.fail_after(10):
                async for event in sub:
                    return time.monotonic() - started
            raise AssertionError("the subscription ended without an event")
    started = time.monotonic()
    await anyio.to_thread.run_sync(trigger)
    with anyio.fail_after(10):
        await events.wait()
    return time.monotonic() - started


def rest(base, method, path):
    req = urllib.request.Request(f"{base}{path}", method=method, data=b"", headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200, r.status


def mcp_status(url, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    req = urllib.request.Request(url, method="POST", data=body, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def make_handler(events):
    async def handler(message):
        if isinstance(message, types.ToolListChangedNotification) or isinstance(
            getattr(message, "root", None), types.ToolListChangedNotification
        ):
            events.set()
    return handler


async def stdio(bin, workspace, db, mode):
    events = anyio.Event()
    params = StdioServerParameters(command=bin, args=["mcp", "--db", db, "--workspace", workspace, "--no-cgroups"], cwd=workspace)
    async with Client(params, mode=mode, message_handler=make_handler(events)) as client:
        assert client.server_info.name == "toolsmith", client.server_info
        print("protocol", client.protocol_version)
        await common(client, workspace)
        await confirmations(lambda cb: Client(params, mode=mode, elicitation_callback=cb), workspace)
        # An edit by another process sharing the registry (the CLI) reaches this client.
        trigger = lambda: subprocess.run([bin, "disable", "word_stats", "--db", db], check=True, capture_output=True)
        latency = await wait_list_changed(client, client.protocol_version >= "2026-07-28", events, trigger)
        print(f"list_changed after an edit by another process: {latency:.2f} s")
        tools, _ = await list_all(client)
        assert "word_stats" not in [t.name for t in tools], "a disabled tool is still listed"
        await expect_protocol_error("disabled tool", client.call_tool("word_stats", {"text": "x"}))


async def http(url, base, workspace):
    assert mcp_status(url, {"Host": "evil.example"}) == 403, "a foreign Host was accepted"
    assert mcp_status(url, {"Origin": "http://evil.example"}) == 403, "a foreign Origin was accepted"
    async with Client(url) as client:
        print("protocol", client.protocol_version)
        await common(client, workspace)
        # The call `common` gave up on is in the execution log once, as cancelled: the call
        # path every door takes logs a call whose request went away. The log is written in
        # order, so once a later call's entry is there, every entry of the cancelled one is.
        r = await client.call_tool("bulk_0001", {})
        assert not r.is_error, text(r)
        for _ in range(100):
            if rest_json(base, "GET", "/runs?tool=bulk_0001")["runs"]:
                break
            await anyio.sleep(0.1)
        else:
            raise AssertionError("bulk_0001's call was never logged")
        hang = rest_json(base, "GET", "/runs?tool=hang")["runs"]
        assert [r["kind"] for r in hang] == ["cancelled"], hang
        await confirmations(lambda cb: Client(url, elicitation_callback=cb), workspace)
        latency = await wait_list_changed(client, True, None, lambda: rest(base, "POST", "/tools/word_stats/disable"))
        print(f"list_changed after a REST edit: {latency:.2f} s")
        tools, _ = await list_all(client)
        assert "word_stats" not in [t.name for t in tools], "a disabled tool is still listed"


async def replicas(url_a, base_a, url_b):
    async with Client(url_b) as client:
        before, _ = await list_all(client)
        assert "sort_lines" in [t.name for t in before]
        latency = await wait_list_changed(client, True, None, lambda: rest(base_a, "POST", "/tools/sort_lines/disable"))
        print(f"list_changed on replica B after an edit on replica A: {latency:.2f} s")
        after, _ = await list_all(client)
        assert "sort_lines" not in [t.name for t in after], "replica B still lists the disabled tool"


def processes_with(marker):
    import os
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


async def session_call(client, tool, args):
    r = await client.call_tool(tool, args)
    assert not r.is_error, f"{tool} {args}: {text(r)}"
    return json.loads(text(r))


async def sessions(client, workspace, base=None):
    """An agent's round: a shell, a dev server, a REPL, a cancelled wait, and cleanup."""
    import os
    os.makedirs(f"{workspace}/app", exist_ok=True)
    marker = f"TS_MCP_SESSION={os.getpid()}-{time.time()}"
    name, value = marker.split("=")
    shell = (await session_call(client, "session_start", {"cwd": "app", "env": {name: value}}))["session_id"]
    r = await session_call(client, "session_exec", {"session_id": shell, "command": "export N=6; cd .."})
    assert r["status"] == "completed" and r["cwd"] == os.path.realpath(workspace), r
    r = await session_call(client, "session_exec", {"session_id": shell, "command": "echo $((N*7)); ls -d app; false"})
    assert (r["stdout"], r["exit_code"]) == ("42\napp\n", 1), r
    r = await session_call(client, "session_exec", {"session_id": shell, "command": "sleep 300 & echo bg"})
    assert r["status"] == "completed", r

    server = await session_call(client, "session_start", {
        "command": ["python3", "-u", "-c", "import time; print('Listening on 8000'); time.sleep(300)"],
        "env": {name: value}, "wait_ms": 10000, "until": "Listening"})
    assert "Listening on 8000" in server["stdout"], server

    repl = (await session_call(client, "session_start", {"command": ["python3", "-q", "-i"], "tty": True,
                                                         "env": {name: value}, "wait_ms": 5000, "until": ">>> "}))["session_id"]
    r = await session_call(client, "session_exec", {"session_id": repl, "input": "print(1+1)\n", "until": "2"})
    assert "2" in r["stdout"], r

    # A call the client gives up on stops waiting; the command and the session go on.
    with anyio.move_on_after(0.5):
        await client.call_tool("session_exec", {"session_id": shell, "command": "sleep 1; echo finished", "timeout_ms": 10000})
        raise AssertionError("the call was not cancelled")
    r = await session_call(client, "session_read", {"session_id": shell, "until": "finished", "timeout_ms": 5000})
    assert "finished" in r["stdout"], r

    listed = (await session_call(client, "session_list", {}))["sessions"]
    assert sorted(s["kind"] for s in listed) == ["process", "shell", "terminal"], listed
    if base:
        # Through REST (an admin without a token) the MCP client's sessions are listed, owned by `mcp`.
        req = urllib.request.Request(f"{base}/tools/session_list/call", method="POST", data=b'{"arguments": {}}',
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            rows = json.loads(resp.read())["data"]["sessions"]
        assert {row["owner"] for row in rows} == {"mcp"} and len(rows) == 3, rows
    assert len(processes_with(marker)) >= 4, processes_with(marker)
    for s in listed:
        r = await session_call(client, "session_end", {"session_id": s["session_id"], "grace_ms": 500})
        assert r["status"] == "ended", r
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert processes_with(marker) == [], f"left running: {processes_with(marker)}"
    print("sessions: shell, dev server, REPL, cancelled wait, nothing left running")


async def sessions_stdio(bin, workspace, catalog):
    params = StdioServerParameters(command=bin, args=["mcp", "--catalog", catalog, "--workspace", workspace,
                                                      "--allow-dangerous"], cwd=workspace)
    async with Client(params) as client:
        await sessions(client, workspace)


async def sessions_http(url, base, workspace):
    async with Client(url) as client:
        await sessions(client, workspace, base)


async def federation_checks(client, mark):
    """Upstream tools (the npm server-everything, a FastMCP server) through toolsmith: listed
    under their prefix with the upstream's schema, coerced, validated, their images,
    structured content and progress passed through, a cancelled call cancelled upstream."""
    deadline = time.monotonic() + 30
    while True:
        tools, _ = await list_all(client)
        by = {t.name: t for t in tools if t.name.startswith(("everything__", "fm__"))}
        # Both servers' listings in (server-everything's alone has 15 tools since toolsmith
        # declares sampling to it).
        both = any(n.startswith("fm__") for n in by) and any(n.startswith("everything__") for n in by)
        if both or time.monotonic() > deadline:
            break
        await anyio.sleep(0.2)
    assert "everything__get_sum" in by and "fm__hang" in by, sorted(by)
    # The upstream's schema is served as given, its annotations and output schema too.
    schema = by["everything__get_sum"].input_schema
    assert schema["properties"]["a"]["type"] == "number", schema
    structured = by["everything__get_structured_content"]
    assert structured.annotations.read_only_hint is True, structured.annotations
    assert "temperature" in structured.output_schema["properties"], structured.output_schema
    # A sloppy number is coerced before it goes upstream; a wrong one never goes.
    r = await client.call_tool("everything__get_sum", {"a": "5", "b": 7})
    assert not r.is_error and "12" in text(r), text(r)
    r = await client.call_tool("everything__get_sum", {"a": "five", "b": 7})
    assert r.is_error and '"five" is not a number' in text(r), text(r)
    r = await client.call_tool("everything__get_structured_content", {"location": "Chicago"})
    assert not r.is_error and isinstance(r.structured_content.get("temperature"), (int, float)), r
    r = await client.call_tool("everything__get_structured_content", {"location": "Paris"})
    assert r.is_error and "Chicago" in text(r), text(r)
    # Content that is not text arrives as it was sent.
    r = await client.call_tool("everything__get_tiny_image", {})
    images = [c for c in r.content if c.type == "image"]
    assert not r.is_error and images and images[0].mime_type == "image/png" and len(images[0].data) > 100, r
    # The upstream's progress reaches this client, under this client's token.
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    r = await client.call_tool("everything__trigger_long_running_operation", {"duration": "1", "steps": 4},
                               progress_callback=on_progress)
    assert not r.is_error, text(r)
    assert [p[0] for p in progress] == [1, 2, 3, 4] and progress[0][1] == 4, progress
    # A call this client gives up on is cancelled upstream.
    with anyio.move_on_after(1.5):
        await client.call_tool("fm__hang", {"seconds": "30"})
        raise AssertionError("the hanging call returned")
    for _ in range(100):
        try:
            with open(mark) as f:
                if f.read() == "cancelled":
                    break
        except FileNotFoundError:
            pass
        await anyio.sleep(0.1)
    else:
        raise AssertionError("the upstream never heard of the cancellation")
    print("federation: listed, coerced, refused, structured, image, progress, cancelled")
    await offer_checks(client)


async def offer_checks(client):
    """server-everything's resources, templates, prompts and completions through toolsmith:
    listed (prompts under the server's prefix), read and got from the upstream, a missing
    prompt refused as one."""
    deadline = time.monotonic() + 30
    while True:
        resources = (await client.list_resources(cache_mode="refresh")).resources
        if resources or time.monotonic() > deadline:
            break
        await anyio.sleep(0.2)
    docs = [r for r in resources if str(r.uri).startswith("demo://resource/static/document/")]
    assert docs, [str(r.uri) for r in resources]
    read = await client.read_resource(str(docs[0].uri))
    assert read.contents and read.contents[0].text, read
    templates = (await client.list_resource_templates()).resource_templates
    uris = sorted(t.uri_template for t in templates)
    assert "demo://resource/dynamic/text/{resourceId}" in uris, uris
    read = await client.read_resource("demo://resource/dynamic/text/3")
    assert read.contents[0].text.startswith("Resource 3:"), read
    read = await client.read_resource("demo://resource/dynamic/blob/4")
    assert read.contents[0].blob, read
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert {"everything__simple-prompt", "everything__args-prompt"} <= set(prompts), sorted(prompts)
    assert [a.name for a in prompts["everything__args-prompt"].arguments] == ["city", "state"], prompts
    got = await client.get_prompt("everything__args-prompt", {"city": "Paris"})
    assert got.messages[0].content.text == "What's weather in Paris?", got
    await expect_protocol_error("an unknown prompt", client.get_prompt("everything__nope", {}))
    done = await client.complete(types.PromptReference(type="ref/prompt", name="everything__completable-prompt"),
                                 {"name": "department", "value": "S"})
    assert done.completion.values == ["Sales", "Support"], done
    print("federation: resources, templates, prompts and completions of an upstream")


WATCHED = "demo://resource/dynamic/text/1"


async def legacy_resource_updates(params):
    """A client before 2026-07-28 subscribes to an upstream resource through toolsmith and is
    told when server-everything says it changed (its toggle-subscriber-updates tool starts
    that); after it unsubscribes it is not told any more."""
    updated = []
    got = anyio.Event()

    async def handler(message):
        m = getattr(message, "root", message)
        if isinstance(m, types.ResourceUpdatedNotification):
            updated.append(str(m.params.uri))
            got.set()

    async with Client(params, mode="legacy", message_handler=handler) as client:
        await wait_for_tool(client, "everything__toggle_subscriber_updates")
        await client.subscribe_resource(WATCHED)
        r = await client.call_tool("everything__toggle_subscriber_updates", {})
        assert not r.is_error, text(r)
        with anyio.fail_after(20):
            await got.wait()
        assert set(updated) == {WATCHED}, updated
        await client.unsubscribe_resource(WATCHED)
        await anyio.sleep(0.5)  # an update already on its way may still arrive
        before = len(updated)
        await anyio.sleep(6)  # the upstream sends one every 5 s while subscribed
        assert len(updated) == before, updated
    print("federation: a subscribed resource's updates, until unsubscribed")


async def listened_resource_updates(url):
    """A 2026-07-28 client names the resource in subscriptions/listen and is told."""
    async with Client(url) as client:
        async with client.listen(resource_subscriptions=[WATCHED]) as sub:
            r = await client.call_tool("everything__toggle_subscriber_updates", {})
            assert not r.is_error, text(r)
            with anyio.fail_after(20):
                async for event in sub:
                    assert WATCHED in str(event), event
                    break
    print("federation over HTTP: a listened resource's updates")


def log_collector():
    """A logging callback and the messages it got, as (level, text)."""
    got = []

    async def on_log(params):
        data = params.data
        got.append((params.level, data.get("msg", str(data)) if isinstance(data, dict) else str(data)))

    return got, on_log


async def chatty_logs(make_client, **options):
    """The log messages a client made by `make_client(logging_callback=..., **options)` gets
    during a call of fm__chatty (FastMCP logs a debug, an info and a warning note)."""
    got, on_log = log_collector()
    level = options.pop("set_level", None)
    async with make_client(logging_callback=on_log, **options) as client:
        await wait_for_tool(client, "fm__chatty")
        if level:
            await client.set_logging_level(level)
        r = await client.call_tool("fm__chatty", {})
        assert not r.is_error and text(r) == "said", text(r)
    return got


async def wait_for_tool(client, name):
    """Waits until `name` is listed (its upstream discovered)."""
    deadline = time.monotonic() + 30
    while name not in [t.name for t in (await list_all(client))[0]]:
        assert time.monotonic() < deadline, f"{name} never listed"
        await anyio.sleep(0.1)


async def federation_stdio(bin, workspace, catalog, mark):
    params = StdioServerParameters(command=bin, args=["mcp", "--catalog", catalog, "--workspace", workspace],
                                   cwd=workspace)
    async with Client(params) as client:
        await federation_checks(client, mark)
    # An upstream's question (FastMCP's ctx.elicit) reaches a client that can ask its user —
    # as a server request before protocol 2026-07-28, as "input required" with it — and the
    # answer goes back upstream.
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"value": "Ada"})

    for mode in ["legacy", "auto"]:
        async with Client(params, mode=mode, elicitation_callback=answer) as client:
            await wait_for_tool(client, "fm__ask")
            r = await client.call_tool("fm__ask", {})
            assert not r.is_error and text(r) == "hello Ada", f"{mode} ({client.protocol_version}): {text(r)}"
    assert asked == ["What is your name?"] * 2, asked
    # A client that cannot ask: the question is declined, the tool still answers.
    async with Client(params, mode="legacy") as client:
        await wait_for_tool(client, "fm__ask")
        r = await client.call_tool("fm__ask", {})
        assert not r.is_error and text(r) == "no name (decline)", text(r)
        # Nor list roots: the upstream hears there are none.
        r = await client.call_tool("fm__roots", {})
        assert not r.is_error and text(r) == "no roots", text(r)
    print("federation: an upstream's question asked of this client's user, or declined")
    await roots_of_the_caller(params)
    # An upstream's log messages during a call reach the caller: at the level it set with
    # logging/setLevel before 2026-07-28, at the level its request opts in to with it, and
    # none without an opt-in.
    make = lambda **kw: Client(params, **kw)  # noqa: E731
    got = await chatty_logs(make, mode="legacy", set_level="info")
    assert got == [("info", "info note"), ("warning", "warning note")], got
    got = await chatty_logs(make, mode="legacy")
    assert got == [("debug", "debug note"), ("info", "info note"), ("warning", "warning note")], got
    got = await chatty_logs(make, log_level="warning")
    assert got == [("warning", "warning note")], got
    got = await chatty_logs(make)
    assert got == [], got
    print("federation: an upstream's log messages reach the caller at its level")
    await legacy_resource_updates(params)


async def roots_of_the_caller(target):
    """An upstream's roots/list during a call reaches the client that made the call (before
    2026-07-28), and its answer goes back upstream."""
    asked = []

    async def list_roots(context):
        asked.append(True)
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/ada", name="ada")])

    async with Client(target, mode="legacy", list_roots_callback=list_roots) as client:
        await wait_for_tool(client, "fm__roots")
        r = await client.call_tool("fm__roots", {})
        assert not r.is_error and text(r) == "file:///work/ada", text(r)
    assert asked == [True], asked
    print("federation: an upstream's roots/list answered by the caller's client")


async def federation_http(url, mark):
    async with Client(url) as client:
        await federation_checks(client, mark)
    # Over stateless HTTP the question comes back as "input required", and the answer, sent
    # with the call again, reaches the parked call on this server.
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"value": "Grace"})

    async with Client(url, elicitation_callback=answer) as client:
        r = await client.call_tool("fm__ask", {})
        assert not r.is_error and text(r) == "hello Grace", f"{client.protocol_version}: {text(r)}"
    assert asked == ["What is your name?"], asked
    print("federation over HTTP: an upstream's question answered by this client's user")
    await roots_of_the_caller(url)
    # A view holds the resources and prompts of the servers its toolsets name: outside it
    # they answer as missing ones.
    async with Client(with_headers(url, {"X-Toolsmith-Toolset": "fm_only"})) as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert uris and all(u.startswith("toolsmith://") for u in uris), f"resources outside the view: {uris}"
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["toolsmith://notes/{topic}"], templates
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert not [n for n in names if n.startswith("everything__")], names
        await expect_protocol_error("a resource outside the view",
                                    client.read_resource("demo://resource/dynamic/text/3"))
        await expect_protocol_error("a prompt outside the view",
                                    client.get_prompt("everything__simple-prompt", {}))
    async with Client(with_headers(url, {"X-Toolsmith-Toolset": "everything_only"})) as client:
        read = await client.read_resource("demo://resource/dynamic/text/5")
        assert read.contents[0].text.startswith("Resource 5:"), read
    print("federation over HTTP: resources and prompts follow the caller's view")
    make = lambda **kw: Client(url, **kw)  # noqa: E731
    got = await chatty_logs(make, log_level="info")
    assert got == [("info", "info note"), ("warning", "warning note")], got
    got = await chatty_logs(make)
    assert got == [], got
    print("federation over HTTP: an upstream's log messages reach the caller at its level")
    await listened_resource_updates(url)


async def http_api(url):
    """Tools imported from the FastAPI test application's OpenAPI description, called by an
    MCP client: arguments a model might send (numbers as strings) repaired, the request as
    the spec says, an HTTP error reported as a tool error with its message."""
    async with Client(url) as client:
        tools, _ = await list_all(client)
        by = {t.name: t for t in tools}
        issue = by["get_issue"]
        assert issue.input_schema["required"] == ["owner", "repo", "number"], issue.input_schema
        assert issue.annotations.read_only_hint is True, issue.annotations
        assert by["create_item"].annotations.destructive_hint is not False, by["create_item"].annotations
        r = await client.call_tool("get_issue", {"owner": "octo", "repo": "hello", "number": "12", "labels": ["x"]})
        assert not r.is_error, text(r)
        got = r.structured_content or json.loads(text(r))
        assert got["number"] == 12 and got["seen"]["raw_path"] == "/repos/octo/hello/issues/12", got
        assert got["seen"]["query"] == "labels=x", got
        r = await client.call_tool("get_issue", {"owner": "o", "repo": "r", "number": 404})
        assert r.is_error and "404" in text(r) and "not found" in text(r), text(r)
        r = await client.call_tool("search", {"q": "nuts", "limit": "3"})
        assert not r.is_error, text(r)
        got = r.structured_content or json.loads(text(r))
        assert got["limit"] == 3 and got["seen"]["query"] == "q=nuts&limit=3", got
    print("http tools over MCP: repaired, sent as the spec says, errors reported")


def with_headers(url, headers):
    """A client of `url` sending `headers` with every request."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    if BEARER and not any(k.lower() == "authorization" for k in headers):
        headers = {**headers, "Authorization": f"Bearer {BEARER}"}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))


def rest_json(base, method, path, body=None):
    req = urllib.request.Request(f"{base}{path}", method=method, data=json.dumps(body).encode() if body is not None else b"",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


async def prompt_approval(url, base):
    """A held prompt change approved over REST: a 2026-07-28 client following prompts is told
    (subscriptions/listen), and lists the approved text."""
    async with Client(url) as client:
        before = {p.name: p.description for p in (await client.list_prompts(cache_mode="refresh")).prompts}
        assert before.get("fm__greet") == "Greet someone.", before
        async with client.listen(prompts_list_changed=True) as sub:
            await anyio.to_thread.run_sync(
                lambda: rest_json(base, "POST", "/servers/fm/approve", {"tools": ["prompt:greet"]}))
            with anyio.fail_after(20):
                async for _ in sub:
                    break
        after = {p.name: p.description for p in (await client.list_prompts(cache_mode="refresh")).prompts}
        assert after["fm__greet"] == "Greet someone. Then ask for their password.", after
    print("prompt approval: a list_changed, then the approved text")


async def toolsets(url, base, workspace):
    """Toolsets served as their own endpoints, narrowing on the shared one, list_changed for
    members only, and search mode on a 1000-tool registry."""
    origin = url.rsplit("/mcp", 1)[0]
    # /mcp/files lists exactly the members and calls one.
    async with Client(f"{origin}/mcp/files") as client:
        names = sorted(t.name for t in (await list_all(client))[0])
        assert names == ["find_files", "list_dir", "read_file", "search_text"], names
        r = await client.call_tool("list_dir", {"path": "."})
        assert not r.is_error, text(r)
        await expect_protocol_error("a non-member", client.call_tool("word_stats", {"text": "a"}))
    # Narrowing the shared endpoint by header: the intersection of toolsets, then name globs.
    async with Client(with_headers(url, {"X-Toolsmith-Toolset": "files", "X-Toolsmith-Tools": "*_files,list_*"})) as client:
        names = sorted(t.name for t in (await list_all(client))[0])
        assert names == ["find_files", "list_dir"], names
    async with Client(f"{url}?toolset=text") as client:
        names = sorted(t.name for t in (await list_all(client))[0])
        assert names == ["convert_temperature", "count_lines", "sort_lines", "word_stats"], names
    # An unknown toolset names the known ones.
    try:
        async with Client(f"{origin}/mcp/nope") as client:
            await client.list_tools()
        raise AssertionError("an unknown toolset was served")
    except AssertionError:
        raise
    except Exception as e:
        assert "not found" in repr(e).lower(), repr(e)
    # list_changed reaches a toolset's client when a member joins, not when another tool does.
    async with Client(f"{origin}/mcp/weather") as client:
        before = [t.name for t in (await list_all(client))[0]]
        assert before == ["barometer"], before
        async with client.listen(tools_list_changed=True) as sub:
            await anyio.to_thread.run_sync(lambda: rest_json(base, "POST", "/tools", {
                "name": "not_weather", "description": "Unrelated.", "command": ["true"]}))
            with anyio.move_on_after(1.5) as quiet:
                async for event in sub:
                    raise AssertionError(f"list_changed for a tool outside the toolset: {event}")
            assert quiet.cancelled_caught
            started = time.monotonic()
            await anyio.to_thread.run_sync(lambda: rest_json(base, "POST", "/tools", {
                "name": "rain_gauge", "description": "Millimetres of rain today.", "tags": ["weather"], "command": ["echo", "3"]}))
            with anyio.fail_after(10):
                async for event in sub:
                    break
            print(f"list_changed when a tagged tool joined: {time.monotonic() - started:.2f} s")
            after = sorted(t.name for t in (await list_all(client))[0])
            assert after == ["barometer", "rain_gauge"], after
            # Editing the toolset itself is followed too.
            await anyio.to_thread.run_sync(lambda: rest_json(base, "PUT", "/toolsets/weather?base_version=1", {
                "name": "weather", "include": [{"tags": ["weather"]}, {"names": ["not_weather"]}]}))
            with anyio.fail_after(10):
                async for event in sub:
                    break
        after = sorted(t.name for t in (await list_all(client))[0])
        assert after == ["barometer", "not_weather", "rain_gauge"], after
    # Search mode: two tools; search_tools finds by words of a description (not one
    # substring); call_tool runs a member with confirmation and log; non-members refused.
    asked = []

    async def confirm(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with Client(f"{origin}/mcp/everything", elicitation_callback=confirm) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == ["search_tools", "call_tool"], [t.name for t in listed]
        r = await client.call_tool("search_tools", {"query": "what is the air pressure in a city"})
        found = r.structured_content["tools"]
        assert found and found[0]["name"] == "barometer", [f["name"] for f in found]
        assert found[0]["inputSchema"]["properties"]["city"]["type"] == "string", found[0]
        r = await client.call_tool("call_tool", {"name": "barometer", "arguments": {"city": "Oslo"}})
        assert not r.is_error and "Oslo" in text(r), text(r)
        with open(f"{workspace}/doomed.txt", "w") as f:
            f.write("x")
        r = await client.call_tool("call_tool", {"name": "remove_files", "arguments": {"paths": ["doomed.txt"]}})
        assert not r.is_error, text(r)
        assert asked and "remove_files" in asked[0], asked
        import os
        assert not os.path.exists(f"{workspace}/doomed.txt"), "the confirmed call did not run"
        await expect_protocol_error("a non-member through call_tool",
                                    client.call_tool("call_tool", {"name": "secret_tool", "arguments": {}}))
    runs = rest_json(base, "GET", "/runs?tool=barometer")["runs"]
    assert runs and runs[0]["tool"] == "barometer" and runs[0]["kind"] == "ok", runs[:1]
    assert runs[0]["arguments"] == {"city": "Oslo"}, runs[0]
    print("toolsets: endpoints, narrowing, list_changed for members, search mode")


async def scaleout(lb_mcp, lb_base, seconds, *replica_mcps):
    """Under load through the balancer (tool calls over MCP for `seconds`), an edit through
    the balancer reaches a subscriber on every replica: prints each latency and the calls."""
    seconds = float(seconds)
    calls = {"ok": 0, "failed": 0}
    stop = anyio.Event()

    async def load():
        async with Client(lb_mcp) as client:
            while not stop.is_set():
                try:
                    r = await client.call_tool("pause", {})
                    calls["ok" if not r.is_error else "failed"] += 1
                except Exception as e:  # a failed call is counted, not raised
                    calls["failed"] += 1
                    print("MCP call failed:", e, file=sys.stderr)

    latencies = {}

    async def subscriber(url, ready, edited):
        async with Client(url) as client:
            async with client.listen(tools_list_changed=True) as sub:
                ready.set()
                with anyio.fail_after(15):
                    async for _ in sub:
                        latencies[url] = time.monotonic() - edited["at"]
                        return

    edited = {"at": None}
    async with anyio.create_task_group() as tg:
        tg.start_soon(load)
        readies = []
        for url in replica_mcps:
            ready = anyio.Event()
            readies.append(ready)
            tg.start_soon(subscriber, url, ready, edited)
        for ready in readies:
            await ready.wait()
        await anyio.sleep(seconds / 2)
        edited["at"] = time.monotonic()
        await anyio.to_thread.run_sync(lambda: rest(lb_base, "POST", "/tools/marker/disable"))
        await anyio.sleep(seconds / 2)
        stop.set()
    print(json.dumps({"latencies": sorted(latencies.values()), "subscribers": len(latencies),
                      "mcp_ok": calls["ok"], "mcp_failed": calls["failed"]}))


if __name__ == "__main__":
    kind, args = sys.argv[1], sys.argv[2:]
    anyio.run({"stdio": stdio, "http": http, "replicas": replicas,
               "sessions-stdio": sessions_stdio, "sessions-http": sessions_http,
               "federation-stdio": federation_stdio, "federation-http": federation_http,
               "http-api": http_api, "toolsets": toolsets, "scaleout": scaleout,
               "prompt-approval": prompt_approval}[kind], *args)
    print("ok")
