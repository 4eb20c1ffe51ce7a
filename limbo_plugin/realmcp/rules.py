"""The audit's evidence rules, loaded from ``audit_rules.yaml`` (data, not code).

A project can point ``limbo audit --rules FILE`` at its own copy; the file is validated here so a
typo is one line naming the file and the field, not a silent miss.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from limbo_plugin.errors import SpecError
from limbo_plugin.spec.loader import load_model

DEFAULT_RULES = Path(__file__).with_name("audit_rules.yaml")


class RulesError(Exception):
    """The rules file is missing or malformed (one line)."""


def _compile(patterns: list[str]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE) for p in patterns]


class Consistency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strong: list[str]
    """Patterns of a description that says its reads are immediately consistent."""
    lag_seconds: list[str]
    """Patterns that state a lag in seconds (the number is captured)."""
    lag_minutes: list[str]
    """Patterns that state a lag in minutes."""
    eventual: list[str]
    """Patterns that say reads may lag, without a figure."""


class Advice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    read: str
    """The advice for a read tool."""
    idempotent: str
    """The advice for a write whose repeat is harmless."""
    keyed: str
    """The advice for a write that takes an idempotency key."""
    read_back: str
    """The advice for a write with a read-back and no key."""
    read_back_lag: str
    """As ``read_back``, for a read path that lags."""
    unsafe: str
    """The advice for a write with neither key nor read-back."""


class AuditRules(BaseModel):
    """Every list of patterns and words the audit reads (see ``audit_rules.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    write_verbs: list[str]
    """Verbs whose presence in a tool's name makes it a write."""
    read_verbs: list[str]
    """Verbs whose presence in a tool's name makes it a read."""
    write_phrases: list[str]
    """Patterns of a description that make the tool a write."""
    read_phrases: list[str]
    """Patterns of a description that make the tool a read."""
    not_idempotent_phrases: list[str]
    """Patterns of a description saying a repeat is not harmless."""
    idempotent_phrases: list[str]
    """Patterns of a description saying a repeat is harmless."""
    key_params: list[str]
    """Patterns of a parameter name that carries an idempotency key."""
    key_meta_fields: list[str]
    """``_meta`` fields that carry an idempotency key."""
    no_read_back_phrases: list[str]
    """Patterns of a description saying a write cannot be read back."""
    stop_words: list[str]
    """Words ignored when matching a write's name to a read tool's."""
    consistency: Consistency
    """How the audit reads a read path's lag from the descriptions."""
    advice: Advice
    """The advice printed per verdict."""

    @field_validator("write_phrases", "read_phrases", "not_idempotent_phrases",
                     "idempotent_phrases", "key_params", "no_read_back_phrases")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None
        return patterns

    @cached_property
    def compiled(self) -> dict[str, list[re.Pattern[str]]]:
        c = self.consistency
        return {name: _compile(patterns) for name, patterns in {
            "write_phrases": self.write_phrases, "read_phrases": self.read_phrases,
            "not_idempotent": self.not_idempotent_phrases,
            "idempotent": self.idempotent_phrases, "key_params": self.key_params,
            "no_read_back": self.no_read_back_phrases, "strong": c.strong,
            "lag_seconds": c.lag_seconds, "lag_minutes": c.lag_minutes,
            "eventual": c.eventual}.items()}


def load_rules(path: str | Path | None = None) -> AuditRules:
    """The audit rules (Limbo's own unless ``path``), checked like a spec (``file:line: at
    field …``)."""
    try:
        return load_model(Path(path) if path else DEFAULT_RULES, AuditRules)
    except SpecError as exc:
        raise RulesError(str(exc)) from None
