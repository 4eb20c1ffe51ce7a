"""One chat completion through litellm, with retries, usage and a normalised result.

The scaffold never handles a litellm response object directly: :class:`LiteLLMProvider` turns
each response into a :class:`ModelTurn`, plain JSON that is also what a cassette stores. Because
the conversation is built from ``ModelTurn`` alone, a replayed episode sends byte-identical
requests and produces an identical record, whether the turn came from the network or from disk.

Provider errors (SPEC: an episode that ends in a gateway error is excluded and re-run) are split
in two: transient ones — rate limits, 5xx, timeouts, connection errors — are retried with
exponential backoff, honouring ``Retry-After``; the rest (authentication, bad request, unknown
model) cannot succeed on retry and raise :class:`InfrastructureError` at once, which
:func:`~limbo_plugin.episode.run_episode` records as the episode's ``error``.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.scrubbing import scrub

DEFAULT_RETRIES = 8
DEFAULT_BACKOFF_S = 1.0
DEFAULT_CALL_TIMEOUT_S = 300.0
"""How long one model call may take (litellm's ``timeout``) unless ``--model-option timeout=``
says otherwise: litellm's own default is 6,000 s, so a hung provider would hang the run for
hours. A call that times out is a transient provider error (retried, then an infrastructure
error)."""
MAX_WAIT_S = 120.0
"""No single wait exceeds this, whatever the backoff or a ``Retry-After`` header says."""
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
REASONING_FIELDS = ("reasoning_content", "thinking_blocks", "reasoning_items")
"""Assistant-message fields litellm uses for reasoning; kept so they are sent back next turn."""
OUTPUT_OPTIONS = frozenset({
    "temperature", "top_p", "top_k", "min_p", "seed", "max_tokens", "max_completion_tokens",
    "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias",
    "logprobs", "top_logprobs", "reasoning_effort", "reasoning", "thinking", "verbosity",
    "response_format", "tool_choice", "parallel_tool_calls", "wire", "modalities", "truncation",
    "service_tier", "prediction",
})
"""``model_options`` that can change what the model answers: the only ones a cassette stores and
keys its entries on. An allow-list rather than a deny-list of transport options, so an option
Limbo does not know (a provider's own credential parameter) is never written to disk."""


@dataclass
class ModelTurn:
    """One normalised completion: the assistant message to append, and what it cost."""

    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    finish_reason: str | None = None
    priced: bool = True
    """False when the model has no known price: ``cost_usd`` is then 0 but unknown, not free."""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd,
                "finish_reason": self.finish_reason, "priced": self.priced}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelTurn:
        return cls(message=dict(data["message"]), prompt_tokens=int(data["prompt_tokens"]),
                   completion_tokens=int(data["completion_tokens"]),
                   cost_usd=float(data["cost_usd"]), finish_reason=data.get("finish_reason"),
                   priced=bool(data.get("priced", True)))


class ChatProvider:
    """What the scaffold needs from a model: one completion for a conversation."""

    def complete(self, messages: Sequence[Mapping[str, Any]],
                 tools: Sequence[Mapping[str, Any]]) -> ModelTurn:
        raise NotImplementedError


def import_litellm() -> Any:
    """Import litellm without letting it touch the network or the terminal.

    litellm fetches its model cost map from GitHub at import unless told to use the bundled
    copy, which would make every worker's first episode depend on the internet (and stall for
    seconds offline). Its "Give Feedback / Get Help" banners are also switched off: they go to
    stdout on every handled provider error and would flood a pytest run.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@dataclass
class LiteLLMProvider(ChatProvider):
    """Calls ``litellm.completion`` for ``model`` with ``model_options``, retrying transient
    provider errors ``retries`` times in all (attempts, not re-tries) with exponential backoff
    from ``backoff_s``."""

    model: str
    model_options: Mapping[str, Any] = field(default_factory=dict)
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self._litellm = import_litellm()
        # litellm and the OpenAI SDK retry on their own by default; only one layer may retry,
        # or a 429 storm multiplies attempts and Retry-After is honoured twice.
        self._kwargs: dict[str, Any] = {"max_retries": 0, "num_retries": 0,
                                        "timeout": DEFAULT_CALL_TIMEOUT_S,
                                        **dict(self.model_options)}

    def complete(self, messages: Sequence[Mapping[str, Any]],
                 tools: Sequence[Mapping[str, Any]]) -> ModelTurn:
        attempts = max(1, int(self.retries))
        for attempt in range(1, attempts + 1):
            try:
                response = self._send(messages, tools)
            except Exception as exc:
                retryable, retry_after = classify(exc)
                if not retryable:
                    raise InfrastructureError(f"{self.model}: {describe(exc)}") from exc
                if attempt == attempts:
                    raise InfrastructureError(
                        f"{self.model}: giving up after {attempts} attempts: {describe(exc)}"
                    ) from exc
                self.sleep(backoff_delay(attempt, self.backoff_s, retry_after))
                continue
            return self._normalise(response)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, messages: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]]) -> Any:
        return self._litellm.completion(model=self.model, messages=list(messages),
                                        tools=list(tools) or None, **self._kwargs)

    def _normalise(self, response: Any) -> ModelTurn:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise InfrastructureError(f"{self.model}: the provider returned no choices")
        choice = choices[0]
        usage = getattr(response, "usage", None)
        cost = self._cost(response)
        return ModelTurn(
            message=normalise_message(choice.message),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=cost or 0.0, priced=cost is not None,
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def _cost(self, response: Any) -> float | None:
        """litellm's cost estimate; ``None`` (unknown, not free) for models missing from its
        price map (local, custom).

        litellm already prices every response while logging it and leaves the result in the
        documented ``_hidden_params["response_cost"]`` (``None`` when the model is unpriced);
        reusing it saves a second price-map lookup, a measurable share of each call's CPU.
        ``completion_cost`` is the fallback for responses that do not carry it.
        """
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, Mapping) and "response_cost" in hidden:
            cost = hidden["response_cost"]
        else:
            try:
                cost = self._litellm.completion_cost(completion_response=response)
            except Exception:
                return None
        try:
            return None if cost is None else float(cost)
        except (TypeError, ValueError):
            return None


class ResponsesProvider(LiteLLMProvider):
    """The same provider over the OpenAI Responses API (``litellm.responses``).

    The conversation stays in chat form; :mod:`~limbo_plugin.agents.responses_render` renders
    it per request and reads each answer back, keeping reasoning items so they are replayed to
    the model on the next turn. Retries, error classification and cost are the chat provider's.
    """

    def _send(self, messages: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]]) -> Any:
        from limbo_plugin.agents.responses_render import request_parts

        return self._litellm.responses(model=self.model, **request_parts(messages, tools),
                                       **self._kwargs)

    def _normalise(self, response: Any) -> ModelTurn:
        from limbo_plugin.agents.responses_render import assistant_message

        output = [_plain_item(item) for item in getattr(response, "output", None) or []]
        if getattr(response, "status", "completed") == "failed":
            error = getattr(response, "error", None)
            raise InfrastructureError(f"{self.model}: the response failed: {error}")
        message = assistant_message(output)
        usage = getattr(response, "usage", None)
        cost = self._cost(response)
        return ModelTurn(
            message=message,
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            cost_usd=cost or 0.0, priced=cost is not None,
            finish_reason="tool_calls" if message.get("tool_calls") else "stop",
        )


def _plain_item(item: Any) -> dict[str, Any]:
    """An output item as JSON without the ``None`` fields litellm's models add (``namespace``,
    ``caller`` …), which a strict server would reject when the item is replayed."""
    if hasattr(item, "model_dump"):
        return dict(item.model_dump(exclude_none=True))
    return {k: v for k, v in dict(_plain(item)).items() if v is not None}


WIRES = ("chat", "responses")
"""How the scaffold talks to the model: chat completions (default) or the Responses API."""


def provider_class(wire: str) -> type[LiteLLMProvider]:
    return ResponsesProvider if wire == "responses" else LiteLLMProvider


def normalise_message(message: Any) -> dict[str, Any]:
    """The assistant message as plain JSON, ready to be appended to the conversation.

    Keeps the content, the tool calls (with any provider-specific fields, where e.g. Gemini's
    thought signatures travel) and litellm's reasoning fields, so that providers that want their
    reasoning replayed (Anthropic thinking blocks, reasoning items) get it back. A missing tool
    call id is replaced by a positional one, because each tool result must name its call.
    """
    data = _plain(message)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    calls = []
    for index, call in enumerate(data.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {},
                                   ensure_ascii=False)
        entry: dict[str, Any] = {"id": call.get("id") or f"call_{index}",
                                 "type": call.get("type") or "function",
                                 "function": {"name": function.get("name") or "",
                                              "arguments": arguments}}
        if call.get("provider_specific_fields"):
            entry["provider_specific_fields"] = call["provider_specific_fields"]
        calls.append(entry)
    if calls:
        out["tool_calls"] = calls
    for name in REASONING_FIELDS:
        if data.get(name):
            out[name] = data[name]
    return out


def _plain(value: Any) -> Any:
    """Deep-convert litellm/pydantic objects to JSON-compatible values."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    return json.loads(json.dumps(value, default=_default))


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


