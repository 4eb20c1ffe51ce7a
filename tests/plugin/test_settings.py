"""The session's settings are read from the options once, by a function that changes nothing,
into a frozen value: what the hooks and items read cannot drift during the run."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from limbo_plugin.plugin.settings import STATE, settings_from

ROOT = Path(__file__).resolve().parents[2]


def test_settings_are_read_once_into_a_frozen_value(pytester: pytest.Pytester) -> None:
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nlimbo_repeat = 2\n")
    config = pytester.parseconfigure(f"--limbo-specs={pytester.path / 'specs'}",
                                     "--limbo-records=out/run.jsonl",
                                     "--agent", "scripted:blind_retry",
                                     "--limbo-provider-retries", "3")
    limbo = config.stash[STATE]
    args = list(config.args)
    again = settings_from(config)
    assert again == limbo.settings  # the same options give the same settings
    assert config.args == args  # reading them moved nothing
    settings = limbo.settings
    assert settings.redirected and args == [str(pytester.path / "specs")]
    assert settings.collects_specs and settings.only_specs and settings.active
    assert settings.repeat == 2  # from the ini file
    assert settings.records_path == pytester.path / "out" / "run.jsonl"
    assert settings.overrides["agent"] == "scripted:blind_retry"
    assert settings.agent_options.provider_retries == 3
    assert settings.agent_options.reports_dir == str(pytester.path / "out")
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.repeat = 1  # type: ignore[misc]
    assert limbo.run.outcomes == {} and limbo.run.run_id


def test_a_bad_value_is_one_line_before_anything_moves(pytester: pytest.Pytester) -> None:
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest_subprocess("--limbo-repeat=0", "--limbo-records=out/run.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--limbo-repeat must be between 1 and 1000, got '0'" in result.stderr.str()
    assert not (pytester.path / "out").exists()
