"""A scripted model on loopback, for running the real harnesses (Claude Code, pi, Codex) offline in tests.

It speaks the two wire formats those harnesses use, streaming as they ask:

* Anthropic Messages (`POST /v1/messages`, server-sent events): Claude Code and pi;
* OpenAI Responses (`POST /v1/responses`, server-sent events): Codex.

The model's decisions are a `Script`: the steps of the main conversation, each a shell command to run
through the harness's own shell tool, a named tool to call (an MCP tool), or the final text. Codex
offers its MCP tools in a Responses `namespace` tool (`mcp__resident` holding `knowledge_context`) and
expects the call back as a `function_call` naming both. Which step answers a request is the number
of tool results the conversation already holds, so a harness that retries a request gets the same
answer again. Requests that offer no tools (a harness asking for a title or a summary on the side) get
a short text. Every request body is kept (`ScriptedModel.requests`) for the test to read.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Script", "ScriptedModel", "Shell", "Text", "Tool"]

# The names the harnesses give their shell tool, in the order they are looked for in a request's tools.
SHELL_TOOLS = ("Bash", "bash", "shell", "shell_command", "exec_command", "local_shell")
SIDE_TEXT = "Noted."
# Marks a call of a named (MCP) tool rather than the shell, inside `_anthropic`.
_TOOL_CALL = "tool:"


@dataclass(frozen=True, slots=True)
class Shell:
    """Run `command` through the harness's shell tool."""

    command: str


@dataclass(frozen=True, slots=True)
class Text:
    """Answer with `text` and end the turn."""

    text: str


@dataclass(frozen=True, slots=True)
class Tool:
    """Call the offered tool whose name ends with `suffix` (an MCP tool: `mcp__resident__knowledge_context`)
    with `arguments`; when no such tool is offered, say so as text (the conversation then ends)."""

    suffix: str
    arguments: dict[str, Any]


Step = Shell | Text | Tool


@dataclass
class Script:
    """The main conversation's steps, in order; past the last, the last `Text` again."""

    steps: Sequence[Step]

    def step(self, tool_results: int) -> Step:
        if tool_results < len(self.steps):
            return self.steps[tool_results]
        return next((s for s in reversed(self.steps) if isinstance(s, Text)), Text("Done."))