# -- error classification -------------------------------------------------------------------------
FATAL_NAMES = frozenset({
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
    "UnprocessableEntityError", "ContextWindowExceededError", "ContentPolicyViolationError",
    "UnsupportedParamsError", "BudgetExceededError", "ModelNotMappedError",
})
TRANSIENT_NAMES = frozenset({
    "RateLimitError", "Timeout", "APITimeoutError", "APIConnectionError", "InternalServerError",
    "ServiceUnavailableError", "BadGatewayError", "TimeoutException", "ConnectError",
    "ReadError", "RemoteProtocolError",
})


def classify(exc: BaseException) -> tuple[bool, float | None]:
    """``(retryable, retry_after_s)`` for an exception raised by ``litellm.completion``.

    Classes are matched by name along the MRO so that litellm's, the OpenAI SDK's and httpx's
    variants are all recognised without importing them. Fatal classes win over a 5xx status
    (a context-window error is a 400 whatever the gateway says); otherwise the status decides,
    and an exception with neither a known class nor a status is treated as fatal, since retrying
    an error we do not understand only delays the report.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    retry_after = retry_after_s(exc)
    if names & FATAL_NAMES or client_configuration_error(exc):
        return False, retry_after
    if names & TRANSIENT_NAMES:
        return True, retry_after
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS or status >= 500, retry_after
    return False, retry_after


def client_configuration_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a configuration error raised before any request was sent, which no
    retry can mend, whatever litellm wraps it in:

    - the OpenAI SDK's bare ``OpenAIError`` (a missing ``api_key``; every error of a request
      is a subclass), which litellm reports as an ``InternalServerError`` of status 500;
    - litellm's ``APIConnectionError`` around a plain ``ValueError`` or ``TypeError`` of its
      own ("Missing Gemini API key"), where a connection that failed has a network error.

    Either used to be retried with backoff, minutes per model call, before the episode said
    anything."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and all(cause is not seen for seen in chain):
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for link in chain:
        kind = type(link)
        if kind.__name__ == "OpenAIError" and kind.__module__.split(".")[0] == "openai":
            return True
    names = {kind.__name__ for kind in type(exc).__mro__}
    # exactly these: a JSON decode error (a garbled answer) is a subclass of ValueError
    return "APIConnectionError" in names and type(chain[-1]) in (ValueError, TypeError)


def retry_after_s(exc: BaseException) -> float | None:
    """The provider's requested wait, from ``retry-after-ms`` or ``retry-after`` (seconds or an
    HTTP date) on the error's response headers, or ``None``."""
    for headers in _headers_of(exc):
        millis = _header(headers, "retry-after-ms")
        if millis is not None:
            try:
                return max(0.0, float(millis) / 1000.0)
            except ValueError:
                pass
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def _headers_of(exc: BaseException) -> list[Any]:
    found = []
    for name in ("litellm_response_headers", "headers"):
        value = getattr(exc, name, None)
        if value:
            found.append(value)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers:
        found.append(headers)
    return found


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
        if value is None and isinstance(headers, Mapping):
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    except Exception:
        return None
    return None if value is None else str(value).strip()


