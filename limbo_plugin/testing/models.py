"""Scripted "models" for :class:`~limbo_plugin.testing.openai_server.OpenAIServer`.

A scripted model is a callable from a :class:`ChatRequest` to a :class:`Reply`. The central one,
:class:`PolicyModel`, serves a scripted reference policy (``blind_retry``, ``verify_first`` …) as
a chat model: it is *stateless* and re-derives its next action from the transcript alone, by
replaying the policy against the tool results already in the conversation. The model-backed
scaffold therefore makes exactly the calls the scripted agent makes, on the same world, which is
what lets the tests check that the scaffold is a faithful conduit (same ledger, same grade).

The same model plays the model behind a production harness. Harnesses differ in three ways it
absorbs: they rename tools (``acme-email_send`` in Copilot, ``mcp__acme__email_send`` in Codex,
``mcp_acme_email_send`` in Hermes; resolved by suffix, :class:`ToolNames`), they put their own
text around the task (the task is found wherever it occurs in a user message), and they may wrap
a tool's result text (unwrapped by :func:`result_body`). Requests without the task's tools — a
harness asking for a session title, say — get a short text answer.

The others script the awkward cases: malformed tool calls, a model that never calls a tool or
never calls ``finish``, rate limits, and a provider that always fails.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from limbo_plugin.agents.scripted import ScriptedAgent
from limbo_plugin.contracts import ToolCatalog, ToolDefinition
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.tasks import TaskInstance
from limbo_plugin.testing.model_io import ChatRequest, Reply, ScriptedModel, ScriptedToolCall
from limbo_plugin.toolapi import ToolResult

INSTRUCTION_VARIANTS = ("default", "no_cue")
HARNESS_ERROR_TYPES = ("unknown_tool", "invalid_arguments")
WRAPPER_KEYS = ("result", "output", "error", "content")
"""Single keys under which a harness may nest a tool's result text."""
NAME_SEPARATORS = "_-./:"
"""What may precede a tool's own name inside a harness's name for it (``mcp__acme__wait``)."""
"""Tool errors caused by a malformed call itself; :class:`PolicyModel` ignores those exchanges
so that it can follow a :class:`MalformedModel` prelude."""


def finish_call(status: str = "completed", summary: str = "Done.",
                uncertain: Sequence[str] = ()) -> ScriptedToolCall:
    return ScriptedToolCall("finish", {"status": status, "summary": summary,
                                       "uncertain_operations": list(uncertain)})


# -- a scripted policy as a chat model ----------------------------------------------------------
class _NextAction(Exception):
    def __init__(self, name: str, arguments: Any) -> None:
        super().__init__(name)
        self.name, self.arguments = name, arguments


class _Diverged(Exception):
    pass


