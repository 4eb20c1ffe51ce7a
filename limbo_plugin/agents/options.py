"""How to run a model-backed agent: validated once, where the options come in.

The plugin builds :class:`AgentOptions` from its command-line options and ``pytest.ini``; the
episode runner hands them to whichever agent the run configuration names. Agents that need
none of them (the scripted policies) ignore them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from limbo_plugin.agents.provider import DEFAULT_BACKOFF_S, DEFAULT_RETRIES
from limbo_plugin.errors import UsageError

CassetteMode = Literal["record", "replay", "auto"]


class AgentOptions(BaseModel):
    """``model_options`` go to the model (temperature, api_base, …); ``cassette`` is a directory
    recording or replaying model responses in ``cassette_mode``; a transient provider error is
    tried ``provider_retries`` times in all, backing off exponentially from
    ``provider_backoff_s``; ``reports_dir`` is where a harness agent keeps its transcripts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_options: dict[str, Any] = Field(default_factory=dict)
    cassette: str | None = None
    cassette_mode: CassetteMode = "auto"
    provider_retries: int = Field(default=DEFAULT_RETRIES, ge=1, le=100)
    provider_backoff_s: float = Field(default=DEFAULT_BACKOFF_S, ge=0, le=600)
    reports_dir: str | None = None


REFUSED_OPTIONS: dict[str, str] = {
    "mock_response": "it fakes the model's answer, which would be graded as the model's",
    "mock_tool_calls": "it fakes the model's answer, which would be graded as the model's",
    "num_retries": "litellm would retry behind Limbo's own retries (use "
                   "--limbo-provider-retries)",
    "max_retries": "the SDK would retry behind Limbo's own retries (use "
                   "--limbo-provider-retries)",
    "input_cost_per_token": "it rewrites the cost that records and --limbo-cost-limit count",
    "output_cost_per_token": "it rewrites the cost that records and --limbo-cost-limit count",
    "input_cost_per_second": "it rewrites the cost that records and --limbo-cost-limit count",
    "output_cost_per_second": "it rewrites the cost that records and --limbo-cost-limit count",
    "stream": "the scaffold reads whole answers, not streams",
    "stream_options": "the scaffold reads whole answers, not streams",
    "n": "several answers per call would be paid for and only one used",
    "fallbacks": "another model than the one under test could answer",
    "context_window_fallbacks": "another model than the one under test could answer",
    "caching": "litellm's cache could answer instead of the model (cassettes replay runs)",
    "cache": "litellm's cache could answer instead of the model (cassettes replay runs)",
    "messages": "Limbo sends the conversation",
    "tools": "Limbo sends the episode's tools",
}
"""``--model-option`` names that would change what Limbo measures or counts, and why."""


def check_model_options(options: Mapping[str, Any], source: str = "--model-option") -> None:
    """Refuse options that change what is measured or counted, naming each one and why."""
    refused = [name for name in options if name in REFUSED_OPTIONS]
    if refused:
        reasons = "; ".join(f"{name}: {REFUSED_OPTIONS[name]}" for name in refused)
        raise UsageError(f"{source} {', '.join(refused)} not allowed: {reasons}")
    for name, value in options.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{source} {name}={value}: not a finite number")
        bounds = NUMBER_OPTIONS.get(name)
        if bounds is None:
            continue
        low, high = bounds
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(f"{source} {name}={value!r}: expects a number from {low:g} to "
                             f"{high:g}")
        if not low <= value <= high or (name == "timeout" and value <= 0):
            raise UsageError(f"{source} {name}={value!r}: expects a number from {low:g} to "
                             f"{high:g}" + (" (seconds, more than 0)" if name == "timeout"
                                            else ""))


NUMBER_OPTIONS: dict[str, tuple[float, float]] = {
    "timeout": (0.0, 86_400.0), "temperature": (0.0, 2.0), "top_p": (0.0, 1.0),
    "max_tokens": (1.0, 10_000_000.0), "max_completion_tokens": (1.0, 10_000_000.0),
    "frequency_penalty": (-2.0, 2.0), "presence_penalty": (-2.0, 2.0),
}
"""Options a provider reads as numbers, and the range it accepts: text or NaN there would pass
the start-up checks and fail (or hang) every model call."""


def parse_model_options(values: list[str]) -> dict[str, Any]:
    """``--model-option KEY=VALUE`` flags as a dict; a value that parses as JSON is taken as
    JSON (``temperature=0`` is a number), any other as text. Options that would change what
    is measured or counted are refused (:data:`REFUSED_OPTIONS`)."""
    parsed: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--model-option expects KEY=VALUE, got {item!r}")
        try:
            parsed[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            parsed[key.strip()] = raw
    check_model_options(parsed)
    return parsed
