"""``limbo harness install|list``: pinned CLIs into a cache, a no-op when already there, an
interrupted install redone, failures as one line; ``limbo run`` with a harness agent."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from limbo_plugin.agents.harness_install import CACHE_ENV, MARKER
from limbo_plugin.cli import main

FAKE_NPM = """#!/bin/sh
# stands in for npm: `npm install … --prefix DIR PACKAGE@VERSION` makes DIR/node_modules/.bin/<cli>
echo "$@" >> "$NPM_LOG"
case "$*" in *broken*) NPM_FAIL=1 ;; esac
[ -n "$NPM_FAIL" ] && { echo "npm ERR! 404 Not Found" >&2; exit 1; }
while [ "$1" != "--prefix" ]; do shift; done
mkdir -p "$2/node_modules/.bin"
printf '#!/bin/sh\\necho "fake-cli 9.9.9"\\n' > "$2/node_modules/.bin/fake-cli"
chmod +x "$2/node_modules/.bin/fake-cli"
"""
ADAPTER = """\
name: fakecli
install: {npm: "@example/fake-cli", version: "9.9.9", executable: fake-cli}
version_command: ["{executable}", "--version"]
command: ["{executable}", "{prompt}"]
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM)
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NPM_LOG", str(tmp_path / "npm.log"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    harnesses = tmp_path / "project" / "specs" / "harnesses"
    harnesses.mkdir(parents=True)
    (harnesses / "fakecli.yaml").write_text(ADAPTER)
    (harnesses / "brokencli.yaml").write_text(
        ADAPTER.replace("fakecli", "brokencli").replace("fake-cli\"", "broken-cli\""))
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path


def test_install_once_then_a_no_op_and_list_shows_the_version(
        fake_npm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harness", "install", "fakecli"]) == 0
    root = fake_npm / "cache" / "fakecli" / "9.9.9"
    assert (root / MARKER).read_text().strip() == "@example/fake-cli@9.9.9"
    assert "--prefix" in (fake_npm / "npm.log").read_text()
    assert main(["harness", "install", "fakecli"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert len((fake_npm / "npm.log").read_text().splitlines()) == 1  # no second npm run
    assert main(["harness", "list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fakecli"))
    assert "@example/fake-cli@9.9.9" in line and "installed: fake-cli 9.9.9" in line


def test_an_interrupted_install_is_redone(fake_npm: Path) -> None:
    root = fake_npm / "cache" / "fakecli" / "9.9.9"
    (root / "node_modules" / ".bin").mkdir(parents=True)  # half there, no marker
    assert main(["harness", "install", "fakecli"]) == 0
    assert (root / MARKER).is_file() and (root / "node_modules/.bin/fake-cli").is_file()


def test_a_failed_install_is_one_line_and_leaves_nothing_marked(
        fake_npm: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("NPM_FAIL", "1")
    assert main(["harness", "install", "fakecli"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot install fakecli" in err and "404" in err
    assert not (fake_npm / "cache" / "fakecli" / "9.9.9" / MARKER).exists()
    assert main(["harness", "list"]) == 0
    assert "not installed" in capsys.readouterr().out


def test_one_failed_install_does_not_keep_the_others_out(
        fake_npm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harness", "install", "brokencli", "fakecli"]) == 2
    assert "cannot install brokencli" in capsys.readouterr().err
    assert (fake_npm / "cache" / "fakecli" / "9.9.9" / MARKER).is_file()


def test_unknown_harness_names_the_known_ones(fake_npm: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harness", "install", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown harness 'nope'" in err and "codex" in err and "fakecli" in err


def test_an_agent_whose_cli_is_missing_says_how_to_install_it(
        fake_npm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "incident_open", "0", "ticket", "timeout_post",
                 "--agent", "harness:fakecli:m"]) == 2
    err = capsys.readouterr().err
    assert "run `limbo harness install fakecli`" in err