class _TranscriptSession:
    """Duck-types the part of :class:`AgentSession` a scripted policy uses (``shared_task``,
    ``shared_tool``, ``call``), answering calls from the transcript until it runs out, then
    stopping the policy at the call it wants to make next."""

    def __init__(self, task: TaskInstance, tools: Mapping[str, ToolDefinition],
                 history: list[tuple[str, Any, ToolResult]]) -> None:
        self.shared_task = task
        self._tools = tools
        self._history = history
        self._position = 0

    def shared_tool(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def call(self, name: str, arguments: Any = None, *, call_id: str | None = None
             ) -> ToolResult:
        if self._position >= len(self._history):
            raise _NextAction(name, {} if arguments is None else arguments)
        seen_name, seen_args, result = self._history[self._position]
        self._position += 1
        if seen_name != name or seen_args != arguments:
            raise _Diverged(f"transcript call {self._position} was {seen_name} {seen_args}, "
                            f"the policy wants {name} {arguments}")
        return result


class PolicyModel:
    """Serves scripted policy ``policy`` as a model (see the module docstring).

    The task is found by matching the first user message against the ``default`` and ``no_cue``
    instructions of ``tasks`` (if given), else of instances ``0..max_instance-1`` of every
    template of ``registry``, searched lazily and cached. ``contract`` and ``docs`` pick the
    catalog whose contracts the policy reads (they must match the episode's).
    """

    def __init__(self, policy: str, *, registry: SpecRegistry, tasks: Iterable[TaskInstance] = (),
                 contract: str = "native", docs: str = "default", max_instance: int = 8) -> None:
        self.policy = policy
        self.agent = ScriptedAgent(policy)
        self._registry = registry
        self._contract, self._docs = contract, docs
        self._max_instance = max_instance
        self._by_instruction: dict[str, TaskInstance] = {}
        self._scanned = 0
        self._lock = threading.Lock()
        for task in tasks:
            self._index(task)

    def __call__(self, request: ChatRequest) -> Reply:
        catalog = self._catalog()
        names = ToolNames(request.tool_names, catalog.tools)
        if not names.canonical:  # a side request (title, summary …), not a turn of the task
            return Reply(content="OK.")
        task = self._task(request.user_texts)
        tools = {name: d for name, d in catalog.tools.items() if name in names.canonical}
        session = _TranscriptSession(task, tools, transcript(request.messages, names))
        try:
            self.agent.run(session)  # type: ignore[arg-type]  # duck-typed session
        except _NextAction as action:
            return Reply(tool_calls=[ScriptedToolCall(names.offered(action.name),
                                                      action.arguments)])
        return Reply(content="The task is complete.")

    # -- finding the task -----------------------------------------------------------------------
    def _index(self, task: TaskInstance) -> None:
        for variant in INSTRUCTION_VARIANTS:
            self._by_instruction[task.instruction(variant)] = task

    def _catalog(self) -> ToolCatalog:
        return self._registry.catalog(self._contract, self._docs)

    def _task(self, user_texts: Sequence[str]) -> TaskInstance:
        """The task whose instruction is a user message, or (behind a harness, which adds its
        preamble) occurs in one; the longest match wins (``no_cue`` is a prefix of
        ``default``)."""
        with self._lock:
            registry = self._registry
            task = self._find(user_texts)
            while task is None and self._scanned < self._max_instance:
                for name in sorted(registry.templates):
                    self._index(registry.template(name).instantiate(self._scanned))
                self._scanned += 1
                task = self._find(user_texts)
        if task is None:
            first = user_texts[0] if user_texts else ""
            raise LookupError(f"no task instance (< {self._max_instance}) has the instruction "
                              f"{first[:80]!r}")
        return task

    def _find(self, user_texts: Sequence[str]) -> TaskInstance | None:
        for text in user_texts:
            if text in self._by_instruction:
                return self._by_instruction[text]
        found = [(len(i), t) for i, t in self._by_instruction.items()
                 if any(i in text for text in user_texts)]
        return max(found, key=lambda pair: pair[0])[1] if found else None


class ToolNames:
    """How one request names the task's tools: each offered name that ends in a known tool's
    name (after a separator such as ``__`` or ``-``) stands for that tool."""

    def __init__(self, offered: Iterable[str], known: Iterable[str]) -> None:
        known = sorted(set(known), key=len, reverse=True)  # longest first
        self._to_canonical: dict[str, str] = {}
        self._to_offered: dict[str, str] = {}
        for name in offered:
            canonical = _canonical(name, known)
            if canonical is not None:
                self._to_canonical[name] = canonical
                self._to_offered.setdefault(canonical, name)

    @property
    def canonical(self) -> set[str]:
        return set(self._to_offered)

    def canonical_of(self, offered: str) -> str:
        return self._to_canonical.get(offered, offered)

    def offered(self, canonical: str) -> str:
        return self._to_offered.get(canonical, canonical)


def _canonical(name: str, known: Sequence[str]) -> str | None:
    if name in known:
        return name
    for tool in known:
        if name.endswith(tool) and name[-len(tool) - 1] in NAME_SEPARATORS:
            return tool
    return None


def result_body(text: Any) -> Any:
    """The JSON value of a tool result as the sandbox produced it, from what a harness put in
    the conversation: the text itself, or that text wrapped in a list of content parts, an MCP
    ``CallToolResult``-shaped object, a ``{"result": "…"}`` or ``{"error": "…"}`` object, or
    surrounding prose (Codex prefixes the wall time, Hermes fences results as untrusted data)."""
    if isinstance(text, list):  # content parts
        text = "".join(str(p.get("text", "")) for p in text if isinstance(p, Mapping))
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return _embedded_object(text)
    if isinstance(value, list) and value and all(isinstance(p, Mapping) and "text" in p
                                                 for p in value):
        return result_body(value)
    if isinstance(value, Mapping):
        content = value.get("content")
        if isinstance(content, list) and set(value) <= {"content", "isError", "is_error",
                                                        "structuredContent", "_meta"}:
            return result_body(content)
        if len(value) == 1:  # {"result": "<text>"}, or {"error": "<text>"} for a tool error
            (key, inner), = value.items()
            if key in WRAPPER_KEYS and isinstance(inner, str | list):
                unwrapped = result_body(inner)
                if isinstance(unwrapped, dict):
                    return unwrapped
    return value


def _embedded_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return result_body(json.dumps(value))
    return None


def transcript(messages: Sequence[Mapping[str, Any]], names: ToolNames | None = None
               ) -> list[tuple[str, Any, ToolResult]]:
    """The (tool, arguments, result) exchanges of a conversation, in order, with tools under
    their own names (``names`` maps a harness's names back).

    Results are rebuilt from the tool message text; a result is an error exactly when its body
    has a top-level ``error`` object, which is how every Limbo tool error is shaped. Exchanges
    answered with a harness-level error (unknown tool, unparsable arguments) are skipped.
    """
    results: dict[str, Any] = {}
    for message in messages:
        if message.get("role") == "tool":
            results[str(message.get("tool_call_id"))] = message.get("content")
    exchanges = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if str(call.get("id")) not in results:
                continue
            function = call.get("function") or {}
            body = result_body(results[str(call.get("id"))])
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError):
                continue
            if not isinstance(body, dict):
                continue
            error = body.get("error")
            is_error = isinstance(error, dict)
            if isinstance(error, dict) and error.get("type") in HARNESS_ERROR_TYPES:
                continue
            name = str(function.get("name"))
            exchanges.append((names.canonical_of(name) if names else name, arguments,
                              ToolResult(body, is_error=is_error)))
    return exchanges


