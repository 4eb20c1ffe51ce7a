"""The paper's study as data: its experiments, how ``--small`` and the declared repeat select
episodes (a ``pytest -k`` expression and the same test in Python), one pytest run, the groups of
record files ``limbo report`` reads together, and where each paper table and figure comes
from. Used by ``limbo reproduce`` (:mod:`limbo_plugin.cli.reproduce`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
    PaperItem("Table 1", "e1", "table", "table1_tools"),
    PaperItem("Table 2", "e1", "table", "table2_fault_modes"),
    PaperItem("Table 11", "e1", "table", "table11_descriptions"),
    PaperItem("Table 3", "e1", "table", "table3_agents"),
    PaperItem("Figure 2", "e1", "figure", "dup_by_family"),
    PaperItem("Figure 3", "e1", "figure", "dup_by_contract"),
    PaperItem("Figure 3 (its table)", "e1", "table", "contract_classes"),
    PaperItem("Table 4, top (E1)", "e1", "table", "table4_shapley"),
    PaperItem("H1 regression (§6.2)", "e1", "table", "h1_regression"),
    PaperItem("Table 5", "e2", "table", "table5_contracts"),
    PaperItem("Table 6", "e5", "table", "table6_waiting"),
    PaperItem("Figure 4", "e5", "figure", "waiting_vs_keys"),
    PaperItem("Table 7", "e2", "table", "table7_paper"),
    PaperItem("Appendix B", "e2", "table", "appendix_b_mcnemar"),
    PaperItem("§6.6 robustness: E4 against E2", "e4", "table", "e4_matched"),
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
"""Every table and figure of the paper, and which report holds it (Tables 1, 2 and 11 come from
the specs, so every report has them; the index points at E1's)."""
