"""The upstream MCP server the conformance run puts behind toolsmith.

The official conformance suite (`@modelcontextprotocol/conformance`) tests a *server*: each
scenario calls a tool, reads a resource or gets a prompt by a name the suite fixes and checks
the answer. toolsmith serves no such names of its own, so `.ci/conformance` runs `serve`
fronting this server (Streamable HTTP, `prefix: ""`) and points the suite at `serve`'s
`/mcp`: every scenario passes through the gateway. Written for toolsmith from the scenarios'
stated requirements, with the official Python SDK (`mcp`, as .ci/requirements.txt pins it).

Run: `python upstream.py PORT` (Streamable HTTP on 127.0.0.1:PORT/mcp, both protocol eras).
"""

import asyncio
import base64
import json
import sys
import uuid
from typing import Annotated

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

import upstream_tasks as tasks

# A 1x1 red PNG and a minimal WAV (44-byte header, one silent sample).
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64encode(
    b"RIFF" + (38).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    + b"data" + (2).to_bytes(4, "little") + b"\x00\x00"
).decode()

server = MCPServer("toolsmith-conformance-upstream", version="1.0.0", extensions=[tasks.Tasks()])
low = server._lowlevel_server  # the SDK's own request table, for the methods MCPServer leaves out


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


# ---- tools ---------------------------------------------------------------------------------


@server.tool(description="Answers with one text.")
def test_simple_text() -> list[types.ContentBlock]:
    return [text("This is a simple text response for testing.")]


@server.tool(description="Answers with an image.")
def test_image_content() -> list[types.ContentBlock]:
    return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool(description="Answers with audio.")
def test_audio_content() -> list[types.ContentBlock]:
    return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool(description="Answers with an embedded resource.")
def test_embedded_resource() -> list[types.ContentBlock]:
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]


@server.tool(description="Answers with text, an image and a resource.")
def test_multiple_content_types() -> list[types.ContentBlock]:
    return [
        text("Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text='{"test":"data","value":123}',
            ),
        ),
    ]


@server.tool(description="Logs three messages while it runs.")
async def test_tool_with_logging(ctx: Context) -> str:
    for i, message in enumerate(
        ["Tool execution started", "Tool processing data", "Tool execution completed"]
    ):
        if i:
            await asyncio.sleep(0.05)
        await ctx.request_context.session.send_log_message(
            level="info",
            data=message,
            logger="conformance-upstream",
            related_request_id=ctx.request_id,
        )
    return "Tool with logging executed successfully"


@server.tool(description="Reports progress three times while it runs.")
async def test_tool_with_progress(ctx: Context) -> str:
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"step {step}")
        await asyncio.sleep(0.05)
    return "Progress reported"


