"""``limbo reproduce``: the paper's study end to end — budget, runs, reports — in one command.

The steps, in order (``--print`` shows them as a shell script without running anything):

1. **Budget.** ``limbo plan`` for every run: episodes, model calls, tokens and cost at the
   model's price (from the paper's per-episode figures, or from your own pilot run with
   ``--cassette``). With model-backed agents nothing runs until ``--yes`` says the budget is
   accepted.
2. **Runs.** One ``pytest --experiment eX`` per experiment and agent, each into its own record
   file under ``OUT/records/<experiment>/`` (``--shards N`` splits each into N shard commands,
   for N machines, and merges them with ``limbo merge``); plus a declared repeat of E1
   (``--limbo-repeat 2``, the second run only) for the stability analysis.
3. **Reports.** ``limbo report`` once per grouping of record files that the paper's tables
   read together (E1; E2 + E2k; E3 + E3k; E2 + E4; E2 + E2k + E5; E1 + E6), each printed with
   what combining those files means, into ``OUT/report/<group>/``.
4. **Index.** ``OUT/paper.md``: each table and figure of the paper, the file that holds it, or
   why it is missing.

``--agents`` replaces the paper's models by yours (or by scripted policies) in every experiment;
``--harnesses`` names the production harnesses of E3/E3k, each run with those models. A scripted
policy behind a harness is served as a model by a local scripted model server the command
starts itself, so the whole chain runs without a key. ``--small`` runs a fixed handful of focal
writes of each experiment (every mode and configuration of the design on them) — the chain in
about a minute with scripted agents, or a cheap pilot whose records ``--cassette`` turns into a
measured budget for the full design.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from limbo_plugin.errors import UsageError

T = TypeVar("T")
STUDY = ("e1", "e2", "e2k", "e3", "e3k", "e4", "e5", "e6")
HARNESS_EXPERIMENTS = ("e3", "e3k")
SEPARATE_LANE = {"litellm:openai/gpt-4.1": 2}
"""Agents the paper ran in their own low-concurrency lane (a separate quota): own record file,
at most this many workers."""
STABILITY_MODES = ("none", "timeout_pre", "timeout_post", "timeout_late", "http500_pre",
                   "http500_post", "partial_batch", "redelivery")
"""The paper's stability check pairs E1 with the same worlds run again: E2's worlds (instance 0,
E2's modes). Here they are a declared repeat of E1 (``--limbo-repeat 2``, second run only)."""

SMALL_WORLDS = ("incident_open-i0-ticket-", "incident_open-i0-comment-",
                "incident_open-i0-baseline-", "cross_post-i0-post_x-", "cross_post-i0-baseline-",
                "invoice_batch-i0-charge_1-", "invoice_batch-i0-baseline-",
                "migration_log-i0-batch-", "migration_log-i0-baseline-",
                "release_announcement-i0-publish_weibo-", "release_announcement-i0-baseline-")
"""``--small``: six focal writes of instance 0 and their templates' fault-free episodes. Each is
among its template's first two writes (so E3, E3k and E4 keep it), and between them they cover
every contract class (a strongly and an eventually verifiable non-idempotent write, a keyable
one, the unverifiable endpoint, the non-atomic batch insert), an irreversible write (the
comment) beside reversible ones, and every fault family."""
SMALL_HARNESS_WORLDS = ("incident_open-i0-ticket-timeout_late",)
"""``--small`` for harness agents, whose episodes each start a CLI: a late commit on one write
(under E3's and E3k's two conditions)."""


@dataclass(frozen=True)
class Selection:
    """Which of an experiment's episodes a run takes, as a ``pytest -k`` expression and as the
    same test in Python (to count them for the budget and check the records against)."""

    worlds: tuple[str, ...] = ()
    """World-id prefixes (``template-iN-focal-mode``); empty: every world."""
    instance: int | None = None
    modes: tuple[str, ...] = ()
    agent: str | None = None
    """One agent of the experiment's own list (selected by name, so each arm keeps its own)."""
    second_run: bool = False
    """Only the second run of ``--limbo-repeat 2`` (ids ending in ``-rep1``)."""

    def expression(self) -> str | None:
        parts = []
        if self.second_run:
            parts.append("rep1")
        if self.worlds:
            parts.append("(" + " or ".join(self.worlds) + ")")
        if self.instance is not None:
            parts.append(f"-i{self.instance}-")
        if self.modes:
            parts.append("(" + " or ".join(self.modes) + ")")
        if self.agent:
            parts.append(self.agent.replace(":", "-"))  # the agent's keyword
        return " and ".join(parts) or None

    def keeps(self, test_id: str, agent: str, instance: int, mode: str) -> bool:
        return ((not self.worlds or any(w in test_id for w in self.worlds))
                and (self.instance is None or instance == self.instance)
                and (not self.modes or mode in self.modes)
                and (self.agent is None or agent == self.agent))


@dataclass(frozen=True)
class Run:
    """One ``pytest`` invocation of the study."""

    experiment: str
    records: Path
    agent: str | None = None
    """``--agent`` (replacing the experiment's list in every arm); ``None``: the spec's own."""
    selection: Selection = field(default_factory=Selection)
    workers: int = 1
    model_options: tuple[str, ...] = ()
    served_by: tuple[str, str] | None = None
    """(policy, contract) of the local scripted model server behind a harness agent."""
    resume: bool = False
    planned_agent: str = ""
    """The one agent this run runs (given with ``--agent`` or selected by name)."""
    specs: str | None = None
    """``limbo --specs DIR``: the same specs for pytest (``--limbo-specs``)."""

    @property
    def label(self) -> str:
        what = "declared repeat of " if self.selection.second_run else ""
        return f"{what}{self.experiment.upper()} {self.planned_agent}"

    def argv(self, records: Path | None = None, shard: tuple[int, int] | None = None,
             api_base: str | None = None) -> list[str]:
        """The pytest command line (``pytest`` first; run it as ``python -m pytest``)."""
        args = ["pytest", "--experiment", self.experiment]
        if self.agent:
            args += ["--agent", self.agent]
        expression = self.selection.expression()
        if expression:
            args += ["-k", expression]
        if self.selection.second_run:
            args += ["--limbo-repeat", "2"]
        if shard:
            args += ["--limbo-shard", f"{shard[0]}/{shard[1]}"]
        if self.workers > 1:
            args += ["-n", str(self.workers)]
        for option in self.model_options:
            args += ["--model-option", option]
        if self.served_by:
            args += ["--model-option", f"api_base={api_base or '$SCRIPTED_MODEL_URL'}",
                     "--model-option", "api_key=local"]
        if self.resume:
            args.append("--limbo-resume")
        if self.specs:
            args.append(f"--limbo-specs={self.specs}")
        return [*args, f"--limbo-records={records or self.records}", "-q", "--tb=no", "-rN"]

    def shard_files(self, shards: int) -> list[Path]:
        return [self.records.with_suffix(f".shard{k}.jsonl") for k in range(shards)]


@dataclass(frozen=True)
class Group:
    """Record files ``limbo report`` reads together, and what combining them means."""

    name: str
    experiments: tuple[str, ...]
    note: str


GROUPS = (
    Group("e1", ("e1", "e1-repeat"),
          "E1 alone, with its declared repeat: E2's vanilla episodes on the same worlds are "
          "another experiment, never repeat runs, so E2 is not added here; stability pairs "
          "only the declared repeat (records/e1-repeat)."),
    Group("e2", ("e2", "e2k"),
          "E2 + E2k: Table 5 compares contract variants on the worlds both have; Table 7 and "
          "Appendix B compare E2's conditions among themselves."),
    Group("e3", ("e3", "e3k"),
          "E3 + E3k: E3k's keys_everywhere episodes feed Table 9 only; Table 4's bottom block "
          "is E3's native, vanilla episodes."),
    Group("e4", ("e2", "e4"),
          "E2 + E4: E4's variants are compared with E2 on matched worlds only (E4's two modes "
          "on two focal writes per template); the rest of E2 is left out of those comparisons, "
          "and each table says how many episodes that was. Do not read E2's own rows here."),
    Group("e5", ("e2", "e2k", "e5"),
          "E2 + E2k + E5: Table 6's fixed-delay references are the matched E2/E2k late-commit "
          "episodes; E5 holds the waits and the tail delay."),
    Group("e6", ("e1", "e6"),
          "E1 + E6: Table 10 pairs each E6 episode with its E1 counterpart (same world and "
          "model); E1's other episodes are not in it. Read E1's tables from the e1 report."),
)


@dataclass(frozen=True)
class PaperItem:
    name: str
    group: str
    kind: str  # "table" or "figure"
    id: str


PAPER = (
    PaperItem("Table 3", "e1", "table", "table3_agents"),
    PaperItem("Figure 2", "e1", "figure", "dup_by_family"),
    PaperItem("Figure 3", "e1", "figure", "dup_by_contract"),
    PaperItem("Figure 3 (its table)", "e1", "table", "contract_classes"),
    PaperItem("Table 4, top (E1)", "e1", "table", "table4_shapley"),
    PaperItem("H1 regression (§6.2)", "e1", "table", "h1_regression"),
    PaperItem("Table 5", "e2", "table", "table5_contracts"),
    PaperItem("Table 6", "e5", "table", "table6_waiting"),
    PaperItem("Figure 4", "e5", "figure", "waiting_vs_keys"),
    PaperItem("Table 7", "e2", "table", "table7_conditions"),
    PaperItem("Appendix B", "e2", "table", "appendix_b_mcnemar"),
    PaperItem("§6.6 robustness: E4 against E2", "e4", "table", "table7_conditions"),
    PaperItem("Table 8", "e3", "table", "table8_harnesses"),
    PaperItem("Table 9", "e3", "table", "table9_harness_contracts"),
    PaperItem("Table 4, bottom (E3)", "e3", "table", "table4_shapley"),
    PaperItem("Table 10", "e6", "table", "table10_cue"),
    PaperItem("Figure 6", "e1", "figure", "behaviour"),
    PaperItem("Figure 6 (its table)", "e1", "table", "behaviour"),
    PaperItem("H4: stakes (§6.4)", "e1", "table", "h4_stakes"),
    PaperItem("H5: overclaiming (§6.4)", "e1", "table", "overclaim"),
    PaperItem("§6.1 re-issue timing", "e1", "table", "reissue_timing"),
    PaperItem("§6.3 key reuse", "e5", "table", "key_reuse"),
    PaperItem("§6.1 observation equivalence", "e1", "table", "observation_equivalence"),
    PaperItem("§6.1 stability across runs", "e1", "table", "stability"),
)
"""Every table and figure of the paper that is computed from episodes, and which report holds
it (Tables 1, 2 and 11 describe the benchmark itself: ``limbo list``)."""


# -- what runs ---------------------------------------------------------------------------------
def slug(agent: str) -> str:
    """A record file's name for ``agent``."""
    from limbo_plugin.records import agent_id_part

    return agent_id_part(agent)


def is_scripted(agent: str) -> bool:
    return agent.split(":", 1)[0] in ("scripted", "mcp")


def harness_model(agent: str) -> str:
    """The model a harness runs for a scaffold agent: ``litellm:openai/m`` → ``m`` (the
    harness's own provider routing applies), ``scripted:p`` → ``p`` (served locally)."""
    from limbo_plugin.report.facets import model_of

    return model_of(agent).rsplit("/", 1)[-1]


@dataclass
class Study:
    """The reproduction's runs and reports, as the options chose them."""

    out: Path
    registry: Any
    agents: list[str] | None
    """``--agents``; ``None``: each experiment's own list."""
    harnesses: list[str] | None
    """``--harnesses`` (names or ``harness:`` agents); ``None``: the paper's; ``[]``: none."""
    small: bool = False
    workers: int = 1
    model_options: tuple[str, ...] = ()
    shards: int = 1
    resume: bool = False
    experiments: tuple[str, ...] = STUDY
    specs: str | None = None
    _episodes: dict[tuple[str, str | None], list[Any]] = field(default_factory=dict, repr=False)

    def records_dir(self, experiment: str) -> Path:
        return self.out / "records" / experiment

    def spec_agents(self, experiment: str) -> list[str]:
        return sorted({e.config.agent for e in self.episodes(experiment, None)})

    def episodes(self, experiment: str, agent: str | None) -> list[Any]:
        from limbo_plugin.experiments import find_experiment, load_experiment
        from limbo_plugin.runconfig import RunConfig

        key = (experiment, agent)
        if key not in self._episodes:
            spec = load_experiment(find_experiment(experiment, self.registry), self.registry)
            overrides = {"agent": agent} if agent else {}
            self._episodes[key] = spec.episodes(self.registry, overrides, RunConfig())
        return self._episodes[key]

    def scaffold_agents(self, experiment: str) -> list[str]:
        if self.agents is not None:
            return list(self.agents)
        return [a for a in self.spec_agents(experiment) if not a.startswith("harness:")]

    def harness_agents(self, experiment: str) -> list[tuple[str, str | None]]:
        """E3/E3k's harness agents, each with the scripted policy that plays its model (or
        ``None`` for a real model): the spec's, or each of ``--harnesses`` with each model."""
        if experiment not in HARNESS_EXPERIMENTS:
            return []
        if self.harnesses is None and self.agents is None:
            return [(a, None) for a in self.spec_agents(experiment) if a.startswith("harness:")]
        names = self.harnesses if self.harnesses is not None else ["copilot", "hermes", "codex"]
        found: dict[str, str | None] = {}
        for name in names:
            if name.startswith("harness:"):
                found[name] = None
                continue
            for agent in self.scaffold_agents(experiment):
                policy = agent.split(":", 1)[1] if is_scripted(agent) else None
                found.setdefault(f"harness:{name}:{harness_model(agent)}", policy)
        return sorted(found.items())

    def plan(self) -> list[Run]:
        """Every run, in the order they go: each experiment's agents, its harness agents, then
        the declared repeat of E1."""
        runs: list[Run] = []
        every = Selection(worlds=SMALL_WORLDS) if self.small else Selection()
        for experiment in self.experiments:
            for agent in self.scaffold_agents(experiment):
                runs.append(self._run(experiment, agent, every))
            for agent, policy in self.harness_agents(experiment):
                few = Selection(worlds=SMALL_HARNESS_WORLDS) if self.small else Selection()
                contract = "keys_everywhere" if experiment == "e3k" else "native"
                runs.append(self._run(experiment, agent, few,
                                      served_by=(policy, contract) if policy else None))
        if "e1" in self.experiments:
            again = (replace(every, second_run=True) if self.small
                     else Selection(instance=0, modes=STABILITY_MODES, second_run=True))
            repeaters = self.agents if self.agents is not None else \
                [a for a in self.spec_agents("e2") if a in self.spec_agents("e1")]
            for agent in repeaters:
                runs.append(self._run("e1", agent, again, folder="e1-repeat"))
        return runs

    def _run(self, experiment: str, agent: str, selection: Selection, *,
             served_by: tuple[str, str] | None = None, folder: str | None = None) -> Run:
        chosen = self.agents is not None or (self.harnesses is not None
                                             and agent.startswith("harness:"))
        if not chosen:  # the spec's agent: select it, so every arm keeps its own list
            selection = replace(selection, agent=agent)
        return Run(experiment, self.records_dir(folder or experiment) / f"{slug(agent)}.jsonl",
                   agent if chosen else None, selection,
                   min(self.workers, SEPARATE_LANE.get(agent, self.workers)),
                   () if served_by else self.model_options, served_by, resume=self.resume,
                   planned_agent=agent, specs=self.specs)

    def expected(self, run: Run) -> list[tuple[str, str]]:
        """(agent, fault mode) of every episode ``run`` runs (per shard: all of them)."""
        from limbo_plugin.records import make_test_id

        kept = []
        repeat = 1 if run.selection.second_run else 0
        for episode in self.episodes(run.experiment, run.agent):
            test_id = make_test_id(episode.key.id, episode.config, repeat)
            if run.selection.keeps(test_id, episode.config.agent, episode.key.instance,
                                   episode.key.fault_mode):
                kept.append((episode.config.agent, episode.key.fault_mode))
        return kept

    def expected_ids(self, run: Run) -> set[str]:
        from limbo_plugin.records import make_test_id

        repeat = 1 if run.selection.second_run else 0
        ids = ((make_test_id(e.key.id, e.config, repeat), e)
               for e in self.episodes(run.experiment, run.agent))
        return {test_id for test_id, e in ids if run.selection.keeps(
            test_id, e.config.agent, e.key.instance, e.key.fault_mode)}

    def check(self, runs: Sequence[Run]) -> None:
        """What would stop the study midway, found before anything runs: an unknown scripted
        policy behind a harness, a harness CLI that is not installed, a run that selects
        nothing."""
        from limbo_plugin.agents.harness_install import find_harness, installed_executable
        from limbo_plugin.agents.registry import check_agent
        from limbo_plugin.agents.scripted import POLICIES

        for agent in self.agents or []:
            try:
                check_agent(agent)
            except UsageError as exc:
                raise UsageError(f"--agents {agent}: {exc}") from None
        seen: set[str] = set()
        for run in runs:
            if run.served_by and run.served_by[0] not in POLICIES:
                raise UsageError(f"{run.planned_agent}: no scripted policy {run.served_by[0]!r} "
                                 f"to serve as its model; valid: {', '.join(POLICIES)}")
            parts = run.planned_agent.split(":")
            if parts[0] == "harness" and parts[1] != "command" and parts[1] not in seen:
                seen.add(parts[1])
                if installed_executable(find_harness(parts[1])) is None:
                    raise UsageError(
                        f"harness {parts[1]} is not installed (needed by {run.label}): run "
                        f"`limbo harness install {parts[1]}`, or leave harnesses out with "
                        "--harnesses none (Tables 8 and 9 and Table 4's bottom then stay empty)")
            if not self.expected(run):
                raise UsageError(f"{run.label}: the selection {run.selection.expression()!r} "
                                 "holds no episode of the experiment")


# -- budget ------------------------------------------------------------------------------------
def budget(study: Study, runs: Sequence[Run], cassette: str | None) -> tuple[list[str], bool]:
    """Lines of the budget, and whether it spends anything (a model call not served locally)."""
    from limbo_plugin.report import plan

    usage = None
    if cassette is not None:
        from limbo_plugin.report.plan_cassette import load_usage

        usage = load_usage(cassette)
    lines, total, unknown, spends = [], 0.0, 0, False
    for run in runs:
        kept = study.expected(run)
        modes = [mode for _, mode in kept]
        if run.served_by:
            row = plan.AgentBudget(run.planned_agent, len(kept), 0.0, 0.0, 0.0,
                                   f"model played by scripted:{run.served_by[0]}, locally")
        elif usage is not None:
            row = plan.measured_budget(run.planned_agent, modes, usage, None,
                                       plan.COMPLETION_SHARE)
        else:
            row = plan.budget(run.planned_agent, len(kept), None, plan.COMPLETION_SHARE)
        spends = spends or bool(row.model_calls) or row.model_calls is None
        if row.cost_usd is None:
            unknown += 1
        else:
            total += row.cost_usd
        calls = "—" if row.model_calls is None else f"{row.model_calls:,.0f}"
        tokens = "—" if row.tokens is None else f"{row.tokens:,.0f}"
        cost = "unknown" if row.cost_usd is None else f"${row.cost_usd:,.2f}"
        note = f" ({row.note})" if row.note else ""
        lines.append(f"  {run.label}: {row.episodes} episodes, ~{calls} model calls, "
                     f"~{tokens} tokens, {cost}{note}")
    episodes = sum(len(study.expected(r)) for r in runs)
    more = f" plus {unknown} run(s) of unknown cost" if unknown else ""
    lines.append(f"Total: {episodes} episodes, ${total:,.2f}{more}.")
    return lines, spends


# -- running -----------------------------------------------------------------------------------
class StudyFailed(UsageError):
    """A run of the study did not finish: the line says which and where its log is."""


@contextmanager
def scripted_model(policy: str, contract: str, log: Path) -> Iterator[str]:
    """A local scripted model server playing ``policy`` (the harness's model); its URL."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "limbo_plugin.testing.openai_server", "--policy", policy,
               "--contract", contract, "--port", "0"]
    with open(log, "w", encoding="utf-8") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until ready (or the server died)
        if not line.startswith("listening on "):
            raise StudyFailed(f"the scripted model server for {policy} did not start: see {log}")
        yield line.removeprefix("listening on ").strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def execute(study: Study, run: Run, logs: Path, api_base: str | None) -> str:
    """Run ``run`` (its shards, then their merge) and check its records; one line of result."""
    run.records.parent.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run.records.parent.name}-{run.records.stem}.log"
    shards = [(run.records, None)] if study.shards == 1 else [
        (path, (k, study.shards)) for k, path in enumerate(run.shard_files(study.shards))]
    with open(log, "a", encoding="utf-8") as sink:
        for path, shard in shards:
            argv = run.argv(path, shard, api_base)
            print(f"$ {shlex.join(argv)}", flush=True)
            sink.write(f"$ {shlex.join(argv)}\n")
            sink.flush()
            code = subprocess.run([sys.executable, "-m", *argv], stdout=sink,
                                  stderr=subprocess.STDOUT, check=False).returncode
            if code not in (0, 1):  # 1: some episodes failed, which is what is measured
                raise StudyFailed(f"{run.label}: pytest exited {code}; see {log}")
    if study.shards > 1:
        merge = ["merge", str(run.records), *(str(p) for p, _ in shards)]
        print(f"$ limbo {shlex.join(merge)}", flush=True)
        with open(log, "a", encoding="utf-8") as sink:
            code = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *merge],
                                  stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0:
            raise StudyFailed(f"{run.label}: limbo merge failed; see {log}")
    return verify(study, run, log)


def verify(study: Study, run: Run, log: Path) -> str:
    """Every planned episode is in the records: a selection that drifted from the plan, or a
    run that stopped early, is found here and not in a table short of rows."""
    from limbo_plugin.report.record_files import read_records

    latest = {r.test_id: r for r in read_records(run.records)}
    expected = study.expected_ids(run)
    missing = expected - latest.keys()
    extra = latest.keys() - expected
    if missing or extra:
        raise StudyFailed(f"{run.label}: {len(expected)} episode(s) planned, "
                          f"{len(expected & latest.keys())} recorded, {len(extra)} unplanned "
                          f"(e.g. {sorted(missing or extra)[0]}); see {log}")
    errors = sum(1 for r in latest.values() if r.error is not None)
    failed = f", {errors} infrastructure error(s): re-run with --resume" if errors else ""
    return f"{len(latest)} episodes in {run.records}{failed}"


# -- reports and the index ---------------------------------------------------------------------
def report_commands(study: Study, runs: Sequence[Run]) -> list[tuple[Group, list[str]]]:
    commands = []
    for group in GROUPS:
        files = [str(r.records) for r in runs if r.records.parent.name in group.experiments]
        if not any(r.experiment == group.name for r in runs):  # its own experiment did not run
            continue
        commands.append((group, ["report", *files, "--out", str(study.out / "report" /
                                                               group.name)]))
    return commands


def write_index(study: Study, groups: Sequence[str]) -> tuple[Path, int, int]:
    """``OUT/paper.md`` and ``OUT/paper.json``: each paper item, its file or why it is
    missing. Returns the index and how many items were produced of how many."""
    rows, items = [], []
    for item in PAPER:
        folder = study.out / "report" / item.group
        meta_path = folder / "report.json"
        if item.group not in groups or not meta_path.is_file():
            path, reason = None, f"the {item.group} report was not made"
        else:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            file = (folder / "tables" / f"{item.id}.md" if item.kind == "table"
                    else folder / "figures" / f"{item.id}.png")
            path = file if file.is_file() else None
            reason = meta.get("skipped", {}).get(item.id, "not written")
        shown = os.path.relpath(path, study.out) if path else None
        items.append({"item": item.name, "report": item.group, "kind": item.kind, "id": item.id,
                      "file": shown, "missing": None if path else reason})
        rows.append(f"| {item.name} | `{item.group}` | "
                    + (f"[{shown}]({shown})" if shown else f"— {reason}") + " |")
    produced = sum(1 for i in items if i["file"])
    (study.out / "paper.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    notes = "\n".join(f"- `{g.name}` ({' + '.join(g.experiments)}): {g.note}" for g in GROUPS
                      if g.name in groups)
    index = study.out / "paper.md"
    index.write_text(
        "# The paper's tables and figures\n\n"
        f"{produced} of {len(items)} produced by `limbo reproduce`. Each report is in "
        "`report/<name>/index.html`.\n\n| paper | report | file |\n|---|---|---|\n"
        + "\n".join(rows) + f"\n\n## What each report combines\n\n{notes}\n", encoding="utf-8")
    return index, produced, len(items)


# -- the command -------------------------------------------------------------------------------
def register(sub: Any) -> None:
    from limbo_plugin.cli.common import registry_of

    add_parser(sub).set_defaults(handler=lambda args: run_command(args, registry_of(args)))


def add_parser(sub: Any) -> Any:
    parser = sub.add_parser(
        "reproduce", help="the paper's study end to end: budget, runs, reports",
        description="Budget (limbo plan), every experiment's runs (pytest), the reports that "
        "read them together (limbo report) and an index of the paper's tables and figures "
        "(OUT/paper.md). See docs/reproduce.md.")
    parser.add_argument("--agents", default=None, metavar="A,B,…",
                        help="agents replacing every experiment's models (e.g. "
                        "litellm:openai/gpt-5.5,litellm:anthropic/claude-opus-4-5, or "
                        "scripted:blind_retry,scripted:same_key); default: the paper's")
    parser.add_argument("--harnesses", default=None, metavar="H,…|none",
                        help="E3/E3k's production harnesses (codex, copilot, hermes), each run "
                        "with every model of --agents, or full harness:<name>:<model> agents; "
                        "none: no harness; default: the paper's")
    parser.add_argument("--small", action="store_true",
                        help="a fixed handful of focal writes of each experiment (every mode "
                        "and configuration on them): a check of the chain, or a pilot run "
                        "for --cassette")
    parser.add_argument("--only", default=None, metavar="E1,E2,…",
                        help=f"these experiments only ({', '.join(STUDY)})")
    parser.add_argument("--out", default="reports/reproduce",
                        help="folder of records, logs and reports (default reports/reproduce)")
    parser.add_argument("-n", "--workers", type=int, default=1,
                        help="pytest-xdist workers per run (default 1)")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="runs (and reports) at a time (default 1); each run uses "
                        "--workers processes")
    parser.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to every model-backed run (api_base=…); repeatable")
    parser.add_argument("--shards", type=int, default=1,
                        help="split each run into N --limbo-shard commands (for N machines; "
                        "here they run one after another) and merge them")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted reproduction (--limbo-resume)")
    parser.add_argument("--cassette", default=None, metavar="PATH",
                        help="budget from your own pilot run (limbo plan --cassette)")
    parser.add_argument("--yes", action="store_true",
                        help="spend the budget: without it, a study that calls a model stops "
                        "after printing its budget")
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="print the commands as a shell script and run nothing")
    return parser


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return [] if items == ["none"] else items


def study_of(args: argparse.Namespace, registry: Any) -> Study:
    only = tuple(e.lower() for e in _list(args.only) or STUDY)
    unknown = [e for e in only if e not in STUDY]
    if unknown:
        raise UsageError(f"--only {args.only}: unknown experiment {unknown[0]!r}; valid: "
                         f"{', '.join(STUDY)}")
    for name, value in (("--workers", args.workers), ("--shards", args.shards),
                        ("--jobs", args.jobs)):
        if value < 1:
            raise UsageError(f"{name} {value}: give 1 or more")
    agents = _list(args.agents)
    if agents == []:
        raise UsageError("--agents: give at least one agent (or leave it out for the paper's)")
    return Study(out=Path(args.out), registry=registry, agents=agents,
                 harnesses=_list(args.harnesses), small=args.small, workers=args.workers,
                 model_options=tuple(args.model_option), shards=args.shards,
                 resume=args.resume, experiments=tuple(e for e in STUDY if e in only),
                 specs=args.specs)


def script(study: Study, runs: Sequence[Run], cassette: str | None) -> str:
    """The study as a shell script: the same commands ``limbo reproduce`` runs."""
    lines = ["#!/bin/sh", "# The paper's study, as `limbo reproduce` runs it.", "set -e", "",
             "# 1. Budget: what each run will cost, before anything is spent."]
    limbo = ["limbo", *(["--specs", study.specs] if study.specs else [])]
    seen = set()
    for run in runs:
        plan = [*limbo, "plan", "--experiment", run.experiment]
        if run.agent and not run.served_by:
            plan += ["--agent", run.agent]
        if cassette:
            plan += ["--cassette", cassette]
        if not run.served_by and tuple(plan) not in seen:
            seen.add(tuple(plan))
            lines.append(shlex.join(plan))
    lines += ["", "# 2. Runs: one record file per experiment and agent."]
    servers = sorted({r.served_by for r in runs if r.served_by})
    for policy, contract in servers:
        lines.append(f"# scripted:{policy} plays the model behind the harnesses ({contract}): "
                     f"python -m limbo_plugin.testing.openai_server --policy {policy} "
                     f"--contract {contract} --port 0  → $SCRIPTED_MODEL_URL")
    for run in runs:
        lines.append(f"# {run.label}: {len(study.expected(run))} episodes")
        if study.shards == 1:
            lines.append(shlex.join(run.argv()))
            continue
        files = run.shard_files(study.shards)
        lines += [shlex.join(run.argv(path, (k, study.shards)))
                  for k, path in enumerate(files)]
        lines.append(shlex.join([*limbo, "merge", str(run.records), *map(str, files)]))
    lines += ["", "# 3. Reports: the record files each group of tables reads together."]
    for group, command in report_commands(study, runs):
        lines.append(f"# {group.note}")
        lines.append(shlex.join([*limbo, *command]))
    return "\n".join(lines) + "\n"


def run_command(args: argparse.Namespace, registry: Any) -> int:
    study = study_of(args, registry)
    runs = study.plan()
    study.check(runs)
    if args.print_only:
        print(script(study, runs, args.cassette), end="")
        return 0
    started = time.monotonic()
    print("Step 1, budget (limbo plan):")
    lines, spends = budget(study, runs, args.cassette)
    print("\n".join(lines), flush=True)
    if spends and not args.yes:
        print("Nothing was run: this study calls models. Re-run with --yes to spend the budget "
              "above (or --small for a pilot, then --cassette with its records for a measured "
              "budget).")
        return 1
    logs = study.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"Step 2, runs ({len(runs)}, {args.jobs} at a time; logs in {logs}):", flush=True)
    with ExitStack() as stack:
        urls = {served: stack.enter_context(scripted_model(
            *served, logs / f"model-{'-'.join(served)}.log"))
            for served in sorted({r.served_by for r in runs if r.served_by})}

        def one(run: Run) -> str:
            began = time.monotonic()
            result = execute(study, run, logs, urls.get(run.served_by) if run.served_by
                             else None)
            return f"{run.label}: {result} ({time.monotonic() - began:.0f} s)"

        for line in parallel(one, runs, args.jobs):
            print(f"  {line}", flush=True)
    print("Step 3, reports (limbo report):", flush=True)
    commands = report_commands(study, runs)
    for group, command in commands:
        print(f"Note on {group.name}: {group.note}")
        print(f"$ limbo {shlex.join(command)}", flush=True)

    def report(item: tuple[Group, list[str]]) -> str:
        group, command = item
        began = time.monotonic()
        log = logs / f"report-{group.name}.log"
        specs = [] if args.specs is None else ["--specs", args.specs]
        with open(log, "w", encoding="utf-8") as sink:
            code = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *specs, *command],
                                  stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0:
            raise StudyFailed(f"limbo report for {group.name} failed; see {log}")
        return (f"{study.out / 'report' / group.name / 'index.html'} "
                f"({time.monotonic() - began:.0f} s)")

    for line in parallel(report, commands, args.jobs):
        print(f"  {line}", flush=True)
    index, produced, total = write_index(study, [g.name for g, _ in commands])
    print(f"Step 4, index: {produced} of {total} of the paper's tables and figures produced: "
          f"{index} ({time.monotonic() - started:.0f} s in all)")
    return 0


def parallel(work: Callable[[T], str], items: Sequence[T], jobs: int) -> Iterator[str]:
    """``work`` on each item, ``jobs`` at a time (each is a child process, so threads do);
    results as they finish. The first failure stops the rest from starting and is raised."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(work, item) for item in items]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                if future.exception() is not None:
                    for rest in pending:
                        rest.cancel()
                    raise future.exception()  # type: ignore[misc]
                yield future.result()
