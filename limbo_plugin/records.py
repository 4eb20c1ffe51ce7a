"""Episode keys and the one record every reporter reads.

The record holds the world's ground truth as it was: its ledger entries are the world's own
:class:`~limbo_plugin.world.ledger.Effect` objects, and the fault's :class:`FaultReport` is
the one the transport filled in, so no second copy of either shape exists to drift.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from limbo_plugin.scrubbing import current as current_scrubber
from limbo_plugin.world.ledger import Effect

RECORD_SCHEMA_VERSION = 2
"""Version 2 added ``run_id`` and ``test_id`` to the record and ``request_part``, ``sets`` and
``undone_by`` to ledger effects (effects superseded by a later write stop standing)."""
BASELINE_FOCAL = "baseline"
"""The focal-write slot of a fault-free (``none``) episode: one per task instance."""
DEFAULT_RECORDS = "reports/episodes.jsonl"
"""Where a run appends its records and where ``limbo`` reads them, unless told otherwise."""
GIVE_RECORDS = (f"give a records file written by pytest (--limbo-records, default "
                f"{DEFAULT_RECORDS})")
"""What every command that reads records says when it was given none it can read."""


class Documented(BaseModel):
    """A record part whose field docstrings are its fields' descriptions, so the published JSON
    Schema (``docs/episode-record.schema.json``) and field table (``docs/records.md``) say what
    each field means from the one place that defines it.

    The docstrings are read when the schema is made (:func:`limbo_plugin.store.schema.
    documented`), not when the models are defined: pydantic's ``use_attribute_docstrings``
    parses the module's source once per model, which cost every run about 40 ms of start-up.

    Their validators and serialisers are built when a record is first made or read
    (``defer_build``), not when this module is imported: a run that only collects (``--co``,
    ``limbo list``) never builds them.
    """

    model_config = ConfigDict(defer_build=True)


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


def make_test_id(episode_id: str, config: object, repeat: int = 0) -> str:
    """The one id of an episode under a configuration, shared by the pytest item, the record
    (``test_id``) and ``limbo show``: the episode id followed by every configuration part that
    differs from its default, the agent included (``…-timeout_late-guard-scripted-blind_retry``),
    and, from the second run of a repeated episode (``--limbo-repeat``), ``-rep<index>``. The
    first run keeps the plain id, so a repeated run resumes from and pairs with a single one.
    """
    parts = [episode_id]
    for name in ID_PARTS:
        value = str(getattr(config, name))
        if value != RUN_DEFAULTS[name]:
            parts.append(agent_id_part(value) if name == "agent" else value)
    if repeat:
        parts.append(f"rep{repeat}")
    return "-".join(parts)



def run_fingerprint(config: object) -> str:
    """One string for a run configuration, or for the configuration a record was run under:
    what resume and reports use to tell configurations apart. Interned: a run keeps one per
    episode (selected, recorded) and holds few distinct configurations."""
    return sys.intern("|".join(map(str, _RUN_VALUES(config))))


_RUN_VALUES = attrgetter(*RUN_FIELDS)
"""The configuration's values in :data:`RUN_FIELDS` order, in one call: a report of 100,000
records builds this fingerprint a million times."""


@dataclass(frozen=True)
class RunContext:
    """Where an episode runs, beyond its world and configuration: the pytest session, the
    experiment and arm it comes from, and which repeat it is. ``run_episode`` takes it, so the
    episode's record is built once, complete, and nothing changes it afterwards."""

    run_id: str | None = None
    experiment: str | None = None
    arm: str | None = None
    repeat: int = 0


class FaultReport(Documented):
    """What the fault did, for the record (ground truth; never shown to the agent). The fault
    transport fills it in; each executor sets the fields about what it does."""

    mode: str
    """The fault mode the episode ran under (`timeout_late`, `none`, …)."""
    fired: bool = False
    """Whether the fault was injected (the focal call was made)."""
    t_fired: float | None = None
    """Simulated time, in seconds, at which the fault fired."""
    request_seq: int | None = None
    """Sequence number of the request the fault hit."""
    origin: str | None = None
    """Who made the faulted call: the agent or the harness (middleware)."""
    delay_s: float | None = None
    """For late commits: simulated seconds between the failed answer and the commit."""
    commit_at: float | None = None
    """For late commits: the simulated time the write took effect."""
    partial_rows: int | None = None
    """For partial batches: how many rows were committed."""
    batch_rows: int | None = None
    """For partial batches: how many rows the batch held."""


class TraceEntry(Documented):
    """One tool call as its caller saw it. ``origin`` tells the agent's calls from the harness's."""

    index: int
    """Position of the call in the episode, from 0."""
    t_start: float
    """Simulated time, in seconds, the call started."""
    t_end: float
    """Simulated time, in seconds, the call was answered."""
    origin: str
    """`agent` for the agent's own calls, otherwise the harness layer that made it."""
    tool: str
    """The tool called."""
    arguments: Any
    """A safe, bounded rendering of the arguments the agent sent."""
    response: dict[str, Any]
    """What the tool answered, as the agent saw it."""
    is_error: bool
    """Whether the answer was a tool error."""


