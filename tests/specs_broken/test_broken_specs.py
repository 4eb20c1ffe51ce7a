"""The broken-spec corpus: every file in this folder breaks one spec of the real tree.

Besides the first 35 cases (syntax, types, bombs, unknown names), the corpus holds what used to
pass load and fail every episode at run time, or hang: seed records a world cannot load,
``required.where`` keys no effect has, reserved parameters, self-doubling parameters,
documentation placeholders with format specs, experiments that select nothing or expand
without bound, gates that judge nothing, tool patterns with nested quantifiers, plan steps
that refer to no earlier step or send what their tool refuses (an amount above its maximum),
a harness adapter whose name is not its file's.

Each file's first line names the spec it replaces (``# target: tasks/cross_post.yaml``). The test
copies ``specs/`` to a temporary directory, drops the broken file in the target's place and
loads it the way a run does (the registry; an experiment, gate or harness adapter by its own
loader). Every case must give exactly one clear error — one line naming the file and the line,
no traceback — within a time limit, run no code (a ``!!python`` payload would create a sentinel
file), and a broken template must cost only its own episodes.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from limbo_plugin.agents.harness_spec import load_harness
from limbo_plugin.errors import SpecError
from limbo_plugin.experiments import load_experiment
from limbo_plugin.report.gate import load_gate
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

HERE = Path(__file__).resolve().parent
SPECS = HERE.parents[1] / "specs"
CASES = sorted(HERE.glob("*.yaml"))
TARGET = re.compile(rb"^# target: (\S+)\n")
LIMIT_S = 20


def target_of(case: Path) -> str:
    match = TARGET.match(case.read_bytes())
    assert match, f"{case.name}: the first line must be '# target: <path under specs/>'"
    return match.group(1).decode()


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def hang(signum: int, frame: object) -> None:
        raise TimeoutError(f"loading took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def tree_with(tmp_path: Path, target: str, content: bytes) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(SPECS, root)
    (root / target).write_bytes(content)
    return root


def load_as_a_run_does(root: Path, target: str) -> SpecRegistry:
    """Load the tree and then the target the way a run that uses it does; raises its error."""
    registry = SpecRegistry.load(root)
    kind = target.split("/")[0]
    if kind == "tasks":
        error = registry.template_errors.get(Path(target).stem)
        if error is not None:
            raise error
    elif kind == "experiments":
        experiment = load_experiment(root / target, registry)
        broken = experiment.broken_templates(registry)
        if not experiment.episodes(registry, {}, RunConfig()) and not broken:
            raise experiment.selects_nothing(registry)
    elif kind == "gates":
        load_gate(root / target, families=registry.family_order)
    elif kind == "harnesses":
        load_harness(root / target)
    return registry


def test_the_corpus_covers_every_spec_kind() -> None:
    kinds = {target_of(case).split("/")[0].removesuffix(".yaml") for case in CASES}
    targets = {target_of(case) for case in CASES}
    assert kinds >= {"services", "contracts", "faults", "pools", "tasks", "experiments",
                     "gates", "harnesses"}
    assert "contracts/documentation.yaml" in targets
    assert len(CASES) >= 150


def test_the_unbroken_copy_loads(tmp_path: Path) -> None:
    """The control: every loader accepts the real tree, so each failure is its case's."""
    root = tree_with(tmp_path, "pools.yaml", (SPECS / "pools.yaml").read_bytes())
    for target in ("tasks/cross_post.yaml", "experiments/smoke.yaml", "gates/release.yaml",
                   "harnesses/codex.yaml"):
        load_as_a_run_does(root, target)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.stem)
def test_a_broken_spec_is_one_clear_error(case: Path, tmp_path: Path) -> None:
    target = target_of(case)
    sentinel = tmp_path / "payload-ran"
    content = case.read_bytes().replace(b"{sentinel}", str(sentinel).encode())
    root = tree_with(tmp_path, target, content)
    one_clear_error(root, target)
    assert not sentinel.exists(), "a YAML tag ran code"


def one_clear_error(root: Path, target: str) -> str:
    """Load ``target`` in ``root`` as a run does; its error must be one line naming the file
    and a line in it, within the time limit. Returns the message."""
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        load_as_a_run_does(root, target)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message, message
    assert Path(info.value.file).resolve() == (root / target).resolve(), message
    assert re.match(rf".*{re.escape(Path(target).name)}:\d+:", message), message
    return message


def test_a_fifty_megabyte_spec_is_refused_unread(tmp_path: Path) -> None:
    target = "tasks/cross_post.yaml"
    root = tree_with(tmp_path, target, b"")
    with (root / target).open("wb") as file:
        file.write(b"name: cross_post\ndescription: >-\n")
        line = b"  " + b"x" * 1022 + b"\n"
        for _ in range(50 * 1024):
            file.write(line)
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        load_as_a_run_does(root, target)
    assert "cross_post.yaml" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("case", [c for c in CASES if target_of(c).startswith("tasks/")],
                         ids=lambda case: case.stem)
