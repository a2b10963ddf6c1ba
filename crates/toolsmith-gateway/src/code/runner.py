"""Code mode's runner: runs one program (the `code` argument) in the warm Python runtime, under
the sandbox, and gives it the tools of its caller's view as functions.

`from tools.github import search_issues` (or `import tools`) asks the gateway for the module's
functions and each function's typed stub as it is first used; a stub's body calls
`toolsmith_runtime.call` (or `acall`, awaitable, for `asyncio.gather`), which sends the call
to the gateway as one message line on stdout and reads the answer from stdin: the gateway runs
it through its call path as the program's caller (view, argument repair and checks,
confirmation, rate limits, run log). The program's own output (print) is kept, at most
OUTPUT_CAP characters; the value of its last expression is its result. When it ends, one JSON
value is printed: {"output", "cut", "value", "error"}, and the message `done`: the gateway
answers then, and kills what is left of the process.
"""

import ast
import builtins
import io
import json
import os
import sys
import traceback
import types
from importlib.machinery import ModuleSpec

OUTPUT_CAP = 65536
MARK = "\x1etoolsmith "

# The conversation keeps stdin and stdout to itself: what the program writes on fd 1 goes to
# stderr, and it reads nothing on fd 0.
_wire_in = os.dup(0)
_wire_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)

_buffer = b""
_replies: dict = {}
_futures: dict = {}
_next_id = 0
_reading_loop = None


def _line() -> bytes:
    """The first line of arguments: read before anything else."""
    global _buffer
    while b"\n" not in _buffer:
        chunk = os.read(_wire_in, 65536)
        if not chunk:
            break
        _buffer += chunk
    line, _, _buffer = _buffer.partition(b"\n")
    return line


def _send(message: dict) -> int:
    global _next_id
    _next_id += 1
    message["id"] = _next_id
    _wire_out.write(MARK + json.dumps(message) + "\n")
    _wire_out.flush()
    return _next_id


def _dispatch() -> None:
    """Hands each whole reply line in the buffer to its waiter."""
    global _buffer
    while b"\n" in _buffer:
        line, _, _buffer = _buffer.partition(b"\n")
        if not line.strip():
            continue
        reply = json.loads(line)
        future = _futures.pop(reply.get("id"), None)
        if future is not None and not future.done():
            future.set_result(reply)
        else:
            _replies[reply.get("id")] = reply


def _read_more() -> None:
    global _buffer
    chunk = os.read(_wire_in, 65536)
    if not chunk:
        raise ConnectionError("the gateway stopped answering")
    _buffer += chunk
    _dispatch()


def _request(message: dict) -> dict:
    rid = _send(message)
    while rid not in _replies:
        _read_more()
    return _replies.pop(rid)


class ToolError(Exception):
    """A tool call that failed: `kind` (invalid_arguments, needs_confirmation, not_found, …),
    `message`, and for invalid arguments each `problems` entry ({"pointer", "message"})."""

    def __init__(self, tool: str, error: dict):
        self.tool = tool
        self.kind = error.get("kind", "error")
        self.problems = error.get("problems") or []
        self.message = error.get("message", "")
        lines = [f"{tool}: {self.kind}: {self.message}"]
        lines += [f"  {p.get('pointer') or '/'}: {p.get('message')}" for p in self.problems]
        super().__init__("\n".join(lines))


def _arguments(args: dict, optional: tuple) -> dict:
    return {k: v for k, v in args.items() if not (k in optional and v is None)}


def _answer(tool: str, reply: dict):
    if "error" in reply:
        raise ToolError(tool, reply["error"])
    return reply.get("ok")


def call(tool: str, args: dict, optional: tuple = ()):
    """Calls `tool` (its served name) with `args` through the gateway; its result as Python
    values, or ToolError."""
    return _answer(tool, _request({"op": "call", "tool": tool, "arguments": _arguments(args, optional)}))


def _on_readable() -> None:
    try:
        _read_more()
    except ConnectionError as e:
        for future in list(_futures.values()):
            if not future.done():
                future.set_exception(e)
        _futures.clear()


