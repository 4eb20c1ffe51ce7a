"""Render the aggregate as the terminal table, Markdown and JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from limbo_plugin.atomic_files import write_text_atomically
from limbo_plugin.report.aggregate import ICC_EXPLAINED, FamilyRow, Rate, Summary
from limbo_plugin.store.files import summary_paths

HEADER = ("family", "episodes", "fired", "duplicate rate", "EOS", "TS", "overclaim")


def _pct(rate: Rate) -> str:
    if rate.rate is None:
        return "—"
    return f"{100 * rate.rate:5.1f}% [{100 * rate.low:.1f}–{100 * rate.high:.1f}]"


def _cells(row: FamilyRow) -> tuple[str, ...]:
    return (row.family, str(row.episodes), str(row.fired), _pct(row.duplicate_rate),
            _pct(row.eos_rate), _pct(row.ts_rate), _pct(row.overclaim_rate))


def render_text(summary: Summary) -> list[str]:
    lines: list[str] = []
    for label, rows in summary.groups.items():
        table = [HEADER, *(_cells(r) for r in rows)]
        widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
        lines.append(label)
        for i, cells in enumerate(table):
            lines.append("  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                   for j, (c, w) in enumerate(zip(cells, widths, strict=True))))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        if summary.icc_line(label):
            lines.append(summary.icc_line(label))
        lines.append("")
    return lines + reading_notes(summary, code=lambda name: f"'{name}'") + run_notes(summary)


def reading_notes(summary: Summary, *, code: Callable[[str], str]) -> list[str]:
    """How to read the tables (what a rate is over, its interval, ρ), below them in the terminal
    and in summary.md alike; ``code`` quotes a value the way the format shows one."""
    notes = [f"Rates are over fired episodes (all episodes for {code('none')}), with 95% "
             "Wilson intervals on the Kish effective sample size (clusters = templates)."]
    if summary.groups:
        notes.append(ICC_EXPLAINED)
    return notes


def run_notes(summary: Summary) -> list[str]:
    """What the rates leave out or do not show (infrastructure errors and what to do about them,
    errors re-run, duplicates committed before an error, tokens and cost): one note each, the
    same words in the terminal and in summary.md."""
    notes = []
    if summary.errors:
        notes.append(f"{summary.errors} episode(s) ended in an infrastructure error and are "
                     "excluded; once the cause shown in each error is fixed, re-run them with "
                     "--limbo-resume.")
    if summary.rerun:
        notes.append(f"{summary.rerun} earlier infrastructure error(s) were re-run "
                     "successfully; the new records are counted.")
    notes.extend(duplicates_before_error_lines(summary))
    usage = usage_line(summary)
    if usage:
        notes.append(usage)
    return notes


def duplicates_before_error_lines(summary: Summary) -> list[str]:
    """Duplicates committed before an infrastructure error: outside the rates, never hidden."""
    found = summary.duplicates_before_error
    if not found:
        return []
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [f"{len(found)} episode(s) had committed a duplicate before their infrastructure "
            f"error (counted here, not in the rates): {shown}."]


def usage_line(summary: Summary) -> str:
    """Tokens and cost; a model with no known price makes the cost "unknown" (or, beside priced
    calls, a lower bound), never $0.0000 — a free-looking run that was not free."""
    if not (summary.cost_usd or summary.prompt_tokens or summary.unpriced_calls):
        return ""
    tokens = (f"Model usage: {summary.prompt_tokens} prompt + {summary.completion_tokens} "
              "completion tokens, ")
    unpriced = (f"{summary.unpriced_calls} model call(s) of models with no known price")
    if summary.cost_unknown:
        return tokens + f"cost unknown ({unpriced})."
    mean = summary.cost_usd / summary.total if summary.total else 0.0
    cost = f"${summary.cost_usd:.4f} (mean ${mean:.4f} per episode)"
    if summary.unpriced_calls:
        return tokens + f"at least {cost}; {unpriced} are not counted."
    return tokens + cost + "."


def render_markdown(summary: Summary) -> str:
    out = ["# Limbo summary", ""]
    for label, rows in summary.groups.items():
        out += [f"## {label}", "", "| " + " | ".join(HEADER) + " |",
                "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
        out.append("")
        if summary.icc_line(label):
            out += [summary.icc_line(label), ""]
    out += reading_notes(summary, code=lambda name: f"`{name}`")  # one paragraph
    out += [f"\n{note}" for note in run_notes(summary)]  # a paragraph each
    return "\n".join(out) + "\n"


def write_summary(summary: Summary, records: str | Path) -> tuple[Path, Path]:
    """Write the summary beside the records file ``records``, named after it."""
    json_path, md_path = summary_paths(records)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(json_path, json.dumps(summary.to_json(), indent=2, sort_keys=True)
                          + "\n")
    write_text_atomically(md_path, render_markdown(summary))
    return json_path, md_path
