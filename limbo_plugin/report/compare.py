"""``limbo compare A B``: which episodes flipped between two runs, per fault family.

Worlds are seeded by (template, instance, focal write, fault mode) alone, so two runs of the same
worlds come in pairs, and a paired test on the episodes that flipped removes the large
between-world variation (the exact McNemar test of :mod:`limbo_plugin.stats.paired`).

What pairs with what: an episode's world and repeat index, plus every configuration field that
takes more than one value inside either run. A field that is constant within each run is what
the comparison is about (A ran ``condition: vanilla``, B ran ``condition: guard``), so it is left
out of the pairing; a field that varies inside a run (three agents in each file) pairs like with
like. Episodes with an infrastructure error are not compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from limbo_plugin.records import GIVE_RECORDS, RUN_FIELDS, make_test_id
from limbo_plugin.stats import holm, mcnemar_exact

if TYPE_CHECKING:
    from limbo_plugin.report.aggregate import Rate

OutcomeName = Literal["passed", "eos", "no_duplicate"]
OUTCOMES: tuple[OutcomeName, ...] = ("passed", "eos", "no_duplicate")
SHOWN_IDS = 10
"""Flipped ids the text rendering lists per family and direction (``--all``: every one)."""


class Comparable(Protocol):
    """What a comparison reads of an episode: an :class:`~limbo_plugin.store.view.EpisodeView`
    or a whole :class:`~limbo_plugin.records.EpisodeRecord`."""

    @property
    def episode_id(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def eos(self) -> bool | None: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def error(self) -> str | None: ...
    @property
    def passed(self) -> bool: ...


def outcome_of(record: Comparable, which: OutcomeName) -> bool:
    """The binary outcome compared: the test's verdict (default), EOS, or no duplicate."""
    if which == "eos":
        return bool(record.eos)
    if which == "no_duplicate":
        return record.duplicates == 0
    return record.passed


def repeat_of(record: Comparable) -> int:
    return int(getattr(record, "repeat", 0) or 0)


def test_id_of(record: Comparable) -> str:
    """The id pytest printed for the episode (what ``limbo show`` and the explorer take)."""
    given = getattr(record, "test_id", "")
    return str(given) if given else make_test_id(record.episode_id, record, repeat_of(record))


@dataclass
class Side:
    """One of the two runs: where it came from and what it held."""

    label: str
    episodes: int
    errors: int
    values: dict[str, list[str]]
    """Each configuration field's values in this run, in order of appearance."""

    def describe(self, fields: Sequence[str]) -> str:
        return ", ".join(f"{name}={'/'.join(self.values[name])}" for name in fields)


@dataclass
class Flip:
    a_test_id: str
    b_test_id: str


@dataclass
class FamilyComparison:
    family: str
    paired: int = 0
    a_held: int = 0
    """Paired episodes whose outcome held in A (passed, by default)."""
    b_held: int = 0
    worse: list[Flip] = field(default_factory=list)
    """Held in A, not in B (pass→fail)."""
    better: list[Flip] = field(default_factory=list)
    """Held in B, not in A (fail→pass)."""
    p_value: float = 1.0
    p_holm: float = 1.0
    a_duplicate: Rate | None = None
    """A's duplicate rate in this family with its interval, as A's own summary and gate show
    it (when A holds one configuration)."""
    b_duplicate: Rate | None = None