class EffectCount(Documented):
    id: str
    """The required effect's id in the task template."""
    required: int
    """How many times the task requires it to be committed."""
    committed: int
    """How many times it was committed (undone or not)."""
    standing: int
    """How many of those commits still stand at the end (not undone)."""


class Usage(Documented):
    prompt_tokens: int = 0
    """Prompt tokens over all model calls of the episode."""
    completion_tokens: int = 0
    """Completion tokens over all model calls of the episode."""
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, those the provider served from its prompt cache, where the agent
    reports them (a harness CLI's usage events); 0 when not reported."""
    cost_usd: float = 0.0
    """Cost in US dollars by the provider's price list; 0 when the model has no known price."""
    model_calls: int = 0
    """Number of model calls."""
    unpriced_calls: int = 0
    """Model calls whose cost is unknown (a model missing from litellm's price map, a harness
    CLI's own calls): ``cost_usd`` leaves them out, so it is a lower bound when this is not 0."""

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0,
            cost_usd: float | None = None, calls: int = 1) -> None:
        """Account for ``calls`` model calls (what an agent does after each model reply).
        Without ``cost_usd`` their cost is unknown (unpriced), not free: the summary then says
        "cost unknown", never a made-up $0.0000."""
        self.prompt_tokens += int(prompt_tokens or 0)
        self.completion_tokens += int(completion_tokens or 0)
        if cost_usd is None:
            self.unpriced_calls += calls
            self.model_calls += calls
            return
        cost = float(cost_usd)
        if math.isfinite(cost) and cost >= 0:
            self.cost_usd += cost
        else:  # NaN, infinite or negative: a cost nobody knows, not a number to sum
            self.unpriced_calls += calls
        self.model_calls += calls

    def finite(self) -> Usage:
        """This usage as a record can hold it: a cost set to NaN or infinity directly (not
        through :meth:`add`) is unknown, its calls unpriced (JSON has no NaN: it would be
        written as ``null`` and the line could not be read back)."""
        if math.isfinite(self.cost_usd) and self.cost_usd >= 0:
            return self
        return self.model_copy(update={"cost_usd": 0.0,
                                       "unpriced_calls": max(self.unpriced_calls,
                                                             self.model_calls, 1)})


class HarnessRun(Documented):
    """How an agent CLI ran (harness agents only): what ran, for how long, and where its own
    transcript is. Tokens are in :attr:`EpisodeRecord.usage`; wall time is real time, not
    simulated time, and so differs between otherwise identical runs."""

    name: str
    """The harness adapter (`codex`, `copilot`, `hermes`, or a command's name)."""
    version: str | None = None
    """The CLI's own version string."""
    wall_s: float
    """Real (wall-clock) seconds the CLI ran."""
    exit_code: int | None = None
    """The CLI's exit status (`null` if it was stopped)."""
    timed_out: bool = False
    """Whether the CLI hit its time limit."""
    stopped_after_end: bool = False
    """Whether the CLI was stopped after the episode had already ended (finish called)."""
    tool_listings: int = 0
    """How many times the CLI listed the tools."""
    tool_calls: int = 0
    """How many tool calls the CLI made through MCP."""
    transcript: str | None = None
    """Directory holding the CLI's own transcript files."""


class Grade(Documented):
    """What the grader decides from the ledger and the final report alone (SPEC §5)."""

    ts: bool | None
    """Task success: every required effect reached its count and no unrelated record was
    damaged; ``null`` on a record with an infrastructure error, which carries no grade."""
    eos: bool | None
    """Exactly-once success: task success and no required effect exceeds its count; ``null``
    on a record with an infrastructure error."""
    duplicates: int
    """Commits beyond the required counts (undone ones included)."""
    residual_duplicates: int
    """Duplicates still standing at the end: the sum of max(0, standing - required)."""
    collateral: int
    """Writes to records the task did not target (collateral damage)."""
    unrequested: int
    """Committed effects that match no required effect."""
    overclaim: bool | None
    """The agent finished `completed` while not task-successful or with a residual duplicate;
    ``null`` on a record with an infrastructure error. The counts (duplicates and the rest) are
    what had committed when the error struck, kept so that a duplicate an agent committed before
    it hung is never lost."""
    effects: list[EffectCount] = Field(default_factory=list)
    """Per required effect: required, committed and standing counts."""


class EpisodeRecord(Grade):
    """The graded outcome of one episode, with its full trace and ledger."""

    # Frozen: run_episode builds a record whole, with its run's context, and nothing changes
    # it afterwards (a changed copy is model_copy(update=...)).
    model_config = ConfigDict(frozen=True)

    schema_version: int = RECORD_SCHEMA_VERSION
    """The record format's version; Limbo reads only its own."""
    run_id: str | None = None
    """The pytest session that ran the episode (shared by xdist workers); ``None`` outside
    pytest. Records are compared ignoring it (resume, ``limbo merge``, report de-duplication)."""
    test_id: str = ""
    """The episode id plus the non-default configuration parts: the pytest item's name and
    what ``limbo show`` takes (:func:`make_test_id`). Filled in from the record when empty."""
    experiment: str | None = None
    """The experiment spec the episode was run from (`e1`, `default`, …); ``None`` outside an
    experiment (``limbo run``). Reports compare configurations within an experiment, on the
    worlds both have, and estimate ρ within an experiment."""
    arm: str | None = None
    """The experiment's arm that produced the episode (the first, in the spec's order, whose
    design holds it); ``None`` for an experiment without arms."""
    episode_id: str
    """The world's id: template, instance, focal write and fault mode."""
    repeat: int = 0
    """Which run of the same episode and configuration this is, from 0 (``--limbo-repeat K``
    runs each episode K times on the same world): what pass^k and run-to-run stability read."""
    template: str
    """The task template."""
    instance: int
    """The task instance, from 0."""
    focal_write: str
    """The write the fault targets (`baseline` under mode `none`)."""
    fault_mode: str
    """The fault mode."""
    family: str
    """The fault mode's family (`lost_ack`, `late_commit`, …): the rows of the family table."""
    fault_class: str | None = None
    """The family's class (e.g. ambiguous or unambiguous failure)."""
    contract: str
    """The tool contract variant the agent saw."""
    docs: str
    """The documentation variant the agent saw."""
    instruction: str
    """The task-instruction variant."""
    condition: str
    """The recovery condition (prompt or middleware)."""
    operator: str
    """How the simulated human operator answers escalations."""
    agent: str
    """The agent, as `<kind>:<rest>`."""
    world_seed: int
    """The seed derived from (template, instance, focal write, fault mode)."""
    base_seed: int
    """The task instance's seed."""
    focal_tool: str | None = None
    """The tool of the focal write."""
    focal_idempotency: str | None = None
    """How the focal tool deduplicates (its contract's idempotency)."""
    focal_verification: str | None = None
    """How the focal write's effect can be checked (its contract's verification)."""
    focal_accepts_key: bool | None = None
    """Whether the focal tool accepts an idempotency key."""
    focal_irreversible: bool | None = None
    """Whether the focal write cannot be undone."""
    fired: bool
    """Whether the fault fired (episodes where it did not are excluded from rates)."""
    fault: FaultReport
    """What the fault did (ground truth; never shown to the agent)."""
    final_status: str | None = None
    """The status the agent finished with (`completed`, `partial`, `failed`), if any."""
    summary: str | None = None
    """The agent's final summary."""
    uncertain_operations: list[str] = Field(default_factory=list)
    """Operations the agent reported it is not sure about."""
    behaviour: str | None = None
    """The agent's recovery behaviour after the focal fault, coded from its own calls."""
    tool_calls: int
    """Tool calls the agent made."""
    harness_calls: int = 0
    """Tool calls the condition's middleware made on the agent's behalf."""
    harness_seconds: float = 0.0
    """Simulated seconds the middleware spent (waits, retries)."""
    sim_seconds: float
    """Simulated seconds the episode took."""
    escalations: int = 0
    """Times the agent escalated to the human operator."""
    expected_failure: str | None = None
    """Why this configuration is expected to fail (an xfail reason), if it is."""
    error: str | None = None
    """An infrastructure error (provider, harness, timeout): excluded, re-run on resume."""
    usage: Usage | None = None
    """Tokens, model calls and cost of a model-backed agent."""
    harness: HarnessRun | None = None
    """How an agent CLI ran (harness agents only)."""
    trace: list[TraceEntry] = Field(default_factory=list)
    """Every tool call, in order."""
    ledger: list[Effect] = Field(default_factory=list)
    """Every effect the world committed (ground truth), undone ones included."""

    @model_validator(mode="after")
    def _fill_test_id(self) -> EpisodeRecord:
        if not self.test_id:  # while it is validated, before it is frozen for its readers
            object.__setattr__(self, "test_id", make_test_id(self.episode_id, self, self.repeat))
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
        return self.error is None and bool(self.eos) and not self.overclaim

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


def record_line(record: EpisodeRecord) -> tuple[EpisodeRecord, str]:
    """The record and its JSON line, always one that reads back as this record.

    Nearly every record serialises directly (and is returned as it is). One holding text UTF-8
    cannot encode (a lone surrogate in an agent's summary or a harness's output) comes back
    with such characters escaped, rather than lost with its episode. Any secret the process
    knows (:mod:`limbo_plugin.scrubbing`) is replaced in both.
    """
    try:
        line = record.model_dump_json()
    except ValueError:  # pydantic's serialisation error
        data = _printable_tree(record.model_dump(mode="json", fallback=repr))
        record = EpisodeRecord.model_validate(data)
        line = record.model_dump_json()
    scrubber = current_scrubber()
    if scrubber.found_in(line):  # a key a gateway echoed, a CLI printed: never written
        record = EpisodeRecord.model_validate(scrubber.tree(json.loads(line)))
        line = record.model_dump_json()
    return record, line


def _printable_tree(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable_tree(key): _printable_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable_tree(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value
