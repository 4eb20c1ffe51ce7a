"""JSON Schemas written in specs (tool parameters, the key a contract variant adds), checked
when they load.

A schema that is not one (``type: strang``, an unclosed ``pattern``) would otherwise be
accepted, shown to every agent, and fail every episode whose agent calls the tool, each with a
``jsonschema`` traceback. Here it is one :class:`SchemaProblem` with the path inside the schema,
which the spec registry turns into a ``SpecError`` naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from limbo_plugin.spec.backtracking import nested_repeat

if TYPE_CHECKING:
    from jsonschema.exceptions import SchemaError

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


@dataclass(frozen=True)
class SchemaProblem:
    """What is wrong with a schema and where: ``path`` is inside the schema."""

    path: tuple[str | int, ...]
    message: str


def schema_problem(schema: Mapping[str, Any]) -> SchemaProblem | None:
    """The first problem of ``schema`` as a JSON Schema (draft 2020-12), or ``None``.

    Regular expressions (``pattern``, ``patternProperties``) are compiled with Python's ``re``,
    the engine validation uses, so an unclosed group fails here and not in an episode.
    """
    try:
        plain = plainly_valid(schema)
    except RecursionError:
        return SchemaProblem((), "the schema nests too deeply")
    if plain:
        return (_backtracking_pattern(schema, ()) or _unsatisfiable(schema, ())
                or _unresolved_ref(schema, schema, ()))
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        path = tuple(error.absolute_path)
        return SchemaProblem(path, _describe(error, path))
    except RecursionError:
        return SchemaProblem((), "the schema nests too deeply")
    return (_backtracking_pattern(schema, ()) or _unsatisfiable(schema, ())
            or _unresolved_ref(schema, schema, ()))


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _regex(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _type_names(value: Any) -> bool:
    names = value if isinstance(value, list) else [value]
    return (bool(names) and all(isinstance(n, str) and n in JSON_TYPES for n in names)
            and len(set(names)) == len(names))


def _unique_strings(value: Any) -> bool:
    return (isinstance(value, list) and all(isinstance(v, str) for v in value)
            and len(set(value)) == len(value))


def _schemas(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(plainly_valid(v) for v in value)


def _schema_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and plainly_valid(v)
                                           for k, v in value.items())


_PLAIN_KEYWORDS: dict[str, Callable[[Any], bool]] = {
    "type": _type_names,
    "description": lambda v: isinstance(v, str),
    "title": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),
    "enum": lambda v: isinstance(v, list),
    "examples": lambda v: isinstance(v, list),
    "minLength": _count, "maxLength": _count, "minItems": _count, "maxItems": _count,
    "minProperties": _count, "maxProperties": _count,
    "minimum": _number, "maximum": _number,
    "exclusiveMinimum": _number, "exclusiveMaximum": _number,
    "multipleOf": lambda v: _number(v) and v > 0,
    "uniqueItems": lambda v: isinstance(v, bool),
    "pattern": _regex,
    "required": _unique_strings,
    "properties": _schema_map,
    "patternProperties": lambda v: _schema_map(v) and all(_regex(k) for k in v),
    "additionalProperties": lambda v: plainly_valid(v),
    "items": lambda v: plainly_valid(v),
    "not": lambda v: plainly_valid(v),
    "anyOf": _schemas, "allOf": _schemas, "oneOf": _schemas,
}
"""The keywords a spec's schema nearly always uses, each with a check of its value that is
no looser than the draft 2020-12 meta-schema's."""


def plainly_valid(schema: Any) -> bool:
    """Whether ``schema`` is a valid draft 2020-12 schema made only of the common keywords
    (:data:`_PLAIN_KEYWORDS`), each with a value of the right kind.

    ``True`` is a proof, so the meta-schema check can be skipped (and ``jsonschema``, with its
    dependencies, not imported: they cost a run's start-up more than all its spec files); ``False``
    means only "ask ``jsonschema``", which decides, and words the problem.
    ``tests/world/test_plain_schemas.py`` checks that ``True`` never disagrees with it.
    """
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, value in schema.items():
        check = _PLAIN_KEYWORDS.get(keyword)
        if check is None or not check(value):
            return False
    return True


