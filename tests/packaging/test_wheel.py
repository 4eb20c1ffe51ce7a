"""The built wheel, installed in a new virtual environment, runs the main job anywhere: the
specs come inside it (copied from the one specs/ tree at build time), `limbo` lists them and
copies them into a project, and another project's tests are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILES = sorted(p.relative_to(ROOT / "specs").as_posix()
                    for p in (ROOT / "specs").rglob("*.yaml"))


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTHONPATH", "VIRTUAL_ENV", "LIMBO_SPECS")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, as `pip wheel . --no-deps` builds it."""
    dist = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                  "-w", str(dist)], cwd=dist)
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = dist.glob("limbo_bench-*.whl")
    return found


def outer_site_packages() -> list[str]:
    """Where the running interpreter's packages are: its venv's when it runs in one."""
    import sysconfig

    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def test_the_dependencies_come_from_the_running_interpreter() -> None:
    """Inside a virtualenv, the packages the suite was installed into are the venv's."""
    import fastjsonschema

    assert any(Path(fastjsonschema.__file__).is_relative_to(path)
               for path in outer_site_packages())
    if sys.prefix != sys.base_prefix:
        assert all(Path(path).is_relative_to(sys.prefix) for path in outer_site_packages())


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a new venv holding that wheel.

    The venv sees this interpreter's packages for the dependencies (downloading them again
    would cost minutes and test PyPI, not the wheel); Limbo itself must come from the wheel,
    which is checked. "This interpreter's packages" are its own site-packages, listed in a
    ``.pth`` file of the new venv: ``--system-site-packages`` would give the *base*
    interpreter's, which from inside a virtualenv are not the ones the suite was installed
    into (``No module named 'fastjsonschema'``)."""
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    assert made.returncode == 0, made.stderr[-3000:]
    python = str(venv / "bin" / "python")
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                cwd=venv.parent)
    assert site.returncode == 0, site.stderr[-3000:]
    (Path(site.stdout.strip()) / "_limbo_test_dependencies.pth").write_text(
        "".join(f"{path}\n" for path in outer_site_packages()))
    pip = _run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], cwd=venv.parent)
    assert pip.returncode == 0, pip.stderr[-3000:]
    where = _run([python, "-c", "import limbo_plugin; print(limbo_plugin.__file__)"],
                 cwd=venv.parent)
    assert where.stdout.startswith(str(venv)), f"limbo_plugin not from the wheel: {where}"
    return venv / "bin"


@pytest.mark.slow
def test_the_wheel_carries_every_spec_file_as_it_is_in_specs(wheel: Path) -> None:
    prefix = "limbo_plugin/_specs/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name[len(prefix):]: archive.read(name) for name in archive.namelist()
                   if name.startswith(prefix)}
    assert sorted(shipped) == SPEC_FILES and len(SPEC_FILES) > 30
    assert all(shipped[name] == (ROOT / "specs" / name).read_bytes() for name in SPEC_FILES)


def test_the_wheel_is_typed_for_extensions(wheel: Path) -> None:
    """``py.typed`` beside the public extension module: mypy checks an extension package
    against the installed Limbo's annotations instead of treating it as untyped."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"limbo_plugin/py.typed", "limbo_plugin/extend.py"} <= names


@pytest.mark.slow
def test_the_main_job_runs_in_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    result = _run([str(installed / "python"), "-m", "pytest", "--experiment", "default",
                   "-k", "late_commit", "--tb=no", "-rN"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Limbo summary" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("late_commit "))
    assert row.split()[1:3] == ["138", "138"], row
    records = (tmp_path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert len(records) == 138


@pytest.mark.slow
def test_limbo_lists_and_copies_the_packaged_specs(installed: Path, tmp_path: Path) -> None:
    listed = _run([str(installed / "limbo"), "list", "templates"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line[:1].strip()]
    assert len(names) == 12 and "incident_open" in names, listed.stdout
    project = tmp_path / "project"
    copied = _run([str(installed / "limbo"), "init", str(project)], cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    assert sorted(p.relative_to(project / "specs").as_posix()
                  for p in (project / "specs").rglob("*.yaml")) == SPEC_FILES
    # The project's copy now takes precedence: an experiment added there is found.
    (project / "specs" / "experiments" / "mine.yaml").write_text(
        "name: mine\ntemplates: [incident_open]\ninstances: [0]\nfocal_writes: [ticket]\n"
        "modes: [none]\n")
    mine = _run([str(installed / "python"), "-m", "pytest", "--experiment", "mine", "-q"],
                cwd=project)
    assert mine.returncode == 0 and "1 passed" in mine.stdout, mine.stdout[-3000:]


@pytest.mark.slow
def test_another_project_in_the_same_venv_is_left_as_it_was(installed: Path,
                                                            tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text("def test_mine():\n    assert True\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    # Only pytest's own cache is switched off, and pytest-benchmark, a tool of this test
    # environment (not a dependency of Limbo) that creates .benchmarks/ in every project.
    result = _run([str(installed / "python"), "-m", "pytest", "-p", "no:cacheprovider",
                   "-p", "no:benchmark", "-q"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert "limbo" not in result.stdout.lower()
