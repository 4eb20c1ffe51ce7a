"""JSON Schemas written in specs (tool parameters, the key a contract variant adds), checked
when they load.

A schema that is not one (``type: strang``, an unclosed ``pattern``) would otherwise be
accepted, shown to every agent, and fail every episode whose agent calls the tool, each with a
``jsonschema`` traceback. Here it is one :class:`SchemaProblem` with the path inside the schema,
which the spec registry turns into a ``SpecError`` naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from limbo_plugin.spec.backtracking import nested_repeat

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
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        path = tuple(error.absolute_path)
        return SchemaProblem(path, _describe(error, path))
    except RecursionError:
        return SchemaProblem((), "the schema nests too deeply")
    return _backtracking_pattern(schema, ())


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
