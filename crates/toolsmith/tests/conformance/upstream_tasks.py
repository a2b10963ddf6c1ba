"""The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of the conformance upstream.

The suite's `tasks-*` scenarios (2026-07-28, extension: run and reported, not scored) call
tools by fixed names and follow the task they get back with `tasks/get`, `tasks/update` and
`tasks/cancel`. This module gives `upstream.py` those tools and methods, written from each
scenario's stated requirements: a task-supporting tool answers a client that declared the
extension with a task (`resultType: "task"`, flat) and runs on; `tasks/get` tells its state
(the result or error inlined once it ends, the open questions while it waits for input);
`tasks/update` delivers answers (acked empty; answered keys leave `inputRequests`);
`tasks/cancel` acks empty (a running task ends `cancelled`). A client that did not declare
the extension gets a plain result, or -32021 for a tool that needs a task. Tasks are kept in
memory for their `ttlMs`.
"""

import asyncio
import uuid
from datetime import datetime, timezone

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import Field

ID = "io.modelcontextprotocol/tasks"
TTL_MS = 300_000
POLL_MS = 100


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def text_result(value: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": error}


def elicit(message: str, field: str, kind: str = "string") -> dict:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


class Task:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.status = "working"
        self.created = self.updated = now()
        self.asked: dict = {}
        self.answers: dict = {}
        self.answered = asyncio.Event()
        self.result: dict | None = None
        self.error: dict | None = None
        self.runner: asyncio.Task | None = None

    def set(self, status: str) -> None:
        self.status = status
        self.updated = now()

    def envelope(self) -> dict:
        return {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_MS,
        }

    def detailed(self) -> dict:
        shown = {"resultType": "complete", **self.envelope()}
        if self.status == "input_required":
            shown["inputRequests"] = dict(self.asked)
        elif self.status == "completed" and self.result is not None:
            shown["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            shown["error"] = self.error
        return shown

    async def ask(self, requests: dict) -> dict:
        """Parks the task until every request is answered; the answers by key."""
        self.asked = dict(requests)
        self.answers = {}
        self.answered.clear()
        self.set("input_required")
        await self.answered.wait()
        self.set("working")
        return self.answers


TASKS: dict[str, Task] = {}


def start(work) -> dict:
    """Creates a task running `work(task)` (its result a tool result); the CreateTaskResult."""
    task = Task()
    TASKS[task.id] = task

    async def run() -> None:
        try:
            result = await work(task)
            task.result = result
            task.set("completed")
        except asyncio.CancelledError:
            task.set("cancelled")
        except Exception as e:  # a protocol-level failure of the task itself
            task.error = {"code": INTERNAL_ERROR, "message": str(e)}
            task.set("failed")

    task.runner = asyncio.get_running_loop().create_task(run())
    # Durable before it is answered: a tasks/get right after this finds it.
    return {"resultType": "task", **task.envelope()}


async def slow_compute(task: Task, seconds: float, label: str) -> dict:
    await asyncio.sleep(seconds)
    return text_result(f"computed {label} in {seconds}s")


async def failing_job(task: Task) -> dict:
    await asyncio.sleep(1)
    return text_result("the job failed", error=True)


async def protocol_error_job(task: Task) -> dict:
    await asyncio.sleep(0.2)
    raise RuntimeError("the job broke down")


async def confirm_delete(task: Task, filename: str) -> dict:
    got = await task.ask({"confirm": elicit(f"Delete {filename}?", "confirm", "boolean")})
    confirmed = (got.get("confirm") or {}).get("action") == "accept"
    return text_result(f"{'deleted' if confirmed else 'kept'} {filename}")


async def multi_input(task: Task) -> dict:
    got = await task.ask({"name": elicit("Your name?", "name"), "confirm": elicit("Go ahead?", "confirm", "boolean")})
    return text_result(f"answered {', '.join(sorted(got))}")


def declared(ctx, params) -> bool:
    """Whether the request's client declared the extension (its connection, or the request's
    own `_meta` capabilities)."""
    caps = ctx.session.client_capabilities
    if caps is not None and ID in (caps.extensions or {}):
        return True
    meta = (params.meta or {}) if hasattr(params, "meta") else {}
    per_request = (meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
    return ID in ((per_request.get("extensions") or {}) if isinstance(per_request, dict) else {})


# The tools a task may run: "optional" (a plain result for a client without the extension),
# "required" (-32021 for it).
SUPPORT = {
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
    "test_tool_with_task": "required",
}


class Tasks(Extension):
    identifier = ID

    def methods(self):
        return [
            MethodBinding("tasks/get", TaskRef, get),
            MethodBinding("tasks/update", TaskUpdate, update),
            MethodBinding("tasks/cancel", TaskRef, cancel),
        ]

    async def intercept_tool_call(self, params, ctx, call_next):
        support = SUPPORT.get(params.name)
        if support is None:
            return await call_next(ctx)
        if not declared(ctx, params):
            if support == "required":
                require_client_extension(ctx, ID)
            return await call_next(ctx)
        args = params.arguments or {}
        if params.name == "slow_compute":
            seconds = float(args.get("seconds", 0))
            label = str(args.get("label", ""))
            if seconds == 0:
                return await call_next(ctx)  # the immediate-result shortcut
            return start(lambda t: slow_compute(t, seconds, label))
        if params.name == "failing_job":
            return start(failing_job)
        if params.name == "protocol_error_job":
            return start(protocol_error_job)
        if params.name == "confirm_delete":
            filename = str(args.get("filename", "file"))
            return start(lambda t: confirm_delete(t, filename))
        if params.name == "multi_input":
            return start(multi_input)
        # test_tool_with_task: asks a name by "input required", then runs as a task.
        got = params.input_responses or {}
        answer = got.get("user_name")
        if answer is None:
            asked = {"user_name": elicit("What is your name?", "name")}
            return types.InputRequiredResult.model_validate({"resultType": "input_required", "inputRequests": asked})
        answer = answer.model_dump(by_alias=True, exclude_none=True) if hasattr(answer, "model_dump") else answer
        name = str((answer.get("content") or {}).get("name", "friend"))

        async def greet(task: Task) -> dict:
            await asyncio.sleep(0.2)
            return text_result(f"Hello, {name}! (from a task)")

        return start(greet)


class TaskRef(types.RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdate(types.RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict = Field(default_factory=dict, alias="inputResponses")


HEADER_MISMATCH = -32020


def find(ctx, task_id: str) -> Task:
    require_client_extension(ctx, ID)
    # SEP-2243 / SEP-2663: `Mcp-Name` carries the task id; the SDK's transport checks it for
    # tools, resources and prompts only.
    headers = getattr(ctx.request, "headers", None)
    named = headers.get("mcp-name") if headers is not None else None
    if named is not None and named.strip() != task_id:
        raise MCPError(HEADER_MISMATCH, f"Mcp-Name {named!r} does not match taskId {task_id!r}")
    task = TASKS.get(task_id)
    if task is None:
        raise MCPError(INVALID_PARAMS, f"no task {task_id!r}")
    return task


async def get(ctx, params: TaskRef) -> dict:
    return find(ctx, params.task_id).detailed()


async def update(ctx, params: TaskUpdate) -> dict:
    task = find(ctx, params.task_id)
    for key, answer in params.input_responses.items():
        if key in task.asked:
            task.answers[key] = answer
            del task.asked[key]
    if task.status == "input_required" and not task.asked:
        task.answered.set()
    return {"resultType": "complete"}


async def cancel(ctx, params: TaskRef) -> dict:
    task = find(ctx, params.task_id)
    if task.status in ("working", "input_required") and task.runner is not None:
        task.runner.cancel()
        try:
            await task.runner
        except asyncio.CancelledError:
            pass
        task.set("cancelled")
    return {"resultType": "complete"}


def register(server) -> None:
    """The tools of the tasks scenarios (their plain forms, for a client without the
    extension; the extension answers the others with a task)."""

    @server.tool(description="Greets by name (never a task).")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(description="Computes for `seconds` (a task for a client that takes tasks).")
    async def slow_compute(seconds: float = 0, label: str = "") -> str:
        await asyncio.sleep(seconds)
        return f"computed {label} in {seconds}s"

    @server.tool(description="A job that reports a tool error (needs a task).")
    def failing_job() -> str:
        raise RuntimeError("the job failed")

    @server.tool(description="A job that fails at the protocol level (a task).")
    def protocol_error_job() -> str:
        raise RuntimeError("the job broke down")

    @server.tool(description="Deletes a file once confirmed (a task that asks).")
    def confirm_delete(filename: str) -> str:
        return f"kept {filename} (no task, no confirmation)"

    @server.tool(description="Asks two things at once (a task that asks).")
    def multi_input() -> str:
        return "no task, nothing asked"

    @server.tool(description="Asks a name, then runs as a task (needs a task).")
    def test_tool_with_task() -> str:
        return "needs a task"
