"""How to run a model-backed agent: validated once, where the options come in.

The plugin builds :class:`AgentOptions` from its command-line options and ``pytest.ini``; the
episode runner hands them to whichever agent the run configuration names. Agents that need
none of them (the scripted policies) ignore them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from limbo_plugin.agents.provider import DEFAULT_BACKOFF_S, DEFAULT_RETRIES

CassetteMode = Literal["record", "replay", "auto"]


class AgentOptions(BaseModel):
    """``model_options`` go to the model (temperature, api_base, …); ``cassette`` is a directory
    recording or replaying model responses in ``cassette_mode``; a transient provider error is
    tried ``provider_retries`` times in all, backing off exponentially from
    ``provider_backoff_s``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_options: dict[str, Any] = Field(default_factory=dict)
    cassette: str | None = None
    cassette_mode: CassetteMode = "auto"
    provider_retries: int = Field(default=DEFAULT_RETRIES, ge=1)
    provider_backoff_s: float = Field(default=DEFAULT_BACKOFF_S, ge=0)
