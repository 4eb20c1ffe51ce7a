"""The guard's configuration: ``limbo audit --json``'s output, edited where it guessed wrong.

The file (YAML or JSON) has the audit's ``tools`` list; per write tool the guard reads
``writes``, ``idempotent``, ``key`` (the idempotency-key parameter), ``verify`` (the read-back
query: ``tool``, ``args`` and ``match`` templated over the write's arguments, ``items`` the list
in its result or ``"*"`` for any, ``per_item`` for a batch argument) and ``lag_s`` (the read
path's documented lag), and optionally ``intent`` (the arguments that make two calls the same
intent; default: all but the key), ``batch`` (the list argument of a batch write, whose missing
rows alone are re-sent) and ``noun`` (what it creates, for the guard's messages). A ``verify``
marked ``verify_checked: false`` and left as the audit guessed it from names is not run (an
edited one is the user's): without a checked read-back the guard blocks an identical retry of an
ambiguous write rather than guess. Tools the
file does not name keep the audit's verdicts from the live listing. Top-level ``wait_tool``
names an upstream tool that lets time pass (Limbo's sandbox has ``wait``; a real server does not
need one: the guard sleeps).

From it come the :class:`~limbo_plugin.contracts.ToolDefinition` s the benchmark's middleware
reads, so ``limbo guard`` runs the same guard code as ``--condition guard``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.errors import SpecError
from limbo_plugin.spec.loader import load_model
from limbo_plugin.spec.models import ReadBack, ToolContract

UPSTREAM_SERVICE = "upstream"


class ConfigError(Exception):
    """The guard's configuration cannot be used (one line naming the file)."""


class GuardTool(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tool: str
    """The tool's name, as the server lists it."""
    writes: bool
    """Whether the tool writes (from ``readOnlyHint``, else its name or description)."""
    idempotent: bool = False
    """Whether a repeat is harmless: the guard lets an identical retry through."""
    key: str | None = None
    """The argument (or ``_meta`` field) that carries an idempotency key; the guard attaches one
    key per intent."""
    verify: ReadBack | None = None
    """The read-back query the guard runs before an identical retry: ``tool``, ``args`` and
    ``match`` templated over the write's arguments, ``items`` the list in its result (``"*"``
    for any), ``per_item`` for a list argument."""
    verify_checked: bool | None = None
    """``False``: the audit built ``verify`` from names and nobody checked that it finds what
    the write made; the guard does not trust it. Absent or ``True``: checked (by hand, or by
    ``limbo audit --probe``)."""
    lag_s: int | None = None
    """Seconds a write takes to show in its read-back; the guard waits them out before verifying."""
    intent: list[str] | None = None
    """The arguments that make two calls the same write (default: all but the key)."""
    batch: str | None = None
    """For a batch write: the list argument whose rows commit one by one."""
    noun: str = "record"
    """What the guard's note calls one of the tool's records."""


class GuardConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tools: list[GuardTool] = []
    """Per tool, its retry contract; tools not named keep the audit's verdicts."""
    wait_tool: str | None = None
    """A tool that lets time pass (a simulated clock's ``wait``), used instead of sleeping before a
    read-back."""

    def by_name(self) -> dict[str, GuardTool]:
        return {t.tool: t for t in self.tools}


def load_config(path: str | Path | None) -> GuardConfig:
    """The guard's configuration file, checked like a spec (``file:line: at tools[0].writes …``);
    no file, or an empty one, configures nothing."""
    if path is None:
        return GuardConfig()
    try:
        return load_model(path, GuardConfig, empty=GuardConfig())
    except SpecError as exc:
        raise ConfigError(str(exc)) from None


def config_from_audit(document: dict[str, Any]) -> GuardConfig:
    try:
        return GuardConfig.model_validate({"tools": document.get("tools", [])})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ConfigError(f"the audit of the listing: {where}: {error['msg']}") from None


def definitions(listed: list[Any], config: GuardConfig) -> dict[str, ToolDefinition]:
    """The upstream's tools (``mcp`` ``Tool`` objects) with the contracts ``config`` gives,
    and the audit's verdicts on the live listing for the tools it does not name."""
    from limbo_plugin.realmcp.audit import Auditor, ListedTool
    from limbo_plugin.realmcp.rules import load_rules

    rows = Auditor([ListedTool.from_mcp(t) for t in listed], load_rules()).audit()
    guessed = config_from_audit({"tools": [r.as_json() for r in rows]}).by_name()
    known = {**guessed, **{name: _edited(entry, guessed.get(name))
                           for name, entry in config.by_name().items()}}
    out: dict[str, ToolDefinition] = {}
    for tool in listed:
        data = tool.model_dump(by_alias=True, exclude_none=True)
        name = data["name"]
        schema = data.get("inputSchema") or {"type": "object"}
        entry = known.get(name)
        if entry is None:
            continue
        out[name] = ToolDefinition(name=name, service=UPSTREAM_SERVICE,
                                   description=data.get("description") or "",
                                   input_schema=schema, contract=contract_of(entry, schema),
                                   native_idempotency=contract_of(entry, schema).idempotency)
    return out


def _edited(entry: GuardTool, guess: GuardTool | None) -> GuardTool:
    """``entry`` as the user left it: a ``verify`` that differs from the audit's guess was
    written by the user, and is theirs to trust, whatever ``verify_checked`` still says."""
    if (entry.verify_checked is False and entry.verify is not None
            and (guess is None or entry.verify != guess.verify)):
        return entry.model_copy(update={"verify_checked": None})
    return entry


def contract_of(entry: GuardTool, schema: dict[str, Any]) -> ToolContract:
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    key = entry.key if entry.key and not entry.key.startswith("_meta.") else None
    verify = entry.verify if entry.verify_checked is not False else None
    if not entry.writes:
        idempotency = "read_only"
    elif entry.idempotent:
        idempotency = "idempotent"
    else:
        idempotency = "key_optional" if key else "non_idempotent"
    intent = entry.intent if entry.intent is not None else [p for p in properties if p != key]
    try:
        return ToolContract(read_only_hint=not entry.writes, idempotent_hint=entry.idempotent,
                            idempotency=idempotency, intent_fields=intent, key_param=key,
                            read_back=verify, visibility_lag_s=entry.lag_s or 0,
                            batch_field=entry.batch, record_noun=entry.noun)
    except ValidationError as exc:
        raise ConfigError(f"tool {entry.tool}: {exc.errors()[0]['msg']}") from None


def dump(config: GuardConfig) -> str:
    return json.dumps(config.model_dump(exclude_none=True), indent=2)
