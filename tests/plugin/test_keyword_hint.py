"""``pytest -k late_comit`` (a typo) deselects every episode: besides pytest's exit 5, one line
names the family, mode or template names closest to the words of ``-k``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from limbo_plugin.plugin.terminal import keyword_hint

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"family": ["lost_ack", "late_commit", "redelivery"],
         "mode": ["timeout_late", "timeout_late_tail", "redelivery"],
         "template": ["invoice_batch", "hotfix_long"]}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider\n")
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_misspelt_keyword_suggests_the_closest_names(project: pytest.Pytester,
                                                       workers: list[str]) -> None:
    result = project.runpytest_subprocess("-k", "late_comit", "-q", *workers)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    hints = [line for line in result.outlines if line.startswith("limbo: -k")]
    assert hints == ["limbo: -k 'late_comit' selects no episode of experiment 'default'; "
                     "did you mean late_commit (family) for 'late_comit'?"], result.outlines
    assert "no Limbo episode was collected" not in result.stdout.str()


def test_with_a_limbo_option_the_suggestion_joins_the_nothing_collected_line(
        project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--agent", "scripted:blind_retry", "-k", "lost_ak",
                                          "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    (hint,) = [line for line in result.outlines if line.startswith("limbo: ")]
    assert hint.startswith("limbo: --agent given but no Limbo episode was collected: -k/-m "
                           "selected none of experiment 'default'")
    assert hint.endswith("; did you mean lost_ack (family) for 'lost_ak'?"), hint


def test_a_keyword_that_selects_episodes_gives_no_hint(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-k", "late_commit and invoice_batch", "-q",
                                          "--tb=no")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "limbo: -k" not in result.stdout.str()


def test_another_projects_keyword_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-k", "late_comit", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "limbo:" not in result.stdout.str()


def test_the_hint_names_each_unknown_word_and_falls_back_to_the_families() -> None:
    assert keyword_hint("redelivry and not hotfix_lng", NAMES, "e1") == (
        "limbo: -k 'redelivry and not hotfix_lng' selects no episode of experiment 'e1'; "
        "did you mean redelivery (family) for 'redelivry', hotfix_long (template) for "
        "'hotfix_lng'?")
    assert keyword_hint("zzz", NAMES, "e1").endswith(
        "; families: lost_ack, late_commit, redelivery (limbo list modes, limbo list templates)")
    assert keyword_hint("late_commit and hotfix_long", NAMES, "e1").endswith(
        "; each of its names exists, but no episode matches them together")
