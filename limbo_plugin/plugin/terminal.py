"""What the controller prints: the notices before the run, and after it the family table, the
comparison with a baseline, the gate's verdict, or why nothing ran."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.plugin.items import SkipReason
from limbo_plugin.store.files import shown_path

if TYPE_CHECKING:
    from limbo_plugin.plugin.settings import Limbo
    from limbo_plugin.store.view import EpisodeView


def hint_if_nothing_collected(terminalreporter: Any, limbo: Limbo, exitstatus: int) -> None:
    """A Limbo option was given, yet no episode ran: one line saying why and what to run."""
    settings, run = limbo.settings, limbo.run
    if (not settings.limbo_options or run.outcomes or run.previous or run.selected
            or limbo.config.option.collectonly or exitstatus == pytest.ExitCode.INTERRUPTED):
        return
    if terminalreporter.stats.get("error"):
        return  # a collection error (a broken spec) already said why, in its own line
    from limbo_plugin.discovery import nothing_collected_hint, subdirectory_hint, subdirectory_run

    root = subdirectory_run(limbo.config)
    if root is not None:  # the options were right; the directory was not
        terminalreporter.write_line(subdirectory_hint(limbo.config, root), yellow=True)
        return

    deselected = run.deselected_episodes > 0 or run.keyword_selected_nothing
    option = limbo.config.option
    filtered = bool(getattr(option, "keyword", "") or getattr(option, "markexpr", ""))
    line = nothing_collected_hint(settings.specs_dir, settings.experiment,
                                  list(settings.limbo_options),
                                  (settings.redirected and filtered) or deselected)
    names = _names(limbo) if run.keyword_selected_nothing else None
    if names is not None:  # still one line: the names closest to -k's words
        line += "; " + keyword_suggestion(str(limbo.config.option.keyword), names)
    terminalreporter.write_line(line, yellow=True)


class SubdirectoryHint:
    """Registered for a run given no Limbo option, started without test paths below a Limbo
    project's rootdir: if it collected nothing (pytest's exit 5), one line names the rootdir to
    run from, instead of a bare "collected 0 items"."""

    def __init__(self, line: str) -> None:
        self.line = line

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED \
                and not terminalreporter.stats.get("error"):
            terminalreporter.write_line(self.line, yellow=True)


def print_summary(terminalreporter: Any, limbo: Limbo) -> None:
    settings, run = limbo.settings, limbo.run
    if not limbo.config.option.collectonly:
        from limbo_plugin.plugin.step_summary import write_step_summary

        problem = write_step_summary(limbo)
        if problem:
            run.late_notices.append(problem)
    for notice in run.late_notices:
        terminalreporter.write_line(f"limbo: {notice}", yellow=True)
    records = run.all_outcomes()
    if not records and run.gate_result is None:
        return
    families = limbo.specs.family_order
    from limbo_plugin.report.aggregate import summarize
    from limbo_plugin.report.passk import render_text as pass_k_text
    from limbo_plugin.report.summary import render_text, write_summary

    write = terminalreporter.write_line
    if records:
        summary = summarize(records, family_order=families)
        terminalreporter.section("Limbo summary")
        if run.stopped_early:
            write(f"PARTIAL: the run stopped early; the table covers the {len(records)} "
                  "episode(s) recorded so far. Re-run with --limbo-resume to finish it.",
                  yellow=True, bold=True)
        for line in render_text(summary):
            write(line)
        for line in pass_k_text(records, family_order=families):
            write(line)
        where = f"Records: {shown_path(settings.records_path)} ({len(run.outcomes)} new " \
                f"this run, run id {run.run_id})."
        try:
            if run.write_failed:
                raise OSError("the records file could not be written either")
            json_path, md_path = write_summary(summary, settings.records_path)
        except OSError as exc:
            write(f"{where} The summary files were not written: {exc.strerror or exc}.",
                  yellow=True)
        else:
            write(f"{where} Summary: {shown_path(json_path)}, {shown_path(md_path)}")
    for line in infrastructure_error_lines(run.outcomes.values()):
        write(line, yellow=True)
    if run.baseline_path is not None and records:
        from limbo_plugin.report.compare import write_baseline_comparison

        write_baseline_comparison(terminalreporter, run.baseline, records,
                                  shown_path(run.baseline_path), families)
    if run.rotated_to is not None and run.writer is not None and run.writer.written:
        write(f"The previous records are kept in {shown_path(run.rotated_to)} "
              f"(`limbo runs {shown_path(settings.records_path)}` lists every run).")
    skipped_for_cost = run.skips.get(SkipReason.COST_LIMIT, 0)
    if skipped_for_cost:
        write(f"Cost limit of ${settings.cost_limit} reached: {skipped_for_cost} episode(s) "
              "were not started.", yellow=True)
    if run.gate_result is not None:
        terminalreporter.section("Limbo gate")
        for i, line in enumerate(run.gate_result.lines()):
            color = {"green": True} if run.gate_result.passed else {"red": True}
            write(line, **(color if i == 0 else {}))


def infrastructure_error_lines(outcomes: Iterable[EpisodeView], shown: int = 5) -> list[str]:
    """This run's infrastructure errors grouped by cause (the first line of each), most
    frequent first: printed whatever ``--tb`` says, since with ``--tb=no`` nothing else would
    say why the episodes did not run."""
    causes = Counter((o.error or "").strip().splitlines()[0][:300] if (o.error or "").strip()
                     else "(no message)" for o in outcomes if o.error is not None)
    if not causes:
        return []
    total = sum(causes.values())
    lines = [f"Infrastructure errors: {total} episode(s), by cause (fix it, then re-run them "
             "with --limbo-resume):"]
    ranked = sorted(causes.items(), key=lambda item: (-item[1], item[0]))
    lines += [f"  {count} × {cause}" for cause, count in ranked[:shown]]
    if len(ranked) > shown:
        rest = sum(count for _, count in ranked[shown:])
        lines.append(f"  {rest} × {len(ranked) - shown} other cause(s) (limbo show <episode id>)")
    return lines


def plan_lines(per_agent: Mapping[str, int], cost_limit: float | None,
               already_recorded: int = 0) -> list[str]:
    """The plan of a model-backed run, one line per model agent — its episodes, model calls,
    tokens and estimated cost (``limbo plan``'s estimate from the paper's figures) — and the
    budget (``--limbo-cost-limit``) it is held to; nothing for scripted runs."""
    from limbo_plugin.planning.cost import COMPLETION_SHARE, budget

    rows = [budget(agent, count, None, COMPLETION_SHARE)
            for agent, count in sorted(per_agent.items())
            if agent.split(":", 1)[0] in ("litellm", "harness")]
    if not rows:
        return []
    lines = []
    for row in rows:
        calls = "?" if row.model_calls is None else f"~{row.model_calls:,.0f}"
        tokens = "?" if row.tokens is None else f"~{row.tokens:,.0f}"
        cost = "cost unknown" if row.cost_usd is None else f"~${row.cost_usd:,.2f}"
        note = f" ({row.note})" if row.note else ""
        resumed = f", fewer those already recorded ({already_recorded})" if already_recorded \
            else ""
        lines.append(f"limbo: plan: {row.agent}: {row.episodes} episode(s){resumed}, {calls} "
                     f"model calls, {tokens} tokens, {cost}{note}")
    known = sum(r.cost_usd for r in rows if r.cost_usd is not None)
    if cost_limit is not None:
        over = " — the estimate is above it: the run will stop short" if known > cost_limit \
            else ""
        lines.append(f"limbo: budget: --limbo-cost-limit ${cost_limit:g} stops starting episodes "
                     f"once the recorded cost reaches it{over}")
    else:
        lines.append("limbo: budget: none (--limbo-cost-limit USD sets one; estimates from the "
                     "paper's figures, `limbo plan --cassette RECORDS` from a pilot "
                     "(--limbo-sample N))")
    return lines


def hint_if_keyword_selects_nothing(terminalreporter: Any, limbo: Limbo) -> None:
    """``-k`` deselected every episode (``-k late_comit``) and no Limbo option was given (else
    :func:`hint_if_nothing_collected` says it): one line with the family, mode and template
    names closest to its words, instead of pytest's bare exit 5."""
    names = _names(limbo) if limbo.run.keyword_selected_nothing else None
    if names is None or limbo.settings.limbo_options:
        return
    terminalreporter.write_line(keyword_hint(str(limbo.config.option.keyword), names,
                                             limbo.settings.experiment), yellow=True)