def test_a_broken_template_costs_only_its_own_episodes(case: Path, tmp_path: Path) -> None:
    root = tree_with(tmp_path, target_of(case), case.read_bytes())
    registry = SpecRegistry.load(root)
    assert set(registry.template_errors) == {"cross_post"}
    assert set(registry.templates) == {p.stem for p in (SPECS / "tasks").glob("*.yaml")} - {
        "cross_post"}


@pytest.mark.parametrize("case", ["task_yaml_syntax", "task_python_object"])
def test_a_pytest_run_reports_a_broken_template_once_and_runs_the_rest(
        case: str, tmp_path: Path) -> None:
    """The collection path: a real pytest run over the broken tree (one template, -k keeps it
    small) runs the other template's episodes and names the broken file in one line."""
    source = HERE / f"{case}.yaml"
    sentinel = tmp_path / "payload-ran"
    root = tree_with(tmp_path, target_of(source),
                     source.read_bytes().replace(b"{sentinel}", str(sentinel).encode()))
    (root / "experiments" / "pair.yaml").write_text(
        "name: pair\ndescription: Two templates, one broken.\n"
        "templates: [cross_post, incident_open]\ninstances: [0]\n"
        "focal_writes: [post_x, ticket]\nmodes: [none]\n", encoding="utf-8")
    shutil.copy(SPECS.parent / "pytest.ini", tmp_path / "pytest.ini")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "specs", "--experiment", "pair", "-q", "-p",
         "no:randomly", "--limbo-records", str(tmp_path / "out" / "episodes.jsonl")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-3000:]
    assert output.count("cross_post.yaml:") >= 1, output[-3000:]
    assert re.search(r"\b[1-9]\d* passed|\b[1-9]\d* failed|\b[1-9]\d* xfailed", output), \
        output[-3000:]
    assert not sentinel.exists()


# -- what is no spec file at all, and the options beside the specs ------------------------------
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    root = tree_with(tmp_path, "pools.yaml", (SPECS / "pools.yaml").read_bytes())
    target = root / "tasks" / "cross_post.yaml"
    target.unlink()
    os.mkfifo(target)
    with time_limit(LIMIT_S):
        registry = SpecRegistry.load(root)
        error = registry.template_errors["cross_post"]
    assert "is not a regular file" in str(error) and "\n" not in str(error)
    assert set(registry.templates) == {p.stem for p in (SPECS / "tasks").glob("*.yaml")} - {
        "cross_post"}


def test_a_symlink_to_an_endless_device_is_refused_unread(tmp_path: Path) -> None:
    root = tree_with(tmp_path, "pools.yaml", (SPECS / "pools.yaml").read_bytes())
    target = root / "services" / "email.yaml"
    target.unlink()
    target.symlink_to("/dev/zero")
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        SpecRegistry.load(root)
    assert "email.yaml" in str(info.value) and "not a regular file" in str(info.value)


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--limbo-shard", "0/100000000", "at most 10,000 shards"),
    ("--limbo-shard", "0/1e20", "expects K/N"),
    ("--limbo-shard", "4/4", "expected K/N"),
    ("--limbo-episode-timeout", "1e300", "at most 604800 s"),
    ("--limbo-episode-timeout", "nan", "positive number"),
    ("--limbo-episode-timeout", "abc", "expects a number"),
    ("--model-option", "timeout=NaN", "not a finite number"),
    ("--model-option", "timeout=abc", "expects a number"),
    ("--model-option", "temperature=NaN", "not a finite number"),
    ("--model-option", "temperature=7", "expects a number from 0 to 2"),
    ("--model-option", "top_p=-1", "expects a number from 0 to 1"),
    ("--model-option", "timeout=0", "more than 0"),
])
def test_an_option_out_of_range_is_one_line(flag: str, value: str, says: str) -> None:
    from limbo_plugin.agents.options import parse_model_options
    from limbo_plugin.errors import UsageError
    from limbo_plugin.plugin.settings import _shard, _time_limit

    parse = {"--limbo-shard": _shard, "--limbo-episode-timeout": _time_limit,
             "--model-option": lambda raw: parse_model_options([raw])}[flag]
    with time_limit(LIMIT_S), pytest.raises(UsageError) as info:
        parse(value)
    assert says in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_records_file_without_newlines_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    """Sixty-five MiB without a newline (sparse: no disk used) is not read whole."""
    import resource

    from limbo_plugin.store.read import MAX_LINE_BYTES, RecordFileError, scan_views

    path = tmp_path / "episodes.jsonl"
    with path.open("wb") as handle:
        handle.truncate(MAX_LINE_BYTES + 2**20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with time_limit(LIMIT_S), pytest.raises(RecordFileError) as info:
        scan_views(path)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert "episodes.jsonl:1: a line longer than 64 MiB" in str(info.value)
    assert grown_kib < 200 * 1024, "read with a bound"