@server.tool(description="Echoes a region its client mirrors into the Mcp-Param-Region header (SEP-2243).")
def test_custom_header(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    return f"region {region}"


@server.tool(description="Always fails.")
def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


def modern(ctx: Context) -> bool:
    """Whether the request is on the 2026-07-28 protocol, where a server asks by answering
    "input required" (before it, by a request of its own during the call)."""
    return (ctx.protocol_version or "") >= "2026-07-28"


@server.tool(description="Asks the client's model (sampling/createMessage).")
async def test_sampling(prompt: str, ctx: Context) -> str | types.InputRequiredResult:
    if modern(ctx):
        got = answers(ctx)
        if "sample" not in got:
            return ask_for({"sample": sample(prompt, 100)})
        said_back = (got["sample"].get("content") or {}).get("text", "")
        return f"LLM response: {said_back}"
    answer = await ctx.request_context.session.create_message(
        [types.SamplingMessage(role="user", content=text(prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = answer.content
    said_back = content.text if isinstance(content, types.TextContent) else str(content)
    return f"LLM response: {said_back}"


async def ask(ctx: Context, message: str, schema: dict) -> str | types.InputRequiredResult:
    if modern(ctx):
        got = answers(ctx)
        if "answer" not in got:
            request = {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}
            return ask_for({"answer": request})
        answer = got["answer"]
        return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"
    answer = await ctx.request_context.session.elicit_form(
        message, schema, related_request_id=ctx.request_id
    )
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool(description="Sends the user to a page (URL-mode elicitation), in either era.")
async def test_elicitation_url(ctx: Context) -> str | types.InputRequiredResult:
    url = "https://example.com/connect?state=s1"
    if modern(ctx):
        got = answers(ctx)
        if "visit" not in got:
            params = {"mode": "url", "message": "Connect your account", "url": url, "elicitationId": "e1"}
            return ask_for({"visit": {"method": "elicitation/create", "params": params}})
        return f"URL elicitation: {got['visit'].get('action')}"
    answer = await ctx.request_context.session.elicit_url(
        "Connect your account", url, "e1", related_request_id=ctx.request_id
    )
    return f"URL elicitation: {answer.action}"


@server.tool(description="Asks the user for a name and an email (elicitation).")
async def test_elicitation(message: str, ctx: Context) -> str | types.InputRequiredResult:
    return await ask(
        ctx,
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )


@server.tool(description="Asks the user with a default for every primitive type.")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str | types.InputRequiredResult:
    return await ask(
        ctx,
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verified", "default": True},
            },
        },
    )


@server.tool(description="Asks the user with every kind of enum.")
async def test_elicitation_sep1330_enums(ctx: Context) -> str | types.InputRequiredResult:
    return await ask(
        ctx,
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Untitled single-select",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Titled single-select",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Legacy titled enum",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Untitled multi-select",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Titled multi-select",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        },
    )


# ---- 2026-07-28: "input required" (SEP-2322) ----------------------------------------------
# A tool asks by answering "input required" and reads the answers from the call sent again.
# The SDK seals every requestState this server gives out and rejects one changed on the way.


def answers(ctx: Context) -> dict:
    """The call's `inputResponses`, as plain JSON."""
    given = ctx.input_responses or {}
    return {k: v.model_dump(by_alias=True, exclude_none=True) if hasattr(v, "model_dump") else v for k, v in given.items()}


def state(ctx: Context) -> dict:
    try:
        return json.loads(ctx.request_state or "{}")
    except ValueError:
        return {}


def elicit(message: str, field: str, kind: str = "string") -> dict:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def sample(prompt: str, max_tokens: int) -> dict:
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def ask_for(requests: dict, kept: dict | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult.model_validate(
        {
            "resultType": "input_required",
            "inputRequests": requests,
            **({"requestState": json.dumps({**kept, "nonce": uuid.uuid4().hex})} if kept else {}),
        }
    )


def said(answer: dict, field: str) -> str:
    return str((answer.get("content") or {}).get(field, ""))


@server.tool(description="Asks the user's name by answering input required.")
def test_input_required_result_elicitation(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if "user_name" in got:
        return f"Hello, {said(got['user_name'], 'name')}!"
    return ask_for({"user_name": elicit("What is your name?", "name")})


@server.tool(description="Asks the client's model by answering input required.")
def test_input_required_result_sampling(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if "sample_request" in got:
        content = got["sample_request"].get("content") or {}
        return f"Sampling result: {content.get('text', 'no response')}"
    return ask_for({"sample_request": sample("What is the capital of France?", 100)})


@server.tool(description="Asks the client's roots by answering input required.")
def test_input_required_result_list_roots(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if "roots_request" in got:
        return f"Found {len(got['roots_request'].get('roots') or [])} root(s)"
    return ask_for({"roots_request": ROOTS})


@server.tool(description="Asks for a confirmation and keeps a request state.")
def test_input_required_result_request_state(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if state(ctx).get("kind") == "request-state" and (got.get("confirm") or {}).get("content", {}).get("ok") is True:
        return "state-ok: requestState validated"
    return ask_for({"confirm": elicit("Please confirm", "ok", "boolean")}, {"kind": "request-state"})


@server.tool(description="Asks three things at once.")
def test_input_required_result_multiple_inputs(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if state(ctx).get("kind") == "multiple-inputs" and {"user_name", "greeting", "client_roots"} <= got.keys():
        greeting = (got["greeting"].get("content") or {}).get("text", "Hello there!")
        roots = len(got["client_roots"].get("roots") or [])
        return f"Name: {said(got['user_name'], 'name')}; Greeting: {greeting}; Roots: {roots}"
    return ask_for(
        {
            "user_name": elicit("What is your name?", "name"),
            "greeting": sample("Generate a greeting", 50),
            "client_roots": ROOTS,
        },
        {"kind": "multiple-inputs"},
    )


@server.tool(description="Asks twice, one question a round.")
def test_input_required_result_multi_round(ctx: Context) -> str | types.InputRequiredResult:
    got, kept = answers(ctx), state(ctx)
    if kept.get("round") == 1 and "step1" in got:
        name = said(got["step1"], "name")
        return ask_for({"step2": elicit("Step 2: What is your favorite color?", "color")}, {"round": 2, "name": name})
    if kept.get("round") == 2 and "step2" in got:
        return f"Multi-round complete for {kept.get('name', 'friend')} who likes {said(got['step2'], 'color')}"
    return ask_for({"step1": elicit("Step 1: What is your name?", "name")}, {"round": 1})


@server.tool(description="Asks for a confirmation; a changed request state is refused.")
def test_input_required_result_tampered_state(ctx: Context) -> str | types.InputRequiredResult:
    if state(ctx).get("kind") == "tamper-test" and "confirm" in answers(ctx):
        return "integrity-ok: state verified"
    return ask_for({"confirm": elicit("Please confirm", "ok", "boolean")}, {"kind": "tamper-test"})


@server.tool(description="Asks only what the client declared it can answer.")
def test_input_required_result_capabilities(ctx: Context) -> str | types.InputRequiredResult:
    got = answers(ctx)
    if got:
        return f"capabilities-ok: received {','.join(got)}"
    caps = ctx.client_capabilities
    requests = {}
    if caps is not None and caps.elicitation is not None:
        requests["elicit_input"] = elicit("Elicitation input", "value")
    if caps is not None and caps.sampling is not None:
        requests["sample_input"] = sample("Sample request", 50)
    if not requests:
        return "No supported capabilities declared"
    return ask_for(requests, {"kind": "capabilities-test"})


@server.tool(description="Needs the client's sampling capability (-32021 without it).")
def test_missing_capability(ctx: Context) -> str:
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "MissingRequiredClientCapabilityError",
            {"requiredCapabilities": {"sampling": {}}},
        )
    return "Success"


@server.tool(description="Logs one message, only to a request that asked for log messages.")
async def test_logging_tool(ctx: Context) -> str:
    await ctx.info("Diagnostic trace logging activated")
    return "Logging evaluated"


@server.tool(description="Reports progress on the call's own stream.")
async def test_streaming_elicitation(ctx: Context) -> str:
    await ctx.report_progress(50, 100)
    return "Streaming complete"


@server.tool(description="Says the tool list changed.")
async def test_trigger_tool_change(ctx: Context) -> str:
    await ctx.notify_tools_changed()
    return "Mutation triggered"


@server.tool(description="Says the prompt list changed.")
async def test_trigger_prompt_change(ctx: Context) -> str:
    await ctx.notify_prompts_changed()
    return "Mutation triggered"


# ---- resources -----------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static image.", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to.", mime_type="text/plain")
def watched() -> str:
    return "Watched resource content."


@server.resource("test://template/{id}/data", name="template", description="Data by id.", mime_type="application/json")
def template(id: str) -> str:
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


subscribed: set[str] = set()


async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    subscribed.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscribed.discard(str(params.uri))
    return types.EmptyResult()


low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


async def set_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

# ---- prompts -------------------------------------------------------------------------------


@server.prompt(description="A prompt without arguments.")
def test_simple_prompt() -> list[types.ContentBlock]:
    return [text("This is a simple prompt for testing.")]


@server.prompt(description="A prompt with two arguments.")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[types.ContentBlock]:
    return [text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(description="A prompt embedding a resource.")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[types.ContentBlock]:
    embedded = types.TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        types.EmbeddedResource(type="resource", resource=embedded),
        text("Please process the embedded resource above."),
    ]


@server.prompt(description="A prompt with an image.")
def test_prompt_with_image() -> list[types.ContentBlock]:
    return [
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        text("Please analyze the image above."),
    ]


@server.prompt(description="A prompt that asks for context by answering input required.")
def test_input_required_result_prompt(ctx: Context) -> list[types.ContentBlock] | types.InputRequiredResult:
    got = answers(ctx)
    if "user_context" in got:
        return [text(f"Prompt with context: {said(got['user_context'], 'context')}")]
    return ask_for({"user_context": elicit("What context should the prompt use?", "context")})


@server.completion()
async def complete(ref, argument, context) -> types.Completion:
    options = ["paris", "park", "party"]
    values = [v for v in options if v.startswith(argument.value)] if argument.value else options
    return types.Completion(values=values, total=len(values), has_more=False)


tasks.register(server)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 7800
    server.run("streamable-http", host="127.0.0.1", port=port)
