"""The report's figures drawn in a second process: the same files as in one process, the same
errors, a fallback when the worker gives no answer, and no process left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.report import figure_worker
from limbo_plugin.report.build import make_report
from limbo_plugin.report.figures import Figure
from limbo_plugin.report.tables import build_tables
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

MODES = ["none", "timeout_post", "timeout_late", "redelivery"]


@pytest.fixture(scope="module")
def records(registry: SpecRegistry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real episodes of two scripted agents: every figure but the waiting one is drawn."""
    keys = list(iter_worlds(registry, ["incident_open", "cross_post"], [0], "all", MODES))
    path = tmp_path_factory.mktemp("worker") / "episodes.jsonl"
    path.write_text("".join(run_episode(key, RunConfig(agent=agent), registry=registry)
                            .model_dump_json() + "\n"
                            for agent in ("scripted:blind_retry", "scripted:verify_first")
                            for key in keys), encoding="utf-8")
    return path


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def in_this_process_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing in the report's process raises: what is drawn was drawn by the worker."""
    def refuse(self: figure_worker.InProcess) -> list[object]:
        raise AssertionError("the figures were drawn in the report's process")
    monkeypatch.setattr(figure_worker.InProcess, "result", refuse)


def test_a_worker_draws_the_same_files_as_one_process(
        records: Path, registry: SpecRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(figure_worker.PROCESSES_ENV, "1")
    one = make_report([records], registry, tmp_path / "one")
    monkeypatch.setenv(figure_worker.PROCESSES_ENV, "2")
    in_this_process_fails(monkeypatch)
    two = make_report([records], registry, tmp_path / "two")
    drawn = [f for f in two.figures if isinstance(f, Figure)]
    assert len(drawn) == 3 and all(p.is_file() for f in drawn for p in f.files)
    assert [f.files[0].relative_to(tmp_path / "two") for f in drawn] == \
        [f.files[0].relative_to(tmp_path / "one") for f in one.figures if isinstance(f, Figure)]
    assert tree(tmp_path / "one") == tree(tmp_path / "two")


def test_an_error_in_the_worker_is_the_error_of_one_process(
        records: Path, registry: SpecRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures' folder is a file: the worker's OSError is raised here as it would be in
    one process (same type, errno and file), so the command says it in the same one line."""
    from limbo_plugin.report.load import SpecFacts, load_records

    loaded = load_records([records], SpecFacts.of(registry))
    tables = build_tables(loaded.rows, loaded.repeats)
    (tmp_path / "figures").write_text("not a folder")
    raised = []
    for job in (figure_worker.InProcess(), figure_worker.Worker()):
        job.draw(tables, tmp_path / "figures")
        with pytest.raises(OSError) as info:
            job.result()
        job.close()
        raised.append((type(info.value), info.value.errno, info.value.filename))
    assert raised[0] == raised[1]
    assert raised[0][2] == str(tmp_path / "figures")


def test_a_worker_that_gives_no_answer_leaves_the_figures_to_this_process(
        records: Path, registry: SpecRegistry, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(figure_worker.PROCESSES_ENV, "2")
    monkeypatch.setattr(figure_worker, "_BOOT", "import sys; sys.exit(3)")
    report = make_report([records], registry, tmp_path / "report")
    drawn = [f for f in report.figures if isinstance(f, Figure)]
    assert len(drawn) == 3 and all(p.stat().st_size > 0 for f in drawn for p in f.files)


def test_one_process_when_asked_or_when_matplotlib_is_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(figure_worker.PROCESSES_ENV, "1")
    assert figure_worker.processes_wanted() == 1
    monkeypatch.delenv(figure_worker.PROCESSES_ENV)
    import matplotlib.pyplot  # noqa: F401  (a report already drew in this process)

    assert figure_worker.processes_wanted() == 1


def test_a_wrong_process_count_is_one_line(records: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(figure_worker.PROCESSES_ENV, "4")
    assert main(["report", str(records), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert err == ("limbo: LIMBO_REPORT_PROCESSES='4': give 1 (figures drawn in the report's "
                   "process) or 2 (in a second process)\n")
    assert not (tmp_path / "report").exists()


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("to_group", [True, False], ids=["ctrl-c", "sigint-to-the-report"])
def test_an_interrupted_report_leaves_no_worker(records: Path, tmp_path: Path,
                                                to_group: bool) -> None:
    """Ctrl-C (a SIGINT to the terminal's process group) or a SIGINT to the report alone: the
    report says it was interrupted in one line, however far the worker had got, and the
    worker ends with it."""
    env = {**os.environ, figure_worker.PROCESSES_ENV: "2"}
    report = subprocess.Popen([sys.executable, "-m", "limbo_plugin.cli", "report",
                               str(records), "--out", str(tmp_path / "report")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    workers: list[int] = []
    out = tmp_path / "report"
    # probe: the worker has started, and the report has made its folder (its imports are
    # done: an interrupt inside pydantic's building of a model class, as a lazy import does,
    # reaches Python as that library's SchemaError, not as an interrupt)
    while not (workers and out.exists()) and report.poll() is None:
        workers = workers or children(report.pid)
        time.sleep(0.01)
    assert workers and out.exists(), "the report ended before its worker started"
    if to_group:
        os.killpg(report.pid, signal.SIGINT)
    else:
        os.kill(report.pid, signal.SIGINT)
    _, err = report.communicate()
    # Ended by the interrupt: 130, or killed by SIGINT (which a shell also reads as 130)
    # when the interrupt passed through code Python ran with exec(), as imports do.
    assert report.returncode in (130, -signal.SIGINT), err.decode()
    assert err.decode() == "limbo: interrupted\n"  # one line, no traceback
    for _ in range(500):  # probe: the worker is gone (reaped by its parent, or by init)
        if not alive(workers[0]):
            break
        time.sleep(0.01)
    assert not alive(workers[0])


def test_tables_cross_to_the_worker_whole(records: Path, registry: SpecRegistry) -> None:
    """The tables the figures are drawn from reach the worker equal, every float to its last
    digit (JSON, never pickle)."""
    import json

    from limbo_plugin.report.load import SpecFacts, load_records

    loaded = load_records([records], SpecFacts.of(registry))
    tables = build_tables(loaded.rows, loaded.repeats)
    sent = json.loads(json.dumps(figure_worker._encode((tables, Path("x")))),
                      object_hook=figure_worker._decode)
    assert sent == (tables, Path("x"))


def test_a_limbo_error_in_the_worker_is_one_line_here() -> None:
    from limbo_plugin.errors import LimboError

    error = figure_worker._error(figure_worker._described(LimboError("--out x: no room")))
    assert isinstance(error, LimboError) and str(error) == "--out x: no room"
    other = figure_worker._error(figure_worker._described(KeyError("k")))
    assert isinstance(other, RuntimeError) and "KeyError" in str(other)