async def acall(tool: str, args: dict, optional: tuple = ()):
    """`call`, awaitable: calls made at once (asyncio.gather) run at once."""
    import asyncio

    global _reading_loop
    loop = asyncio.get_running_loop()
    if _reading_loop is not loop:
        loop.add_reader(_wire_in, _on_readable)
        _reading_loop = loop
    future = loop.create_future()
    rid = _send({"op": "call", "tool": tool, "arguments": _arguments(args, optional)})
    if rid in _replies:
        future.set_result(_replies.pop(rid))
    else:
        _futures[rid] = future
    return _answer(tool, await future)


runtime = types.ModuleType("toolsmith_runtime")
runtime.call, runtime.acall, runtime.ToolError = call, acall, ToolError
sys.modules["toolsmith_runtime"] = runtime


class Tools:
    """`tools` and `tools.<prefix>` (an import finder and loader): the caller's tools, each
    function loaded when first used."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "tools" or fullname.startswith("tools."):
            return ModuleSpec(fullname, self, is_package=fullname == "tools")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        prefix = "" if module.__name__ == "tools" else module.__name__[len("tools."):]
        # `tools` is always there (a round trip saved); `tools.<prefix>` only with a tool.
        found = _request({"op": "module", "module": prefix}) if prefix else {}
        if "error" in found:
            raise ModuleNotFoundError(found["error"].get("message", f"no module {module.__name__}"), name=module.__name__)
        from typing import Any, Literal, Required, TypedDict

        module.__dict__.update(
            {"Any": Any, "Literal": Literal, "Required": Required, "TypedDict": TypedDict, "_call": call, "_acall": acall}
        )

        def functions() -> list:
            # Asked for only by dir() and `import *`: a module can hold a whole API's tools.
            listed = _request({"op": "module", "module": prefix, "functions": True})
            return listed.get("functions", [])

        def load(name: str):
            if name == "__all__":
                names = module.__dict__["__all__"] = functions()
                return names
            if name.startswith("__"):
                raise AttributeError(name)
            stub = _request({"op": "stub", "module": prefix, "name": name})
            if "error" in stub:
                raise AttributeError(stub["error"].get("message", f"{module.__name__} has no tool {name}"))
            exec(compile(stub["source"], f"<{module.__name__}.{name}>", "exec"), module.__dict__)
            return module.__dict__[name]

        module.__getattr__ = load
        module.__dir__ = lambda: sorted(functions())


sys.meta_path.insert(0, Tools())


class Output(io.TextIOBase):
    """The program's print: kept up to OUTPUT_CAP characters, the rest counted."""

    def __init__(self):
        self.parts: list = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = OUTPUT_CAP - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)


def plain(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def main() -> None:
    code = json.loads(_line() or b"{}").get("code", "")
    out = Output()
    sys.stdout = out
    value = error = None
    try:
        tree = ast.parse(code, "<program>", "exec")
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            tree.body[-1] = ast.Assign(targets=[ast.Name("__value__", ast.Store())], value=last.value)
            ast.fix_missing_locations(tree)
        compiled = compile(tree, "<program>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        scope = {"__name__": "__main__", "__builtins__": builtins}
        ran = eval(compiled, scope)
        if isinstance(ran, types.CoroutineType):  # the program awaits at its top level
            import asyncio

            asyncio.run(ran)
        value = scope.get("__value__")
    except BaseException as e:  # the program's own failure is its result
        frames = traceback.extract_tb(e.__traceback__)
        shown = [f for f in frames if f.filename.startswith("<")]
        error = "".join(traceback.format_list(shown) + traceback.format_exception_only(type(e), e))
    sys.stdout = sys.__stdout__
    note = f"\n…[{out.dropped} more characters cut]" if out.dropped else ""
    result = {"output": "".join(out.parts) + note, "cut": out.dropped > 0, "value": plain(value), "error": error}
    for stream in (sys.stderr, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass
    # The result is the one JSON value on the real stdout (beside the messages); then the
    # program says it is done, and the gateway answers without waiting for its exit.
    _wire_out.write(json.dumps(result) + "\n" + MARK + "done\n")
    _wire_out.flush()


main()
