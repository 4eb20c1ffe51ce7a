"""What a scripted model is given and returns: the parsed request (:class:`ChatRequest`, a
chat-completions body whatever protocol it came in) and its :class:`Reply` (tool calls, text, an
HTTP error or a broken answer, each with optional latency). A scripted model is any callable from
one to the other (:data:`ScriptedModel`); :mod:`limbo_plugin.testing.models` has ready-made ones."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call in a scripted reply. ``arguments`` may be a mapping (sent as JSON) or a raw
    string, which is sent verbatim so that malformed JSON can be scripted."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the scripted model answers: an assistant message, or an HTTP error.

    ``status`` other than 200 turns the reply into an error response carrying ``error_message``
    and ``headers`` (e.g. ``{"Retry-After": "2"}``). Token counts default to a deterministic
    estimate so that usage accounting can be checked exactly.
    """

    content: str | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    reasoning_content: str | None = None
    status: int = 200
    error_message: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    broken: Literal["drop", "not_json", "no_choices"] | None = None
    """A provider misbehaving below HTTP errors: ``drop`` closes the connection without an
    answer, ``not_json`` answers 200 with a body that is not JSON, ``no_choices`` answers a
    completion without choices."""


@dataclass(frozen=True)
class ChatRequest:
    """A parsed request as the scripted model and the tests see it: a chat-completions body
    (for a Responses request, the equivalent one; the original is :attr:`raw`)."""

    body: dict[str, Any]
    received_at: float = 0.0
    protocol: str = "chat"
    raw: dict[str, Any] | None = None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name")) for t in self.tools]

    @property
    def turn(self) -> int:
        """How many assistant turns precede this request (0 for the first call of an episode)."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def first_user_text(self) -> str:
        for message in self.messages:
            if message.get("role") == "user":
                return _text(message.get("content"))
        return ""

    @property
    def user_texts(self) -> list[str]:
        """Every user message's text, in order (harnesses add their own before the task)."""
        return [_text(m.get("content")) for m in self.messages if m.get("role") == "user"]


ScriptedModel = Callable[[ChatRequest], Reply]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