@dataclass
class Comparison:
    a: Side
    b: Side
    outcome: OutcomeName
    compared: list[str]
    """The configuration fields constant within each run and different between them."""
    paired_on: list[str]
    """The configuration fields that pair episodes (besides the world and repeat)."""
    families: list[FamilyComparison]
    only_a: int = 0
    only_b: int = 0

    @property
    def paired(self) -> int:
        return sum(f.paired for f in self.families)

    def to_json(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {"label": s.label, "episodes": s.episodes, "infrastructure_errors": s.errors,
                    "configuration": s.values}

        return {
            "a": side(self.a), "b": side(self.b), "outcome": self.outcome,
            "compared": self.compared, "paired_on": ["world", "repeat", *self.paired_on],
            "paired": self.paired, "only_a": self.only_a, "only_b": self.only_b,
            "families": [{
                "family": f.family, "paired": f.paired, "a_held": f.a_held, "b_held": f.b_held,
                "pass_to_fail": len(f.worse), "fail_to_pass": len(f.better),
                "p_value": f.p_value, "p_holm": f.p_holm,
                "a_duplicate_rate": None if f.a_duplicate is None else asdict(f.a_duplicate),
                "b_duplicate_rate": None if f.b_duplicate is None else asdict(f.b_duplicate),
                "pass_to_fail_ids": [vars(x) for x in f.worse],
                "fail_to_pass_ids": [vars(x) for x in f.better],
            } for f in self.families],
        }


def _values(records: Sequence[Comparable]) -> dict[str, list[str]]:
    values: dict[str, dict[str, None]] = {name: {} for name in RUN_FIELDS}
    for record in records:
        for name in RUN_FIELDS:
            values[name][str(getattr(record, name))] = None
    return {name: list(found) for name, found in values.items()}


def compare_runs(a: Iterable[Comparable], b: Iterable[Comparable], *,
                 family_order: Sequence[str] = (), outcome: OutcomeName = "passed",
                 labels: tuple[str, str] = ("A", "B")) -> Comparison:
    """Pair the episodes of ``a`` and ``b`` and count, per family, those whose ``outcome``
    flipped, with the exact McNemar p-value (Holm-adjusted across families)."""
    a_all, b_all = list(a), list(b)
    a_ok = [r for r in a_all if r.error is None]
    b_ok = [r for r in b_all if r.error is None]
    a_values, b_values = _values(a_all), _values(b_all)
    paired_on = [n for n in RUN_FIELDS if len(a_values[n]) > 1 or len(b_values[n]) > 1]
    compared = [n for n in RUN_FIELDS if n not in paired_on and a_values[n] != b_values[n]]

    def key(record: Comparable) -> tuple[Any, ...]:
        return (record.episode_id, repeat_of(record),
                *(str(getattr(record, n)) for n in paired_on))

    before = {key(r): r for r in a_ok}  # a resumed file's later copy wins
    after = {key(r): r for r in b_ok}
    rows: dict[str, FamilyComparison] = {}
    for k, new in after.items():
        old = before.get(k)
        if old is None:
            continue
        row = rows.setdefault(new.family, FamilyComparison(new.family))
        held_a, held_b = outcome_of(old, outcome), outcome_of(new, outcome)
        row.paired += 1
        row.a_held += held_a
        row.b_held += held_b
        if held_a != held_b:
            flip = Flip(test_id_of(old), test_id_of(new))
            (row.worse if held_a else row.better).append(flip)
    rank = {name: i for i, name in enumerate(family_order)}
    a_cells, b_cells = _cells(a_all, family_order), _cells(b_all, family_order)
    for row in rows.values():
        row.a_duplicate, row.b_duplicate = a_cells.get(row.family), b_cells.get(row.family)
    families = sorted(rows.values(), key=lambda r: (rank.get(r.family, len(rank)), r.family))
    raw = [mcnemar_exact(len(f.worse), len(f.better)) for f in families]
    for row, p, adjusted in zip(families, raw, holm(raw) if raw else [], strict=True):
        row.p_value, row.p_holm = p, adjusted
        row.worse.sort(key=lambda f: f.b_test_id)
        row.better.sort(key=lambda f: f.b_test_id)
    return Comparison(
        a=Side(labels[0], len(a_all), len(a_all) - len(a_ok), a_values),
        b=Side(labels[1], len(b_all), len(b_all) - len(b_ok), b_values),
        outcome=outcome, compared=compared, paired_on=paired_on, families=families,
        only_a=len(before.keys() - after.keys()), only_b=len(after.keys() - before.keys()))


def _cells(records: Sequence[Comparable], family_order: Sequence[str]) -> dict[str, Rate]:
    """Each family's duplicate rate in a run of one configuration, from its own summary (the
    interval its terminal summary, ``limbo summary`` and gate show); nothing for a run of
    several configurations, whose families have one cell per configuration."""
    from limbo_plugin.report.aggregate import summarize

    summary = summarize(records, family_order=family_order)  # type: ignore[arg-type]
    if len(summary.groups) != 1:
        return {}
    (rows,) = summary.groups.values()
    return {row.family: row.duplicate_rate for row in rows if row.duplicate_rate.rate is not None}


def _interval(rate: Rate | None) -> str:
    if rate is None or rate.rate is None:
        return "—"
    return f"{100 * rate.rate:.1f}% [{100 * rate.low:.1f}–{100 * rate.high:.1f}]"


HELD = {"passed": "passed", "eos": "EOS", "no_duplicate": "no dup"}


def render_text(comparison: Comparison, *, all_ids: bool = False) -> list[str]:
    """The comparison as the terminal shows it: who is compared, a table per family, and
    the ids of the episodes that flipped."""
    c = comparison
    shown = c.compared or [n for n in RUN_FIELDS if len(c.a.values[n]) == 1][:1]
    lines = [f"A: {c.a.label} ({c.a.episodes} episodes; {c.a.describe(shown)})",
             f"B: {c.b.label} ({c.b.episodes} episodes; {c.b.describe(shown)})"]
    what = {"passed": "passed (exactly once, no overclaim)", "eos": "exactly-once success",
            "no_duplicate": "no duplicate"}[c.outcome]
    pairing = ", ".join(["world", "repeat", *c.paired_on])
    lines.append(f"Outcome: {what}; episodes paired on {pairing}; {c.paired} pairs "
                 f"({c.only_a} only in A, {c.only_b} only in B"
                 + (f"; infrastructure errors left out: A {c.a.errors}, B {c.b.errors}"
                    if c.a.errors or c.b.errors else "") + ").")
    if not c.families:
        lines.append("No episode is in both runs: nothing to compare (same worlds and, for "
                     "fields that vary within a run, the same configuration).")
        return lines
    held = HELD[c.outcome]
    rates = any(f.a_duplicate or f.b_duplicate for f in c.families)
    header: tuple[str, ...] = (
        "family", "paired", f"A {held}", f"B {held}", "pass→fail", "fail→pass", "McNemar p",
        *(("Holm p",) if len(c.families) > 1 else ()),
        *(("A dup rate [95%]", "B dup rate [95%]") if rates else ()))
    table = [header]
    for f in c.families:
        table.append((f.family, str(f.paired), str(f.a_held), str(f.b_held), str(len(f.worse)),
                      str(len(f.better)), f"{f.p_value:.3g}",
                      *((f"{f.p_holm:.3g}",) if len(c.families) > 1 else ()),
                      *((_interval(f.a_duplicate), _interval(f.b_duplicate)) if rates else ())))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines.append("")
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if len(c.families) > 1:
        lines.append("McNemar p: exact, raw; Holm p: adjusted across the families (as the "
                     "gate's baseline comparison and the HTML report show them).")
    if rates:
        lines.append("Dup rate: each run's duplicate rate over its fired episodes (all for "
                     "'none'), with the 95% interval its own summary and gate show.")
    for f in c.families:
        for direction, flips in (("pass→fail", f.worse), ("fail→pass", f.better)):
            if not flips:
                continue
            lines.append(f"{f.family}: {len(flips)} {direction} (B's ids):")
            listed = flips if all_ids else flips[:SHOWN_IDS]
            lines += [f"  {flip.b_test_id}" for flip in listed]
            if len(listed) < len(flips):
                lines.append(f"  … and {len(flips) - len(listed)} more (--all lists every one, "
                             "--json too)")
    return lines


def read_side(path: str | Path) -> list[Any]:
    """The records of one run, as slim rows (traces unparsed); a missing, empty or broken file
    is a :class:`~limbo_plugin.errors.UsageError` naming it."""
    from limbo_plugin.errors import UsageError
    from limbo_plugin.store.read import read_views

    file = Path(path)
    if not file.is_file():
        what = "is a directory" if file.is_dir() else "does not exist"
        raise UsageError(f"{path} {what}; {GIVE_RECORDS}")
    records = read_views(file)
    if not records:
        raise UsageError(f"{path} holds no records")
    return records


def run_command(args: Any, family_order: Sequence[str]) -> int:
    """Print the comparison of ``args.a`` and ``args.b``; exit 0 (a comparison is not a
    verdict: ``limbo gate --baseline`` is)."""
    import json

    comparison = compare_runs(read_side(args.a), read_side(args.b), family_order=family_order,
                              outcome=args.outcome, labels=(args.a, args.b))
    if args.json:
        print(json.dumps(comparison.to_json(), indent=2))
    else:
        print("\n".join(render_text(comparison, all_ids=args.all)))
    return 0


def write_baseline_comparison(terminalreporter: Any, baseline: Sequence[Comparable],
                              records: Sequence[Comparable], baseline_label: str,
                              family_order: Sequence[str]) -> None:
    """After a run's family table (``--limbo-baseline``): what ``limbo compare BASELINE
    RECORDS`` prints, with or without a gate."""
    comparison = compare_runs(baseline, records, family_order=family_order,
                              labels=(f"baseline {baseline_label}", "this run"))
    terminalreporter.section("Limbo comparison with the baseline")
    for line in render_text(comparison):
        terminalreporter.write_line(line)
