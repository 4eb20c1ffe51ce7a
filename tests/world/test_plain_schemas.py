"""A spec's schema made of the common keywords skips ``jsonschema``'s meta-schema check
(:func:`limbo_plugin.spec.schemas.plainly_valid`): that must never let through a schema the
check rejects, and the shipped specs must all take that path, so that a run does not import
``jsonschema`` just to check them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from limbo_plugin.spec.schemas import plainly_valid, schema_problem

ROOT = Path(__file__).resolve().parents[2]

WRONG = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                  st.sampled_from(["strang", "(", "[a-", "a+"]), st.just({"type": 1}),
                  st.lists(st.sampled_from(["string", "string", 1]), max_size=3))
"""Values of the wrong kind (or of the right kind but invalid) for some keyword."""
TYPES = st.sampled_from(["array", "boolean", "integer", "null", "number", "object", "string"])
COUNT = st.integers(-1, 5) | st.floats(-1, 5)
NUMBER = st.integers(-5, 5) | st.floats(allow_nan=True, allow_infinity=True)
PATTERN = st.sampled_from(["^[a-z]+$", "a|b", "(", "[a-", "x{2,3}", ""])


def schemas() -> st.SearchStrategy[Any]:
    """Schemas of the common keywords: mostly values of the right kind, now and then a wrong
    one, and a keyword outside the fast path."""
    def keyword_values(inner: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
        return {
            "type": TYPES | st.lists(TYPES, max_size=3), "description": st.text(max_size=3),
            "title": st.text(max_size=3), "format": st.sampled_from(["date", "x"]),
            "enum": st.lists(st.integers() | st.text(max_size=2), max_size=3),
            "examples": st.lists(st.integers(), max_size=2),
            "minLength": COUNT, "maxLength": COUNT, "minItems": COUNT, "maxItems": COUNT,
            "minProperties": COUNT, "maxProperties": COUNT, "minimum": NUMBER,
            "maximum": NUMBER, "exclusiveMinimum": NUMBER, "exclusiveMaximum": NUMBER,
            "multipleOf": NUMBER, "uniqueItems": st.booleans(), "pattern": PATTERN,
            "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
            "properties": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
            "patternProperties": st.dictionaries(PATTERN, inner, max_size=2),
            "additionalProperties": inner, "items": inner | st.lists(inner, max_size=2),
            "not": inner, "anyOf": st.lists(inner, max_size=2),
            "allOf": st.lists(inner, max_size=2), "oneOf": st.lists(inner, max_size=2),
            "$ref": st.just("#"), "const": st.integers(),
        }

    def schema_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        values = keyword_values(inner)
        entry = st.sampled_from(sorted(values)).flatmap(
            lambda k: st.tuples(st.just(k), st.one_of(values[k], values[k], values[k], WRONG)))
        return st.lists(entry, max_size=4).map(dict) | st.booleans()

    return st.recursive(schema_of(st.booleans()), schema_of, max_leaves=10)


def meta_schema_accepts(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


@settings(max_examples=1000, deadline=None)
@given(schemas())
def test_a_plain_schema_is_one_the_meta_schema_accepts(schema: Any) -> None:
    if plainly_valid(schema):
        assert meta_schema_accepts(schema), json.dumps(schema, default=repr)


def test_the_fast_path_is_no_looser_on_the_usual_mistakes() -> None:
    wrong: dict[str, Any]
    for wrong in ({"type": "strang"}, {"type": ["string", "string"]}, {"type": []},
                  {"minLength": -1},
                  {"minLength": True}, {"pattern": "("}, {"required": ["a", "a"]},
                  {"properties": {"a": {"type": 3}}}, {"anyOf": []}, {"items": [True]},
                  {"multipleOf": 0}):
        assert not plainly_valid(wrong), wrong
        assert schema_problem(wrong) is not None, wrong
    assert plainly_valid({"type": "object", "properties": {"id": {"type": "string",
                          "pattern": "^[a-z]+$", "maxLength": 40}}, "required": ["id"],
                          "additionalProperties": False})


def test_a_scripted_run_of_the_shipped_specs_does_not_import_jsonschema(tmp_path: Path) -> None:
    """Every schema of the spec tree takes the fast path: checking them needs no
    ``jsonschema`` (whose import, with its dependencies, cost more than all the spec files)."""
    code = ("import sys\n"
            "from limbo_plugin.spec.registry import SpecRegistry\n"
            f"registry = SpecRegistry.load({str(ROOT / 'specs')!r})\n"
            "registry.templates\n"
            "print('jsonschema' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
