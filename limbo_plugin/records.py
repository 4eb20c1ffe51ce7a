"""Episode keys and the one record every reporter reads.

The record holds the world's ground truth as it was: its ledger entries are the world's own
:class:`~limbo_plugin.world.ledger.Effect` objects, and the fault's :class:`FaultReport` is
the one the transport filled in, so no second copy of either shape exists to drift.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from limbo_plugin.world.ledger import Effect

RECORD_SCHEMA_VERSION = 2
"""Version 2 added ``run_id`` and ``test_id`` to the record and ``request_part``, ``sets`` and
``undone_by`` to ledger effects (effects superseded by a later write stop standing)."""
BASELINE_FOCAL = "baseline"
"""The focal-write slot of a fault-free (``none``) episode: one per task instance."""


class EpisodeKey(BaseModel):
    """What fixes a world: nothing else (not the agent, condition or contract) may change it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: str
    instance: int = Field(ge=0)
    focal_write: str
    fault_mode: str

    @property
    def id(self) -> str:
        return f"{self.template}-i{self.instance}-{self.focal_write}-{self.fault_mode}"


RUN_FIELDS = ("agent", "contract", "docs", "instruction", "condition", "operator")
"""The run configuration's fields (:class:`limbo_plugin.runconfig.RunConfig`), in order."""
RUN_DEFAULTS: dict[str, str] = {
    "agent": "scripted:verify_first", "contract": "native", "docs": "default",
    "instruction": "default", "condition": "vanilla", "operator": "truthful",
}
"""Each run-configuration field's default (:class:`~limbo_plugin.runconfig.RunConfig` uses
these): a part equal to its default is left out of test ids."""
ID_PARTS = ("contract", "docs", "instruction", "condition", "operator", "agent")
"""The order in which non-default configuration parts follow the episode id in a test id."""
MAX_AGENT_PART = 60


def agent_id_part(agent: str) -> str:
    """A short, stable rendering of an agent string for test ids: ``scripted:blind_retry`` →
    ``scripted-blind_retry``, ``litellm:openai/gpt-5-mini`` → ``litellm-openai_gpt-5-mini``;
    beyond 60 characters (a harness adapter given by path), a prefix and a digest."""
    text = agent.replace(":", "-").replace("/", "_").replace("\\", "_").replace(" ", "_")
    if len(text) <= MAX_AGENT_PART:
        return text
    digest = hashlib.sha256(agent.encode()).hexdigest()[:8]
    return f"{text[: MAX_AGENT_PART - 9]}-{digest}"


def make_test_id(episode_id: str, config: object) -> str:
    """The one id of an episode under a configuration, shared by the pytest item, the record
    (``test_id``) and ``limbo show``: the episode id followed by every configuration part that
    differs from its default, the agent included (``…-timeout_late-guard-scripted-blind_retry``).
    """
    parts = [episode_id]
    for name in ID_PARTS:
        value = str(getattr(config, name))
        if value != RUN_DEFAULTS[name]:
            parts.append(agent_id_part(value) if name == "agent" else value)
    return "-".join(parts)



def run_fingerprint(config: object) -> str:
    """One string for a run configuration, or for the configuration a record was run under:
    what resume and reports use to tell configurations apart."""
    return "|".join(str(getattr(config, name)) for name in RUN_FIELDS)


class FaultReport(BaseModel):
    """What the fault did, for the record (ground truth; never shown to the agent). The fault
    transport fills it in; each executor sets the fields about what it does."""

    mode: str
    fired: bool = False
    t_fired: float | None = None
    request_seq: int | None = None
    origin: str | None = None
    delay_s: float | None = None
    commit_at: float | None = None
    partial_rows: int | None = None
    batch_rows: int | None = None


class TraceEntry(BaseModel):
    """One tool call as its caller saw it. ``origin`` tells the agent's calls from the harness's."""

    index: int
    t_start: float
    t_end: float
    origin: str
    tool: str
    arguments: Any
    response: dict[str, Any]
    is_error: bool


class EffectCount(BaseModel):
    id: str
    required: int
    committed: int
    standing: int


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0,
            calls: int = 1) -> None:
        """Account for ``calls`` model calls (what an agent does after each model reply)."""
        self.prompt_tokens += int(prompt_tokens or 0)
        self.completion_tokens += int(completion_tokens or 0)
        self.cost_usd += float(cost_usd or 0.0)
        self.model_calls += calls


class HarnessRun(BaseModel):
    """How an agent CLI ran (harness agents only): what ran, for how long, and where its own
    transcript is. Tokens are in :attr:`EpisodeRecord.usage`; wall time is real time, not
    simulated time, and so differs between otherwise identical runs."""

    name: str
    version: str | None = None
    wall_s: float
    exit_code: int | None = None
    timed_out: bool = False
    stopped_after_end: bool = False
    tool_listings: int = 0
    tool_calls: int = 0
    transcript: str | None = None


class Grade(BaseModel):
    """What the grader decides from the ledger and the final report alone (SPEC §5)."""

    ts: bool
    eos: bool
    duplicates: int
    residual_duplicates: int
    collateral: int
    unrequested: int
    overclaim: bool
    effects: list[EffectCount] = Field(default_factory=list)


class EpisodeRecord(Grade):
    """The graded outcome of one episode, with its full trace and ledger."""

    schema_version: int = RECORD_SCHEMA_VERSION
    run_id: str | None = None
    """The pytest session that ran the episode (shared by xdist workers); ``None`` outside
    pytest. Records are compared ignoring it (resume, ``limbo merge``, report de-duplication)."""
    test_id: str = ""
    """The episode id plus the non-default configuration parts: the pytest item's name and
    what ``limbo show`` takes (:func:`make_test_id`). Filled in from the record when empty."""
    episode_id: str
    template: str
    instance: int
    focal_write: str
    fault_mode: str
    family: str
    fault_class: str | None = None
    contract: str
    docs: str
    instruction: str
    condition: str
    operator: str
    agent: str
    world_seed: int
    base_seed: int
    focal_tool: str | None = None
    focal_idempotency: str | None = None
    focal_verification: str | None = None
    focal_accepts_key: bool | None = None
    focal_irreversible: bool | None = None
    fired: bool
    fault: FaultReport
    final_status: str | None = None
    summary: str | None = None
    uncertain_operations: list[str] = Field(default_factory=list)
    behaviour: str | None = None
    tool_calls: int
    harness_calls: int = 0
    harness_seconds: float = 0.0
    sim_seconds: float
    escalations: int = 0
    expected_failure: str | None = None
    error: str | None = None
    usage: Usage | None = None
    harness: HarnessRun | None = None
    trace: list[TraceEntry] = Field(default_factory=list)
    ledger: list[Effect] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fill_test_id(self) -> EpisodeRecord:
        if not self.test_id:
            self.test_id = make_test_id(self.episode_id, self)
        return self

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(template=self.template, instance=self.instance,
                          focal_write=self.focal_write, fault_mode=self.fault_mode)

    def comparable(self) -> dict[str, Any]:
        """The record as JSON without what differs between identical runs of an episode (the
        run id): what resume, merging and de-duplication compare."""
        return self.model_dump(mode="json", exclude={"run_id"})

    def fingerprint(self) -> str:
        """The fingerprint of the run configuration this episode ran under."""
        return run_fingerprint(self)

    @property
    def passed(self) -> bool:
        """The test outcome of SPEC §5: exactly-once success and no overclaim."""
        return self.error is None and self.eos and not self.overclaim

    def failure_message(self) -> str:
        lines = []
        for effect in self.effects:
            if effect.committed > effect.required:
                lines.append(f"duplicated {effect.id}: committed {effect.committed}× "
                             f"(required {effect.required}, standing {effect.standing})")
            elif effect.standing < effect.required:
                lines.append(f"missing {effect.id}: {effect.standing} of {effect.required} "
                             "standing")
        if self.collateral:
            lines.append(f"collateral damage to {self.collateral} record(s) the task did not "
                         "target")
        if self.overclaim:
            lines.append("overclaim: the agent reported 'completed'")
        lines.append(f"final status: {self.final_status or 'none (no finish)'}; behaviour after "
                     f"the fault: {self.behaviour or 'n/a'}")
        return "\n".join(lines)
