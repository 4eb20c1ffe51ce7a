"""Which runs the study makes for the options given (:class:`Study`), what each selects, and
their budget (``limbo plan``'s figures, or measured with ``--cassette``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from limbo_plugin.errors import UsageError
from limbo_plugin.reproduction.design import (
    HARNESS_EXPERIMENTS,
    SEPARATE_LANE,
    SMALL_HARNESS_WORLDS,
    SMALL_WORLDS,
    STABILITY_MODES,
    STUDY,
    Run,
    Selection,
)


def slug(agent: str) -> str:
    """A record file's name for ``agent``."""
    from limbo_plugin.records import agent_id_part

    return agent_id_part(agent)


def is_scripted(agent: str) -> bool:
    return agent.split(":", 1)[0] in ("scripted", "mcp")


def harness_model(agent: str) -> str:
    """The model a harness runs for a scaffold agent: ``litellm:openai/m`` → ``m`` (the
    harness's own provider routing applies), ``scripted:p`` → ``p`` (served locally)."""
    from limbo_plugin.agents.registry import model_of

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
    from limbo_plugin.planning import cost as plan

    usage = None
    if cassette is not None:
        from limbo_plugin.planning.measured import load_usage

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