# -- models for the awkward cases -----------------------------------------------------------------
class SequenceModel:
    """Replies by turn: the n-th assistant turn gets ``replies[n]``; the last one repeats."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        if not replies:
            raise ValueError("SequenceModel needs at least one reply")
        self.replies = list(replies)

    def __call__(self, request: ChatRequest) -> Reply:
        return self.replies[min(request.turn, len(self.replies) - 1)]


class TextModel:
    """Never calls a tool: exercises the continuation nudge and the end after idle turns."""

    def __init__(self, text: str = "I have looked at the task and will get to it.") -> None:
        self.text = text

    def __call__(self, request: ChatRequest) -> Reply:
        return Reply(content=self.text)


class NeverFinishModel:
    """Calls the same harmless tool forever and never ``finish``: exercises the call budget."""

    def __init__(self, tool: str = "wait", arguments: Mapping[str, Any] | None = None) -> None:
        self.tool = tool
        self.arguments = dict(arguments or {"seconds": 1})

    def __call__(self, request: ChatRequest) -> Reply:
        return Reply(tool_calls=[ScriptedToolCall(self.tool, self.arguments)])


MALFORMED_CALLS: tuple[ScriptedToolCall, ...] = (
    ScriptedToolCall("wait", '{"seconds": 5'),  # truncated JSON
    ScriptedToolCall("no_such_tool", {"x": 1}),  # a tool that does not exist
    ScriptedToolCall("wait", "[1, 2]"),  # valid JSON, but not an object
)


class MalformedModel:
    """Sends one malformed call per turn for the first turns, then defers to ``inner``."""

    def __init__(self, inner: ScriptedModel | None = None,
                 calls: Sequence[ScriptedToolCall] = MALFORMED_CALLS) -> None:
        self.inner = inner or SequenceModel([Reply(tool_calls=[finish_call("failed")])])
        self.calls = list(calls)

    def __call__(self, request: ChatRequest) -> Reply:
        if request.turn < len(self.calls):
            return Reply(tool_calls=[self.calls[request.turn]])
        return self.inner(request)


class FlakyModel:
    """Fails the first ``failures`` requests it receives with ``status``, then defers to ``inner``.

    The count is global to the instance (thread-safe), like a provider's rate limiter.
    """

    def __init__(self, inner: ScriptedModel, *, failures: int = 2, status: int = 429,
                 retry_after: str | None = "0", message: str = "Rate limit reached") -> None:
        self.inner = inner
        self.failures, self.status = failures, status
        self.headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.message = message
        self.seen = 0
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Reply:
        with self._lock:
            self.seen += 1
            failing = self.seen <= self.failures
        if failing:
            return Reply(status=self.status, error_message=self.message, headers=self.headers)
        return self.inner(request)


class FailingModel:
    """Always answers with an HTTP error (default 500): a provider that is down."""

    def __init__(self, status: int = 500, message: str = "upstream model server exploded",
                 headers: Mapping[str, str] | None = None) -> None:
        self.status, self.message = status, message
        self.headers = dict(headers or {})

    def __call__(self, request: ChatRequest) -> Reply:
        return Reply(status=self.status, error_message=self.message, headers=self.headers)
