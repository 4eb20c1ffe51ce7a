"""The run's verdict on a CI job's page: with ``GITHUB_STEP_SUMMARY`` set (GitHub Actions sets
it in every step), the gate's verdict, its checks, the infrastructure errors and the family
table are appended there as Markdown. ``--limbo-step-summary=off`` leaves the file alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from limbo_plugin.plugin.settings import Limbo

VARIABLE = "GITHUB_STEP_SUMMARY"


def step_summary_markdown(limbo: Limbo) -> str:
    """The Markdown: the gate first (what CI decided on), then why episodes did not run, then
    the family table."""
    from limbo_plugin.plugin.terminal import infrastructure_error_lines

    run = limbo.run
    out: list[str] = []
    result = run.gate_result
    if result is not None:
        verdict = "PASSED" if result.passed else "FAILED"
        out += [f"## Limbo gate `{result.gate}`: {verdict}", "", "| | check | result |",
                "|---|---|---|"]
        out += [f"| {'✅' if c.passed else '❌'} | {_cell(c.name)} | {_cell(c.detail)} |"
                for c in result.checks]
        out.append("")
    errors = infrastructure_error_lines(run.outcomes.values())
    if errors:
        out += [f"**{errors[0]}**", "", *(f"- `{line.strip()}`" for line in errors[1:]), ""]
    if run.stopped_for_errors:
        out += [f"**{run.stopped_for_errors}**", ""]
    records = run.all_outcomes()
    if records:
        from limbo_plugin.report.aggregate import summarize
        from limbo_plugin.report.summary import render_markdown

        table = render_markdown(summarize(records, family_order=limbo.specs.family_order))
        out.append(table.replace("# Limbo summary", "### Limbo summary", 1))
    return "\n".join(out).rstrip() + "\n" if out else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_step_summary(limbo: Limbo) -> str | None:
    """Append the Markdown to ``$GITHUB_STEP_SUMMARY``; a notice if it could not be written."""
    target = os.environ.get(VARIABLE)
    if not target or not limbo.settings.step_summary:
        return None
    markdown = step_summary_markdown(limbo)
    if not markdown:
        return None
    try:
        with Path(target).open("a", encoding="utf-8") as handle:
            handle.write(markdown)
    except OSError as exc:
        return f"${VARIABLE} {target} could not be written: {exc.strerror or exc}"
    return None