def _names(limbo: Limbo) -> dict[str, Iterable[str]] | None:
    registry = limbo.specs.registry
    if registry is None:
        return None
    return {"family": registry.families, "mode": registry.faults,
            "template": registry.templates}


KEYWORD_OPERATORS = {"and", "or", "not"}


def keyword_hint(expression: str, names: Mapping[str, Iterable[str]], experiment: str) -> str:
    """The line for a ``-k`` expression that selects no episode."""
    return (f"limbo: -k {expression!r} selects no episode of experiment {experiment!r}; "
            + keyword_suggestion(expression, names))


def keyword_suggestion(expression: str, names: Mapping[str, Iterable[str]]) -> str:
    """For each word of ``expression`` that names nothing, the closest names of each kind
    (difflib); else the families to choose from."""
    kinds: dict[str, str] = {}
    for kind, values in names.items():
        for name in values:
            kinds.setdefault(name, kind)
    words = [w for w in re.findall(r"[\w.:-]+", expression) if w not in KEYWORD_OPERATORS]
    unknown = [word for word in words if word not in kinds]
    guesses = []
    for word in unknown:
        close = difflib.get_close_matches(word, list(kinds), n=3, cutoff=0.6)
        if close:
            shown = " or ".join(f"{name} ({kinds[name]})" for name in close)
            guesses.append(f"{shown} for {word!r}")
    if guesses:
        return f"did you mean {', '.join(guesses)}?"
    if words and not unknown:
        return "each of its names exists, but no episode matches them together"
    families = ", ".join(name for name, kind in kinds.items() if kind == "family")
    return f"families: {families} (limbo list modes, limbo list templates)"
