"""Tool definitions as a given contract variant and documentation variant present them.

The service specs declare each tool once; this module renders what an agent sees (name,
description, JSON schema, MCP annotations) and what the world and middleware read (the effective
contract) for one ``(contract variant, documentation variant)`` pair.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from limbo_plugin.spec.models import (
    ContractVariant,
    DocumentationVariant,
    ServiceSpec,
    ToolContract,
    ToolSpecModel,
)
from limbo_plugin.toolapi import canonical_json

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

GENERAL_SERVICE = "general"
GENERAL_TOOLS = ("wait", "escalate_to_human", "finish")
NON_IDEMPOTENT_CLASSES = ("non_idempotent", "key_optional")


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as an agent sees it plus the contract the harness reads."""

    name: str
    service: str
    description: str
    input_schema: dict[str, Any]
    contract: ToolContract
    native_idempotency: str

    @property
    def is_write(self) -> bool:
        return self.contract.is_write

    @property
    def accepts_key(self) -> bool:
        return self.contract.key_param is not None

    def intent(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The values of the contract's intent fields in ``args``."""
        return {name: args.get(name) for name in self.contract.intent_fields}

    def intent_digest(self, args: Mapping[str, Any]) -> str:
        """A stable fingerprint of ``(tool, intent)``: equal for every call of the same intent."""
        text = canonical_json({"tool": self.name, "intent": self.intent(args)})
        return hashlib.sha256(text.encode()).hexdigest()

    def key_in(self, args: Mapping[str, Any]) -> str | None:
        """The idempotency key ``args`` carry, if this tool accepts one."""
        param = self.contract.key_param
        key = args.get(param) if param else None
        return key if isinstance(key, str) else None

    def is_reissue(self, earlier: Mapping[str, Any], later: Mapping[str, Any]) -> bool:
        """Whether ``later`` re-issues ``earlier`` (SPEC §5): equal intent fields, or for a batch
        write equal other intent fields and at least one shared row. The behaviour coder and the
        middleware conditions both use this one definition."""
        batch = self.contract.batch_field
        if batch is None:
            return self.intent(earlier) == self.intent(later)
        others = [f for f in self.contract.intent_fields if f != batch]
        if any(earlier.get(f) != later.get(f) for f in others):
            return False
        rows = later.get(batch)
        rows = rows if isinstance(rows, list) else []
        first = earlier.get(batch)
        return any(row in rows for row in (first if isinstance(first, list) else []))

    def annotations(self) -> dict[str, bool]:
        """The MCP ``ToolAnnotations`` hints (the only part of the contract an MCP client sees)."""
        return {
            "readOnlyHint": self.contract.read_only_hint,
            "idempotentHint": self.contract.idempotent_hint,
            "destructiveHint": self.contract.destructive_hint,
            "openWorldHint": self.service != GENERAL_SERVICE,
        }

    def openai_tool(self) -> dict[str, Any]:
        """The tool in OpenAI function-calling format (what litellm expects)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    @cached_property
    def validator(self) -> Draft202012Validator:
        """``jsonschema``'s validator: the authority, and the words of every error message.
        Imported on first need (tens of milliseconds): valid calls never reach it."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.input_schema)

    @cached_property
    def accepts(self) -> Callable[[Any], bool] | None:
        """A compiled check that passes arguments the schema accepts, or ``None`` when the
        schema uses a keyword outside :data:`FAST_KEYWORDS` (see :func:`compile_fast_check`)."""
        return compile_fast_check(self.input_schema)

    def schema_error(self, arguments: Mapping[str, Any]) -> str | None:
        """A one-line description of the first schema violation, or ``None`` when valid.

        Arguments come here as JSON values (:func:`~limbo_plugin.toolapi.normalize_arguments`).
        Valid ones, nearly every call, pass the compiled check in about a microsecond; the rest
        are judged by ``jsonschema``, which stays the authority and words the message.
        """
        accepts = self.accepts
        if accepts is not None and accepts(arguments):
            return None
        error = next(iter(sorted(self.validator.iter_errors(arguments), key=_error_order)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        message = error.message
        if len(message) > 300:
            message = message[:300] + "…"
        return f"{where}: {message}" if where else message


def _error_order(error: Any) -> tuple[int, str]:
    return (len(error.absolute_path), str(error.message))


FAST_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "patternProperties",
    "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "enum", "const", "anyOf", "allOf", "oneOf", "not",
    "description", "title", "examples", "default", "format",
})
"""Keywords whose meaning is the same in draft 7 (what fastjsonschema compiles) and draft 2020-12
(what the specs are read as); a schema with any other (``$ref``, ``prefixItems``,
``unevaluatedProperties``, ``items`` as a list, …) is checked by ``jsonschema`` alone."""
_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_SUBSCHEMAS = ("additionalProperties", "items", "not")


def _fast_checkable(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= FAST_KEYWORDS:
        return False
    if isinstance(schema.get("items"), list):
        return False
    return (all(_fast_checkable(sub) for name in _SUBSCHEMA_MAPS
                for sub in (schema.get(name) or {}).values())
            and all(_fast_checkable(sub) for name in _SUBSCHEMA_LISTS
                    for sub in schema.get(name) or [])
            and all(_fast_checkable(schema[name]) for name in _SUBSCHEMAS if name in schema))


def compile_fast_check(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A fastjsonschema check of ``schema`` (about 25× faster than ``jsonschema``), or ``None``.

    It may only be *stricter* than ``jsonschema``, never more permissive, because a call it
    passes is valid without further ado: so no defaults are filled in, formats stay annotations
    (as ``jsonschema`` treats them), and schemas with keywords outside :data:`FAST_KEYWORDS`
    get no fast check. Where it is stricter (fastjsonschema anchors ``$`` at the very end of a
    string; Python's ``re`` also before a final newline), ``jsonschema`` decides.
    ``tests/world/test_schema_fast_path.py`` checks the two agree on every tool of the specs.
    """
    if not _fast_checkable(schema):
        return None
    import fastjsonschema

    try:
        check = fastjsonschema.compile(schema, use_default=False, use_formats=False,
                                       detailed_exceptions=False)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None
    failure = fastjsonschema.JsonSchemaValueException

    def accepts(value: Any) -> bool:
        try:
            check(value)
        except failure:
            return False
        return True

    return accepts


@dataclass
class ToolCatalog:
    """Every tool of every service under one contract variant and one documentation variant."""

    services: Mapping[str, ServiceSpec]
    contract_variant: ContractVariant
    docs_variant: DocumentationVariant
    tools: dict[str, ToolDefinition] = field(init=False)
    _per_services: dict[frozenset[str], tuple[ToolDefinition, ...]] = field(
        init=False, default_factory=dict, repr=False, compare=False)
    """:meth:`for_services` by set of services: every episode builds a world from it."""
    _reads: dict[str, frozenset[str]] = field(init=False, default_factory=dict, repr=False,
                                              compare=False)

    def __post_init__(self) -> None:
        self.tools = {}
        for service in self.services.values():
            for spec in service.tools:
                self.tools[spec.name] = self._render(service.service, spec)

    def _render(self, service: str, spec: ToolSpecModel) -> ToolDefinition:
        contract = spec.contract
        properties = dict(spec.parameters)
        sentences = [spec.description.strip()]
        if spec.consistency and self.docs_variant.consistency_sentences:
            sentences.append(spec.consistency.strip())
        variant = self.contract_variant
        if (variant.keys_on_non_idempotent_writes and contract.idempotency == "non_idempotent"):
            properties[variant.key_param] = dict(variant.key_schema) or {"type": "string"}
            contract = contract.model_copy(
                update={"idempotency": "key_optional", "key_param": variant.key_param}
            )
            if variant.key_sentence:
                sentences.append(variant.key_sentence.strip())
        warning = self.docs_variant.non_idempotent_warning
        if contract.key_param is not None and self.docs_variant.keyed_warning:
            warning = self.docs_variant.keyed_warning
        if warning and spec.contract.idempotency in NON_IDEMPOTENT_CLASSES:
            sentences.append(warning.strip().format(record=contract.record_noun,
                                                    key=contract.key_param))
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": list(spec.required),
            "additionalProperties": False,
        }
        return ToolDefinition(
            name=spec.name,
            service=service,
            description=" ".join(sentences),
            input_schema=schema,
            contract=contract,
            native_idempotency=spec.contract.idempotency,
        )

    def get(self, name: str) -> ToolDefinition | None:
        return self.tools.get(name)

    def contract(self, name: str) -> ToolContract:
        return self.tools[name].contract

    def for_services(self, services: Iterable[str]) -> list[ToolDefinition]:
        """The tools of ``services`` followed by the general tools, in spec order."""
        wanted = frozenset(services)
        known = self._per_services.get(wanted)
        if known is None:
            unknown = wanted - set(self.services)
            if unknown:
                raise KeyError(f"unknown services: {', '.join(sorted(unknown))}")
            chosen = [t for t in self.tools.values() if t.service in wanted]
            general = [self.tools[name] for name in GENERAL_TOOLS if name in self.tools]
            known = self._per_services[wanted] = tuple(chosen + general)
        return list(known)

    def reads_of(self, service: str) -> frozenset[str]:
        """The names of ``service``'s tools that write nothing (what can verify a write)."""
        known = self._reads.get(service)
        if known is None:
            known = self._reads[service] = frozenset(
                t.name for t in self.tools.values() if t.service == service and not t.is_write)
        return known

    def service_of(self, name: str) -> str:
        return self.tools[name].service
