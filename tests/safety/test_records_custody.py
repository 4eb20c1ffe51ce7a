"""Nothing at a records path is lost: Limbo modifies or moves only a file it recognises as its
own records, one run at a time, and ``limbo merge`` never destroys a file.

Each case was a way to lose data: resume cutting the "torn" last line off a configuration file
given as ``--limbo-records`` (or, through a symlink, off the link's target), a fresh run moving
any file into ``history/``, ``limbo merge`` writing over its first shard when OUT was forgotten,
two runs appending to one file, a run selecting nothing rotating the records away.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.errors import LimboError, UsageError
from limbo_plugin.report.build import make_report
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.custody import RecordsLock, foreign_file_problem, lock_path
from limbo_plugin.store.merge import merge_records
from limbo_plugin.store.read import RecordFileError

ONE = ["--experiment", "small", "-k", "invoice_batch and timeout_post"]
"""One episode."""
CONFIG = b'{"name":"cfg","secret":"keep"}'


def usage_error(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-1500:]
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    return errors[0]


@pytest.fixture
def recorded(project: pytest.Pytester) -> Path:
    """A records file of one real episode."""
    project.runpytest(*ONE, "--limbo-records=out/run.jsonl")
    path = project.path / "out" / "run.jsonl"
    assert len(path.read_bytes().splitlines()) == 1
    return path


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_records_path_that_cannot_be_written_is_one_line_before_any_episode(
        project: pytest.Pytester) -> None:
    """In /proc no file can be made, whoever runs the test (root may write almost anywhere
    else): the lock beside the records cannot be made. It was the OSError's own text."""
    error = usage_error(project.runpytest(*ONE, "--limbo-records=/proc/limbo-run.jsonl"))
    assert error.startswith("ERROR: --limbo-records: cannot write beside "
                            "/proc/limbo-run.jsonl ("), error
    assert error.endswith("give a path in a folder this user can write"), error


@pytest.mark.parametrize("resume", [True, False])
def test_a_file_that_is_not_records_is_neither_cut_nor_moved(
        project: pytest.Pytester, resume: bool) -> None:
    config = project.path / "cfg.json"
    config.write_bytes(CONFIG)
    flags = ["--limbo-resume"] if resume else []
    error = usage_error(project.runpytest(*ONE, "--limbo-records=cfg.json", *flags))
    assert "cfg.json is not a Limbo records file" in error, error
    assert config.read_bytes() == CONFIG
    assert not (project.path / "history").exists()


def test_a_symlink_is_refused_and_its_target_untouched(project: pytest.Pytester,
                                                        recorded: Path) -> None:
    before = recorded.read_bytes()
    with recorded.open("ab") as handle:
        handle.write(b'{"ts": tr')  # a torn line resume would cut
    torn = recorded.read_bytes()
    link = project.path / "link.jsonl"
    link.symlink_to(recorded)
    for flags in (["--limbo-resume"], []):
        error = usage_error(project.runpytest(*ONE, "--limbo-records=link.jsonl", *flags))
        assert "link.jsonl is a symbolic link" in error
        assert recorded.read_bytes() == torn and link.is_symlink()
    assert torn.startswith(before)


def test_own_records_with_a_torn_tail_are_still_recognised(tmp_path: Path,
                                                           recorded: Path) -> None:
    assert foreign_file_problem(recorded) is None
    first = recorded.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(first[:200])  # killed while writing its first line
    assert foreign_file_problem(torn) is None
    for text in (CONFIG, b"hello\n", b"[1, 2]\n", b'{"a": 1}\n{"b": 2}\n', b"\x00" * 50):
        torn.write_bytes(text)
        assert foreign_file_problem(torn) is not None, text
    assert foreign_file_problem(tmp_path / "absent.jsonl") is None


def test_a_second_run_on_the_same_records_stops_with_one_line(project: pytest.Pytester) -> None:
    """A real second pytest process while the first holds the file: no append, no rotation."""
    records = project.path / "reports" / "episodes.jsonl"
    with RecordsLock(records):  # the first run, as far as the file is concerned
        second = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", *ONE],
            cwd=project.path, capture_output=True, text=True, timeout=300)
        assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout[-2000:]
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "is being written by another run" in lines[0], second.stderr
        assert f"pid {os.getpid()}" in lines[0]
        assert not records.exists() and not (records.parent / "history").exists()
    assert not lock_path(records).exists(), "released and removed"
    after = project.runpytest(*ONE)
    assert after.ret == pytest.ExitCode.OK and records.is_file()


