"""The published records format is the model's: ``docs/episode-record.schema.json`` and the
field tables of ``docs/records.md`` are regenerated here and must equal the checked-in files,
every field says what it means, and a real record validates against the published schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.records import RECORD_SCHEMA_VERSION
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.schema import (
    FIELDS_END,
    FIELDS_START,
    field_tables,
    schema_text,
    undocumented_fields,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
REGENERATE = "regenerate with `limbo schema > docs/episode-record.schema.json`"


def test_the_checked_in_schema_is_the_models() -> None:
    assert (DOCS / "episode-record.schema.json").read_text(encoding="utf-8") == schema_text(), \
        REGENERATE


def test_the_field_tables_of_the_docs_are_the_models() -> None:
    text = (DOCS / "records.md").read_text(encoding="utf-8")
    start, end = text.index(FIELDS_START), text.index(FIELDS_END) + len(FIELDS_END)
    assert text[start:end] + "\n" == field_tables(), \
        "regenerate the tables of docs/records.md with `limbo schema --fields`"
    assert f"now **{RECORD_SCHEMA_VERSION}**" in text


def test_every_record_field_says_what_it_means() -> None:
    assert undocumented_fields() == []


def test_a_real_record_validates_and_a_version_1_record_does_not(registry: SpecRegistry) -> None:
    schema = json.loads((DOCS / "episode-record.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    key = next(iter_worlds(registry, ["cross_post"], [0], ["post_x"], ["timeout_late"]))
    record = json.loads(run_episode(key, RunConfig(agent="scripted:blind_retry"),
                                    registry=registry).model_dump_json())
    validator.validate(record)
    with pytest.raises(jsonschema.ValidationError, match="2 was expected"):
        validator.validate({**record, "schema_version": 1})


def test_limbo_schema_prints_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["schema_version"]["const"] == 2
    assert main(["schema", "--fields"]) == 0
    assert "| `residual_duplicates` | integer |" in capsys.readouterr().out
