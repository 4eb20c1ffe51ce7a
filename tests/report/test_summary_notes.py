"""The notes below the summary's tables say the same in the terminal and in summary.md: they
are built once, so the Markdown file cannot lose a sentence the terminal shows."""

from __future__ import annotations

from limbo_plugin.report.aggregate import Summary
from limbo_plugin.report.summary import render_markdown, render_text


def _every_note() -> Summary:
    """A run with every note: an error, an error re-run, a duplicate before an error, usage."""
    return Summary(errors=2, total=10, prompt_tokens=1200, completion_tokens=300, cost_usd=0.25,
                   rerun=1, duplicates_before_error=["incident_open-i0-ticket-timeout_post"])


def test_the_terminal_and_the_markdown_notes_agree() -> None:
    summary = _every_note()
    text = render_text(summary)
    paragraphs = render_markdown(summary).rstrip("\n").split("\n\n")
    notes = [line for line in text if line]
    assert len(notes) == 5
    assert "re-run them with --limbo-resume" in notes[1]  # the advice the file used to leave out
    for note in notes:
        assert note.replace("'none'", "`none`") in paragraphs, note
    assert paragraphs[-1] == notes[-1] and notes[-1].startswith("Model usage:")


def test_a_clean_run_has_only_the_reading_note() -> None:
    text = [line for line in render_text(Summary(total=3)) if line]
    assert len(text) == 1 and text[0].startswith("Rates are over fired episodes")
    assert render_markdown(Summary(total=3)).endswith(text[0].replace("'none'", "`none`") + "\n")
