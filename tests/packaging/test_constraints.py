"""constraints.txt: the tested versions a fresh machine installs, written by `.ci/lock`, used by
`.ci/run` and the README's test command, within the ranges pyproject.toml keeps for users."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;]+)\s*(?:;\s*(?P<marker>.+))?$")


def _pins() -> dict[str, list[tuple[str, str | None]]]:
    """Package → [(version, marker)] from constraints.txt; every non-comment line is a pin."""
    pins: dict[str, list[tuple[str, str | None]]] = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = PIN.match(line)
        assert found, f"constraints.txt:{number}: not an exact pin: {line!r}"
        pins.setdefault(canonicalize_name(found["name"]), []).append(
            (found["version"], found["marker"]))
    return pins


def _declared() -> list[Requirement]:
    """Every requirement pyproject.toml declares: the core and each extra (self-references
    such as ``limbo-bench[all]`` are left out: they add no package)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != "limbo-bench"]


def test_every_declared_requirement_is_pinned_within_its_range() -> None:
    pins = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not pinned in constraints.txt: run bash .ci/lock"
        for version, _marker in pins[name]:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"constraints.txt pins {name}=={version} outside pyproject's {requirement}")


def test_the_file_says_which_command_writes_it() -> None:
    head = (ROOT / "constraints.txt").read_text().splitlines()[:3]
    assert "#    bash .ci/lock" in head
    lock = (ROOT / ".ci" / "lock").read_text()
    assert "uv pip compile pyproject.toml --extra dev" in lock
    assert "bash .ci/lock --upgrade" in (ROOT / ".ci" / "upgrade").read_text()


def test_ci_and_the_readme_install_the_pinned_versions() -> None:
    installs = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if re.match(r"\s*python -m pip install -e ", line)]
    assert installs and all("-c constraints.txt" in line for line in installs), installs
    readme = (ROOT / "README.md").read_text()
    command = 'python -m pip install -e ".[dev]" -c constraints.txt && python -m pytest tests'
    assert command in readme