@contextlib.contextmanager
def held_by_another_process(records: Path) -> Iterator[None]:
    """A separate process holding the lock on ``records`` until the block ends (killed)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from limbo_plugin.store.custody import RecordsLock\n"
         f"lock = RecordsLock({str(records)!r}); lock.acquire(); print('locked', flush=True)\n"
         "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait(timeout=60)


def test_the_lock_goes_with_a_killed_process(tmp_path: Path) -> None:
    records = tmp_path / "episodes.jsonl"
    with held_by_another_process(records), \
            pytest.raises(UsageError, match="being written by another run"):
        RecordsLock(records).acquire()
    with RecordsLock(records):
        pass


def test_a_run_that_selects_nothing_keeps_the_records_in_place(project: pytest.Pytester,
                                                              recorded: Path) -> None:
    before = recorded.read_bytes()
    result = project.runpytest("--experiment", "small", "-k", "late_comit",
                               "--limbo-records=out/run.jsonl")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert recorded.read_bytes() == before
    assert not list((recorded.parent / "history").glob("*")), "nothing left in history"
    assert main(["summary", str(recorded)]) == 0


def test_resume_refuses_another_configuration(project: pytest.Pytester) -> None:
    blind = ["--experiment", "small", "-k", "invoice_batch", "--agent", "scripted:blind_retry",
             "--limbo-records=out/run.jsonl"]
    project.runpytest(*blind, "--maxfail=1")
    path = project.path / "out" / "run.jsonl"
    before = path.read_bytes()
    assert before
    error = usage_error(project.runpytest("--experiment", "small", "-k", "invoice_batch",
                                          "--limbo-records=out/run.jsonl", "--limbo-resume"))
    assert "agent=scripted:blind_retry" in error and "--limbo-resume" in error, error
    assert path.read_bytes() == before
    again = project.runpytest(*blind, "--limbo-resume")
    assert again.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    agents = {json.loads(line)["agent"] for line in path.read_text().splitlines()}
    assert agents == {"scripted:blind_retry"}


# -- limbo merge ---------------------------------------------------------------------------------
def test_merge_with_a_forgotten_out_refuses_and_keeps_the_shard(tmp_path: Path,
                                                                recorded: Path) -> None:
    shard = tmp_path / "shard-0.jsonl"
    shard.write_bytes(recorded.read_bytes())
    other = tmp_path / "shard-1.jsonl"
    other.write_bytes(b"")
    with pytest.raises(RecordFileError, match="is also an input"):
        merge_records(shard, [other, shard])
    assert main(["merge", str(shard), str(shard)]) == 2
    assert shard.read_bytes() == recorded.read_bytes()


def test_merge_keeps_an_existing_out_in_history_and_writes_0644(tmp_path: Path,
                                                                recorded: Path) -> None:
    out = tmp_path / "episodes.jsonl"
    out.write_bytes(recorded.read_bytes().replace(b'"instance":0', b'"instance":0 '))
    earlier = out.read_bytes()
    old = os.umask(0o022)
    try:
        result = merge_records(out, [recorded])
    finally:
        os.umask(old)
    assert result.kept_previous is not None and result.kept_previous.read_bytes() == earlier
    assert result.kept_previous.parent.name == "history"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert "kept in" in " ".join(result.lines())


def test_merge_refuses_to_replace_a_file_that_is_not_records(tmp_path: Path,
                                                             recorded: Path) -> None:
    out = tmp_path / "notes.txt"
    out.write_bytes(b"my notes\n")
    with pytest.raises(UsageError, match="not a Limbo records file"):
        merge_records(out, [recorded])
    assert out.read_bytes() == b"my notes\n"


def test_merge_refuses_records_of_an_old_schema(tmp_path: Path, recorded: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({**json.loads(recorded.read_text()), "schema_version": 1}) + "\n")
    with pytest.raises(RecordFileError, match=r"old.jsonl:1: record schema version 1"):
        merge_records(tmp_path / "out.jsonl", [recorded, old])
    assert not (tmp_path / "out.jsonl").exists()


def test_a_merge_into_a_file_a_run_is_writing_is_refused(tmp_path: Path,
                                                        recorded: Path) -> None:
    out = tmp_path / "out.jsonl"
    with RecordsLock(out), pytest.raises(UsageError, match="being written by another run"):
        merge_records(out, [recorded])
    assert not out.exists()
    merge_records(out, [recorded])
    assert out.read_bytes() == recorded.read_bytes()


# -- limbo report --------------------------------------------------------------------------------
def test_a_second_report_keeps_the_first_in_history(tmp_path: Path, recorded: Path,
                                                   registry: SpecRegistry) -> None:
    out = tmp_path / "reports" / "report"
    make_report([recorded], registry, out)
    first = (out / "report.json").read_bytes()
    second = make_report([recorded], registry, out)
    assert second.kept_previous is not None and second.kept_previous.parent.name == "history"
    assert (second.kept_previous / "report.json").read_bytes() == first
    assert (out / "index.html").is_file()
    assert any("previous report is kept in" in line for line in second.lines())


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_report_folder_that_cannot_be_made_is_one_line_before_the_records_are_read(
        tmp_path: Path, registry: SpecRegistry) -> None:
    """It was the OSError's own text, after every record had been read; the records here
    are not even there, and the folder is what is named."""
    with pytest.raises(LimboError) as refused:
        make_report([tmp_path / "never-read.jsonl"], registry, "/proc/limbo-report")
    assert str(refused.value) == ("--out /proc/limbo-report: cannot make the report's folder "
                                  "(No such file or directory); give a folder this user can "
                                  "write")


def test_a_report_that_fails_leaves_no_empty_folder(tmp_path: Path,
                                                    registry: SpecRegistry) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(LimboError):
        make_report([empty], registry, tmp_path / "new" / "report")
    assert not (tmp_path / "new" / "report").exists()


def test_a_folder_that_is_not_a_report_is_refused(tmp_path: Path, recorded: Path,
                                                  registry: SpecRegistry) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("keep\n")
    with pytest.raises(LimboError, match="not a Limbo report"):
        make_report([recorded], registry, out)
    assert [p.name for p in out.iterdir()] == ["chapter1.tex"]


# -- a full disk ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_full_disk_is_one_line_exit_3_and_resume_finishes(project: pytest.Pytester,
                                                            workers: list[str]) -> None:
    """The file-size limit (``RLIMIT_FSIZE``) makes the records file refuse a write as a full
    disk does; the run stops with one line naming the file, the file holds whole lines only,
    and a resume with room to write finishes the run."""
    import resource
    import signal

    records = project.path / "out" / "run.jsonl"
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "--experiment", "small",
            "--limbo-records=out/run.jsonl", *workers]

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    full = subprocess.run(argv, cwd=project.path, preexec_fn=small_disk, capture_output=True,
                          text=True, timeout=300)
    output = full.stdout + full.stderr
    assert full.returncode == 3, output[-3000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    said = [line for line in output.splitlines() if "cannot write out/run.jsonl" in line]
    assert len(said) == 1 and "--limbo-resume" in said[0], output[-3000:]
    data = records.read_bytes()
    assert data.endswith(b"\n") and 0 < len(data.splitlines()) < 8
    # what the file holds, not what this process wrote (under -n 2: the controller's count)
    assert f"the {len(data.splitlines())} record(s) in it are kept" in said[0], said[0]
    for line in data.splitlines():
        json.loads(line)
    resumed = subprocess.run([*argv, "--limbo-resume"], cwd=project.path, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode in (0, 1), resumed.stdout[-3000:]
    ids = [json.loads(line)["test_id"] for line in records.read_bytes().splitlines()]
    assert len(ids) == len(set(ids)) == 8


def test_a_hard_link_to_a_records_file_shares_its_lock(tmp_path: Path) -> None:
    """Two names for one file (a hard link) have two lock files beside them, but one inode:
    a run resuming it under the second name stops, instead of appending beside the first."""
    records = tmp_path / "episodes.jsonl"
    records.write_text('{"schema_version": 1}\n')
    alias = tmp_path / "alias.jsonl"
    os.link(records, alias)
    with held_by_another_process(records):
        with pytest.raises(UsageError, match="under another name"):
            RecordsLock(alias).acquire()
        assert not lock_path(alias).exists(), "a refused lock leaves nothing behind"
    with RecordsLock(alias):
        pass