@dataclass
class ScriptedModel:
    """The loopback server; use as a context manager. `url` is its base (no `/v1`)."""

    script: Script
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def url(self) -> str:
        assert self._server is not None, "the model is not serving"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def do_GET(self) -> None:
                # Model listings and update checks: nothing here, and a harness goes on without them.
                self._reply(404, {"error": {"type": "not_found", "message": "the scripted model serves no such path"}})

            def do_HEAD(self) -> None:
                self._reply(404, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?", 1)[0]
                with model._lock:
                    model.requests.append((path, body))
                if path.endswith("/messages/count_tokens"):
                    self._reply(200, {"input_tokens": 100})
                elif path.endswith("/messages"):
                    self._events(model._anthropic(body), stream=bool(body.get("stream")), body=body)
                elif path.endswith("/responses"):
                    self._events(model._responses(body), stream=bool(body.get("stream", True)), body=body)
                else:
                    self._reply(404, {"error": {"type": "not_found", "message": f"no route {path}"}})

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, events: list[tuple[str, dict[str, Any]]], *, stream: bool, body: dict[str, Any]) -> None:
                if not stream:
                    # The last event of each format carries the whole answer.
                    self._reply(200, events[-1][1].get("response") or model._whole_message(events))
                    return
                data = b"".join(
                    f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode() for name, payload in events
                )
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- deciding ---------------------------------------------------------------------------------

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):08d}"

    def _decide(self, tools: list[str], tool_results: int) -> tuple[Step, str | None]:
        shell = next((name for name in SHELL_TOOLS if name in tools), None)
        if shell is None:
            return Text(SIDE_TEXT), None
        return self.script.step(tool_results), shell

    # -- Anthropic Messages -----------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        tools = [tool.get("name", "") for tool in body.get("tools") or []]
        results = sum(
            1
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
        step, shell = self._decide(tools, results)
        if isinstance(step, Tool):
            offered = next((name for name in tools if name.endswith(step.suffix)), None)
            if offered is None:
                step, shell = Text(f"no tool ending in {step.suffix} was offered: {tools}"), None
            else:
                step, shell = Shell(json.dumps(step.arguments)), f"{_TOOL_CALL}{offered}"
        message_id = self._next_id("msg")
        start = {
            "type": "message", "id": message_id, "role": "assistant", "model": body.get("model", "scripted"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
        if isinstance(step, Shell) and shell is not None:
            name = shell.removeprefix(_TOOL_CALL)
            block: dict[str, Any] = {"type": "tool_use", "id": self._next_id("toolu"), "name": name, "input": {}}
            arguments = json.loads(step.command) if shell.startswith(_TOOL_CALL) else {"command": step.command}
            if shell == "Bash":
                arguments["description"] = "Call the runtime back"
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
            stop = "tool_use"
            content = [{**block, "input": arguments}]
        else:
            text = step.text if isinstance(step, Text) else SIDE_TEXT
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": text}
            stop = "end_turn"
            content = [{"type": "text", "text": text}]
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop", "message": {**start, "content": content, "stop_reason": stop}}),
        ]
        return events

    @staticmethod
    def _whole_message(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        message: dict[str, Any] = events[-1][1]["message"]
        return message

    # -- OpenAI Responses -------------------------------------------------------------------------

    def _responses(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        tools = [tool.get("name") or tool.get("type", "") for tool in body.get("tools") or []]
        # (namespace, name) of each tool a `namespace` tool holds: how Codex offers MCP tools.
        namespaced = [
            (tool.get("name", ""), inner.get("name", ""))
            for tool in body.get("tools") or [] if tool.get("type") == "namespace"
            for inner in tool.get("tools") or []
        ]
        items = body.get("input") or []
        results = sum(
            1 for item in items if isinstance(item, dict) and item.get("type", "").endswith("_call_output")
        )
        step, shell = self._decide(tools, results)
        response_id = self._next_id("resp")
        if isinstance(step, Tool):
            offered = next(((ns, name) for ns, name in namespaced if name.endswith(step.suffix)), None)
            flat = next((name for name in tools if name.endswith(step.suffix)), None)
            if offered is None and flat is None:
                step = Text(f"no tool ending in {step.suffix} was offered: {tools} {namespaced}")
        if isinstance(step, Tool):
            item: dict[str, Any] = {
                "type": "function_call", "id": self._next_id("fc"), "call_id": self._next_id("call"),
                "arguments": json.dumps(step.arguments), "status": "completed",
            }
            if offered is not None:
                item |= {"namespace": offered[0], "name": offered[1]}
            else:
                item["name"] = flat
        elif isinstance(step, Shell) and shell is not None:
            call_id = self._next_id("call")
            if shell == "local_shell":
                item = {
                    "type": "local_shell_call", "id": self._next_id("lsh"), "call_id": call_id, "status": "completed",
                    "action": {"type": "exec", "command": ["bash", "-lc", step.command]},
                }
            else:
                arguments = _shell_arguments(shell, step.command)
                item = {
                    "type": "function_call", "id": self._next_id("fc"), "call_id": call_id, "name": shell,
                    "arguments": json.dumps(arguments), "status": "completed",
                }
        else:
            text = step.text if isinstance(step, Text) else SIDE_TEXT
            item = {
                "type": "message", "id": self._next_id("msg"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        response = {
            "id": response_id, "object": "response", "status": "completed", "model": body.get("model", "scripted"),
            "output": [item],
            "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        }
        created = {**response, "status": "in_progress", "output": []}
        return [
            ("response.created", {"type": "response.created", "response": created}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]


def _shell_arguments(tool: str, command: str) -> dict[str, Any]:
    """The arguments each harness's shell tool takes for one command line."""
    if tool == "exec_command":  # Codex's unified exec
        return {"cmd": command}
    if tool == "shell":  # Codex's older shell tool: an argv
        return {"command": ["bash", "-lc", command]}
    return {"command": command}