def _backtracking_pattern(value: Any, path: tuple[str | int, ...]) -> SchemaProblem | None:
    """The first ``pattern`` (or ``patternProperties`` key) whose matching time can explode."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = (*path, key)
            if key == "pattern" and isinstance(item, str) and nested_repeat(item):
                return SchemaProblem(here, f"{item!r} repeats a repetition (like (a+)+): "
                                     "matching it can take exponential time; write it without "
                                     "a quantifier inside a quantified group")
            if key == "patternProperties" and isinstance(item, Mapping):
                for pattern in item:
                    if isinstance(pattern, str) and nested_repeat(pattern):
                        return SchemaProblem(here, f"{pattern!r} repeats a repetition "
                                             "(like (a+)+): matching it can take exponential "
                                             "time")
            found = _backtracking_pattern(item, here)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _backtracking_pattern(item, (*path, i))
            if found is not None:
                return found
    return None


_BOUNDS = (("minLength", "maxLength", "text"), ("minItems", "maxItems", "list"),
           ("minProperties", "maxProperties", "object"), ("minimum", "maximum", "number"))
"""Lower and upper bounds that leave nothing between them when the lower is the larger."""

_JSON_KIND = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
              "array": (list,), "object": (dict,), "null": (type(None),)}

_SUBSCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA = ("items", "additionalProperties", "contains", "not", "propertyNames", "if",
              "then", "else", "unevaluatedItems", "unevaluatedProperties")
_SUBSCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")


def _unsatisfiable(schema: Any, path: tuple[str | int, ...]) -> SchemaProblem | None:
    """A valid schema no value can satisfy, or whose ``enum`` says a value twice: every call of
    the tool would be refused (or the list means something other than it says), a mistake the
    meta-schema does not catch. Checked in every subschema."""
    if not isinstance(schema, Mapping):
        return None
    for low, high, kind in _BOUNDS:
        lo, hi = schema.get(low), schema.get(high)
        if isinstance(lo, int | float) and isinstance(hi, int | float) and lo > hi:
            return SchemaProblem((*path, low), f"{low} {lo} is more than {high} {hi}: no "
                                 f"{kind} fits")
    lo = schema.get("exclusiveMinimum", schema.get("minimum"))
    hi = schema.get("exclusiveMaximum", schema.get("maximum"))
    if (("exclusiveMinimum" in schema or "exclusiveMaximum" in schema)
            and isinstance(lo, int | float) and isinstance(hi, int | float) and lo >= hi):
        return SchemaProblem(path, f"the bounds {lo} and {hi} leave no number between them")
    enum = schema.get("enum")
    if isinstance(enum, list):
        problem = _enum_problem(enum, schema.get("type"))
        if problem is not None:
            return SchemaProblem((*path, "enum"), problem)
    return _unsatisfiable_within(schema, path)


def _unsatisfiable_within(schema: Mapping[str, Any], path: tuple[str | int, ...]
                          ) -> SchemaProblem | None:
    for key in _SUBSCHEMAS:
        children = schema.get(key)
        if isinstance(children, Mapping):
            for name, child in children.items():
                found = _unsatisfiable(child, (*path, key, name))
                if found is not None:
                    return found
    for key in _SUBSCHEMA:
        found = _unsatisfiable(schema.get(key), (*path, key))
        if found is not None:
            return found
    for key in _SUBSCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                found = _unsatisfiable(child, (*path, key, i))
                if found is not None:
                    return found
    return None


def _enum_problem(enum: list[Any], declared: Any) -> str | None:
    """What is wrong with an ``enum`` list: empty, a value twice, a value of another type than
    the schema's ``type`` (then no call could pass both)."""
    if not enum:
        return "enum lists no value: no value fits"
    seen: list[Any] = []
    for value in enum:
        if any(value == other and type(value) is type(other) for other in seen):
            return f"enum lists {value!r} twice"
        seen.append(value)
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and all(t in _JSON_KIND for t in types):
        for value in enum:
            if not any(_of_kind(value, t) for t in types):
                return (f"enum value {value!r} is not of the schema's type "
                        f"({', '.join(types)}): no call could pass both")
    return None


def _of_kind(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_KIND[kind])


def _unresolved_ref(value: Any, root: Any, path: tuple[str | int, ...]) -> SchemaProblem | None:
    """A ``$ref`` that leads outside the schema (fetched from the network when a call is
    validated) or to nothing in it (every call then fails to validate, not the agent's)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = (*path, key)
            if key == "$ref" and isinstance(item, str):
                if not item.startswith("#"):
                    return SchemaProblem(here, f"$ref {item!r} points outside this schema; a "
                                         "tool's schema is whole (refer within it, '#/…')")
                if not _resolves(root, item[1:]):
                    return SchemaProblem(here, f"$ref {item!r} leads nowhere in this schema")
            found = _unresolved_ref(item, root, here)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _unresolved_ref(item, root, (*path, i))
            if found is not None:
                return found
    return None


def _resolves(root: Any, pointer: str) -> bool:
    """Whether the JSON pointer (``/$defs/x``; empty: the root) names a part of ``root``."""
    node = root
    for token in [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]:
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return pointer == "" or pointer.startswith("/")


def _describe(error: SchemaError, path: tuple[str | int, ...]) -> str:
    value = error.instance
    keyword = path[-1] if path else None
    if keyword == "type" and isinstance(value, str | list):
        names = value if isinstance(value, list) else [value]
        unknown = [n for n in names if n not in JSON_TYPES]
        if unknown:
            return (f"unknown JSON-schema type {unknown[0]!r}; valid: "
                    + ", ".join(JSON_TYPES))
    if error.validator == "format" and error.validator_value == "regex":
        try:
            re.compile(str(value))
        except re.error as exc:
            return f"{value!r} is not a valid regular expression: {exc}"
    if keyword == "patternProperties" and isinstance(value, Mapping):
        for pattern in value:
            try:
                re.compile(str(pattern))
            except re.error as exc:
                return f"{pattern!r} is not a valid regular expression: {exc}"
    message = error.message
    return message if len(message) <= 300 else message[:300] + "…"
