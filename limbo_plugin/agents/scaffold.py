"""The paper's minimal function-calling scaffold (§5, Appendix A.2) as an :class:`Agent`.

A standard tool-calling loop over litellm, deliberately plain so that what is measured is the
model, not scaffolding cleverness:

- the A.2 system prompt, as the condition changes it (the reliability rules appended in
  ``aware``; see :class:`~limbo_plugin.conditions.base.PromptChanges`);
- the task instruction (already the ``default`` or ``no_cue`` variant) as the first user message;
- the episode's tools in OpenAI function format;
- parallel tool calls executed in the order the model listed them, each answered with a ``tool``
  message whose content is the canonical JSON of the result;
- the condition's message after any turn with a tool error (the A.2 reflection message in
  ``reflect``);
- after a turn without a tool call, the continuation nudge; the third such turn (counted over
  the whole episode, as the paper words it) ends the episode;
- the session's call budget (40) and its end (``finish``) stop the loop.

Malformed calls (unparsable arguments, unknown tools) are not filtered here: they go to
:meth:`AgentSession.call`, whose transport answers with a tool error, exactly as a real API
would, and the episode continues.

Its :class:`~limbo_plugin.agents.options.AgentOptions` (built and validated by the plugin):
``model_options`` are passed to litellm.completion (temperature, reasoning_effort, api_base,
api_key, extra_headers, timeout, ...); litellm's and the OpenAI SDK's own retries are off
(max_retries=num_retries=0) unless set there, so that ``provider_retries`` is the only retry
layer; ``cassette`` and ``cassette_mode`` record or replay responses (see agents/cassette.py).
The model option ``wire`` is not passed on: ``chat`` (default) or ``responses`` chooses the
protocol (``litellm.responses``, with reasoning items replayed to the model).

litellm is imported only when a live model call is first needed (never at plugin import, and
not at all when replaying a cassette).
"""

from __future__ import annotations

import json
from typing import Any

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.agents.cassette import Cassette, CassetteProvider
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.prompts import CONTINUATION_NUDGE, SYSTEM_PROMPT
from limbo_plugin.agents.provider import WIRES, ChatProvider, ModelTurn, provider_class
from limbo_plugin.errors import UsageError

MAX_IDLE_TURNS = 3
"""Turns without a tool call after which the episode ends (the paper's "three such turns")."""


class ScaffoldAgent:
    """The minimal scaffold for litellm model ``model`` (e.g. ``openai/gpt-5-mini``)."""

    def __init__(self, model: str, options: AgentOptions | None = None) -> None:
        options = options or AgentOptions()
        self.model = model
        self.name = f"litellm:{model}"
        self.model_options: dict[str, Any] = dict(options.model_options)
        self.wire = str(self.model_options.get("wire", "chat"))
        if self.wire not in WIRES:
            raise UsageError(f"model option wire={self.wire!r} is not a wire protocol; valid: "
                             + ", ".join(WIRES))
        self.retries = options.provider_retries
        self.backoff_s = options.provider_backoff_s
        self.cassette = (Cassette(options.cassette, options.cassette_mode)
                         if options.cassette else None)
        self._provider: ChatProvider | None = None

    # -- the model --------------------------------------------------------------------------------
    def _live(self) -> ChatProvider:
        # ``wire`` stays in model_options for the cassette key (it changes what is sent) but is
        # not a litellm argument.
        options = {k: v for k, v in self.model_options.items() if k != "wire"}
        return provider_class(self.wire)(self.model, options, retries=self.retries,
                                         backoff_s=self.backoff_s)

    @property
    def provider(self) -> ChatProvider:
        """Created on first use and shared by the episodes this agent runs (one per worker)."""
        if self._provider is None:
            if self.cassette is not None:
                self._provider = CassetteProvider(self.cassette, self.model, self.model_options,
                                                  self._live)
            else:
                self._provider = self._live()
        return self._provider

    # -- the loop ---------------------------------------------------------------------------------
    def run(self, session: AgentSession) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.prompt.system_prompt(SYSTEM_PROMPT)},
            {"role": "user", "content": session.instruction},
        ]
        tools = [tool.openai_tool() for tool in session.tools]
        idle_turns = 0
        while not session.over:
            turn = self.provider.complete(messages, tools)
            _account(session, turn)
            messages.append(turn.message)
            calls = turn.tool_calls
            if not calls:
                idle_turns += 1
                if idle_turns >= MAX_IDLE_TURNS:
                    session.end("no_tool_calls")
                    return
                messages.append({"role": "user", "content": CONTINUATION_NUDGE})
                continue
            any_error = False
            for call in calls:
                if session.over:
                    break
                function = call.get("function") or {}
                result = session.call(str(function.get("name") or ""),
                                      _arguments(function.get("arguments")),
                                      call_id=call.get("id"))
                messages.append({"role": "tool", "tool_call_id": call.get("id"),
                                 "content": result.text()})
                any_error = any_error or result.is_error
            after_error = session.prompt.after_tool_error
            if any_error and after_error is not None and not session.over:
                messages.append({"role": "user", "content": after_error})


def _arguments(raw: Any) -> Any:
    """Parsed JSON arguments when they parse, else the raw text for the transport to reject.

    Parsing here keeps the trace's arguments structured (the behaviour coder compares them);
    passing the unparsable text on lets the transport answer with its own tool error.
    """
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return raw


def _account(session: AgentSession, turn: ModelTurn) -> None:
    usage = session.usage
    usage.prompt_tokens += turn.prompt_tokens
    usage.completion_tokens += turn.completion_tokens
    usage.cost_usd += turn.cost_usd
    usage.model_calls += 1
    if not turn.priced:
        usage.unpriced_calls += 1