def backoff_delay(attempt: int, base_s: float, retry_after: float | None) -> float:
    """Exponential backoff with up to 25% jitter (so parallel workers hit by the same rate
    limit do not return in lockstep), never shorter than ``Retry-After``, capped."""
    delay = base_s * (2 ** (attempt - 1)) * (1.0 + 0.25 * random.random())
    if retry_after is not None:
        delay = max(delay, retry_after)
    return float(min(delay, MAX_WAIT_S))


def describe(exc: BaseException) -> str:
    """A one-line description of a provider error for the episode record."""
    status = getattr(exc, "status_code", None)
    message = scrub(str(getattr(exc, "message", None) or exc)).strip().splitlines()
    text = message[0] if message else ""
    if len(text) > 500:
        text = text[:500] + "…"
    prefix = f"{type(exc).__name__}" + (f" (HTTP {status})" if isinstance(status, int) else "")
    return f"{prefix}: {text}" if text else prefix


PREFLIGHT_TIMEOUT_S = 60.0
"""How long the preflight request may take, unless ``--model-option timeout=`` is shorter."""


def probe(model: str, model_options: Mapping[str, Any], wire: str = "chat") -> None:
    """One real, one-token request to ``model`` with ``model_options`` (its credentials, its
    ``api_base``), over ``wire``: the run's preflight. Because litellm sends it exactly as an
    episode would, every credential source litellm knows (environment, ``~/.aws``, a local
    Ollama, a gateway) is tried the way the run will try it. Raises
    :class:`InfrastructureError` with the provider's answer; a rate limit (429) counts as an
    answer (the run's own retries wait for it)."""
    litellm = import_litellm()
    options = {k: v for k, v in model_options.items() if k not in ("wire", "max_tokens",
                                                                    "max_completion_tokens")}
    timeout = min(float(options.pop("timeout", PREFLIGHT_TIMEOUT_S)), PREFLIGHT_TIMEOUT_S)
    kwargs: dict[str, Any] = {"max_retries": 0, "num_retries": 0, "timeout": timeout, **options}
    try:
        if wire == "responses":
            litellm.responses(model=model, input="Say OK.", max_output_tokens=16, **kwargs)
        else:
            litellm.completion(model=model, messages=[{"role": "user", "content": "Say OK."}],
                               max_tokens=1, **kwargs)
    except Exception as exc:
        if getattr(exc, "status_code", None) == 429 or "RateLimitError" in {
                cls.__name__ for cls in type(exc).__mro__}:
            return
        raise InfrastructureError(describe(exc)) from exc


def token_prices(model: str) -> tuple[float, float] | None:
    """The USD price of one prompt and one completion token of ``model`` in litellm's bundled
    price map (``limbo plan``'s budget); ``None`` for a model the map does not know."""
    litellm = import_litellm()
    for name in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(name)
        if info and info.get("input_cost_per_token") is not None:
            return (float(info["input_cost_per_token"]),
                    float(info.get("output_cost_per_token") or 0.0))
    return None
