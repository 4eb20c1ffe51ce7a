"""Every subcommand of the real ``limbo`` program, given bad input as a clumsy user types it:
exit status 2, exactly one line on stderr that names the bad value (and, where there is a
choice, the valid ones), and never a Python traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = str(ROOT / "specs")
RELEASE_GATE = str(ROOT / "specs" / "gates" / "release.yaml")

BAD_INVOCATIONS: list[tuple[str, list[str], str]] = [
    ("unknown subcommand", ["tables"], "invalid choice: 'tables'"),
    ("specs not a specs dir", ["--specs", "{tmp}", "list", "templates"],
     "not a Limbo specs directory"),
    ("list unknown kind", ["list", "template"], "invalid choice: 'template'"),
    ("run unknown template", ["run", "cross_pots", "0", "post_x", "timeout_late"],
     "unknown task template 'cross_pots'; valid: cross_post"),
    ("run unknown focal write", ["run", "cross_post", "0", "post_y", "timeout_late"],
     "unknown focal write 'post_y' of cross_post instance 0; valid: post_x, post_mastodon"),
    ("run unknown mode", ["run", "cross_post", "0", "post_x", "timeout_lat"],
     "unknown fault mode 'timeout_lat'; valid: "),
    ("run negative instance", ["run", "cross_post", "-3", "post_x", "timeout_late"],
     "instances are numbered from 0"),
    ("run unknown agent", ["run", "cross_post", "0", "post_x", "timeout_late", "--agent", "gpt"],
     "unknown agent 'gpt'; valid forms:"),
    ("run unknown condition", ["run", "cross_post", "0", "post_x", "timeout_late",
                               "--condition", "awre"], "unknown condition 'awre'; valid: vanilla"),
    ("run refused model option", ["run", "cross_post", "0", "post_x", "timeout_late",
                                  "--model-option", "num_retries=3"], "num_retries"),
    ("run model option without =", ["run", "cross_post", "0", "post_x", "timeout_late",
                                    "--model-option", "temperature"], "expects KEY=VALUE"),
    ("run NaN timeout", ["run", "cross_post", "0", "post_x", "timeout_late",
                         "--episode-timeout", "nan"], "a positive number of seconds"),
    ("run negative timeout", ["run", "cross_post", "0", "post_x", "timeout_late",
                              "--episode-timeout", "-5"], "a positive number of seconds"),
    ("show missing records", ["show", "x", "--records", "{tmp}/none.jsonl"],
     "none.jsonl does not exist"),
    ("show garbage records", ["show", "x", "--records", "{garbage}"],
     "garbage.jsonl:1: not an episode record"),
    ("runs missing", ["runs", "{tmp}/none.jsonl"], "has no history/ beside it"),
    ("summary directory", ["summary", "{tmp}"], "is a directory; give a records file"),
    ("summary garbage", ["summary", "{garbage}"], "garbage.jsonl:1: not an episode record"),
    ("gate missing gate", ["gate", "{tmp}/nope.yaml"], "nope.yaml: cannot read file"),
    ("gate not YAML", ["gate", "{broken_yaml}"], "broken.yaml:2: YAML syntax error"),
    ("gate missing records", ["gate", RELEASE_GATE, "--records", "{tmp}/none.jsonl"],
     "none.jsonl does not exist"),
    ("report missing records", ["report", "{tmp}/none.jsonl"], "no such record file"),
    ("report garbage", ["report", "{garbage}"], "garbage.jsonl:1: not an episode record"),
    ("merge garbage", ["merge", "{tmp}/out.jsonl", "{garbage}"],
     "garbage.jsonl:1: not an episode record"),
    ("allure no results", ["allure", "{tmp}/none"], "no Allure results"),
    ("mcp without url", ["mcp"], "--url (or $LIMBO_SANDBOX_URL) is required"),
    ("harness unknown subcommand", ["harness", "instal"], "invalid choice: 'instal'"),
    ("harness install unknown", ["harness", "install", "codx"],
     "unknown harness 'codx'; known: codex, copilot, hermes"),
]


@pytest.mark.parametrize(("argv", "message"), [(a, m) for _, a, m in BAD_INVOCATIONS],
                         ids=[name for name, _, _ in BAD_INVOCATIONS])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"episode": \n')
    broken = tmp_path / "broken.yaml"
    broken.write_text("checks: [\n")
    values = {"{tmp}": str(tmp_path), "{garbage}": str(garbage), "{broken_yaml}": str(broken)}
    argv = [next((arg.replace(k, v) for k, v in values.items() if k in arg), arg)
            for arg in argv]
    if argv[0] != "--specs":
        argv = ["--specs", SPECS, *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LIMBO_SANDBOX_URL", None)
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *argv], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=120, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr
