"""One view of an episode for the summary, the gate, ``limbo runs`` and the report, with the
record's own field names and types, and the spec labels set once when the report loads it."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

from reportkit import cell, load, record, write

from limbo_plugin.records import EpisodeRecord, Usage
from limbo_plugin.store.read import read_views
from limbo_plugin.store.view import EpisodeView, ViewUsage

NOT_RECORD_FIELDS = {"family_rank", "hidden_outcome", "group", "execute", "late_delay",
                     "contract_class", "tier", "pooled", "delay_s", "uncertain_count",
                     "first_action", "focal_keyed", "reissue_key", "reissue_after_s", "source",
                     "offset", "length"}
"""What the view adds: labels from the specs, what the trace says, where the line lies."""


def test_one_view_for_every_reader_under_one_name() -> None:
    """The summary's ``Outcome`` and the report's ``EpisodeRow`` were other names for it."""
    import limbo_plugin.report.load as load_module
    import limbo_plugin.store.read as read_module

    others = [name for module in (read_module, load_module) for name, value in
              vars(module).items() if value is EpisodeView and name != "EpisodeView"]
    assert others == []
    view = EpisodeView(episode_id="x", template="x", family="x", agent="x", contract="x",
                       docs="x", instruction="x", condition="x", operator="x", fired=True,
                       ts=True, eos=True, overclaim=False, duplicates=0)
    assert not hasattr(view, "__dict__"), "slotted"


def test_the_view_declares_the_records_fields_as_the_record_does() -> None:
    view = typing.get_type_hints(EpisodeView)
    record = typing.get_type_hints(EpisodeRecord)
    own = {f.name for f in fields(EpisodeView)} - NOT_RECORD_FIELDS
    assert own <= set(EpisodeRecord.model_fields), own - set(EpisodeRecord.model_fields)
    for name in own - {"usage"}:
        # the same type, or the same type or None (a line that leaves it out is caught later)
        assert view[name] in (record[name], record[name] | None), name
    usage = typing.get_type_hints(ViewUsage)
    assert set(usage) <= set(Usage.model_fields)
    assert all(usage[n] == typing.get_type_hints(Usage)[n] for n in usage)


def test_the_report_and_the_summary_read_the_same_view(tmp_path: Path) -> None:
    records = cell(6, 2, fault_mode="timeout_late")
    path = write(tmp_path / "r.jsonl", records)
    outcomes = sorted(read_views(path), key=lambda v: v.episode_id)
    rows = sorted(load([path]).rows, key=lambda v: v.episode_id)
    assert [(o.episode_id, o.fingerprint(), o.duplicates, o.eos) for o in outcomes] == \
        [(r.episode_id, r.fingerprint(), r.duplicates, r.eos) for r in rows]
    assert {r.hidden_outcome for r in rows} == {"late"} and {r.group for r in rows} == {"T"}
    assert {o.hidden_outcome for o in outcomes} == {None}, "the summary does not label"


def test_a_record_that_ended_in_an_error_is_dropped_not_refused(tmp_path: Path) -> None:
    """An infrastructure error has no grade (ts, eos and overclaim null); the report used to
    refuse the whole file ("not an episode record (ts: Input should be a valid boolean)")."""
    errored = record(template="z", error="infrastructure error: the provider is down")
    errored = errored.model_copy(update={"ts": None, "eos": None, "overclaim": None})
    loaded = load([write(tmp_path / "r.jsonl", [*cell(4, 1), errored])])
    assert len(loaded.rows) == 4 and loaded.errors_dropped == 1


def test_the_view_of_a_record_equals_the_view_of_its_line() -> None:
    """A serial run's controller takes the view from the record it holds
    (:meth:`EpisodeView.from_record`) instead of parsing the line it writes: the two agree on
    every field, with usage, without it, and for an episode that ended in an error."""
    from limbo_plugin.records import record_line

    plain = cell(3, 1, fault_mode="timeout_late")
    priced = [r.model_copy(update={"usage": Usage(prompt_tokens=12, completion_tokens=5,
                                                  cost_usd=0.25, unpriced_calls=1),
                                   "experiment": "e1", "arm": "a", "repeat": 2})
              for r in plain]
    errored = record(template="z", error="infrastructure error: the provider is down")
    errored = errored.model_copy(update={"ts": None, "eos": None, "overclaim": None})
    for each in [*plain, *priced, errored]:
        held, line = record_line(each)
        assert EpisodeView.from_record(held) == EpisodeView.from_json(line)
    assert EpisodeView.from_record(priced[0]).usage == ViewUsage(12, 5, 0.25, 1)
