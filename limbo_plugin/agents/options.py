"""How to run a model-backed agent: validated once, where the options come in.

The plugin builds :class:`AgentOptions` from its command-line options and ``pytest.ini``; the
episode runner hands them to whichever agent the run configuration names. Agents that need
none of them (the scripted policies) ignore them.
"""

from __future__ import annotations

import json
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
    provider_retries: int = Field(default=DEFAULT_RETRIES, ge=1)
    provider_backoff_s: float = Field(default=DEFAULT_BACKOFF_S, ge=0)
    reports_dir: str | None = None


def parse_model_options(values: list[str]) -> dict[str, Any]:
    """``--model-option KEY=VALUE`` flags as a dict; a value that parses as JSON is taken as
    JSON (``temperature=0`` is a number), any other as text."""
    parsed: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--model-option expects KEY=VALUE, got {item!r}")
        try:
            parsed[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            parsed[key.strip()] = raw
    return parsed
