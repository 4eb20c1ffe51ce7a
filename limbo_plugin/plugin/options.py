"""The plugin's command-line options, declared once: one :class:`Option` per flag.

``pytest_addoption`` registers the table, ``pytest --help`` shows it, :func:`option` reads a
value (command line, then ``pytest.ini``, then the default), and an agent option's validation
error names its flag from here. Run-configuration options (``--agent``, ``--contract``, …)
default in :class:`~limbo_plugin.runconfig.RunConfig`, agent options in
:class:`~limbo_plugin.agents.options.AgentOptions`; an ``Option.default`` is the plugin's own.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from limbo_plugin.errors import UsageError
from limbo_plugin.records import DEFAULT_RECORDS


@dataclass(frozen=True)
class Option:
    """One option: its flag, the value ``--help`` shows, its help, and where its value goes."""

    name: str
    """Its name in the code; pytest.ini spells it ``limbo_<name>`` (``limbo_…`` names as they
    are)."""
    flag: str
    metavar: str
    """What ``pytest --help`` shows as its value (argparse would show its dest)."""
    help: str
    default: str | None = None
    agent_field: str | None = None
    """The :class:`AgentOptions` field it sets, if it is an agent option."""
    kind: Literal["value", "repeatable", "switch"] = "value"
    """``value``: one value, also settable in pytest.ini; ``repeatable``: given any number of
    times (command line only); ``switch``: takes no value (pytest.ini: a bool)."""
    doc: str = ""
    """What the reference (``docs/reference/pytest-options.md``, generated from this table)
    says beyond ``help``, in Markdown: ``--help`` stays one line, the details are kept here."""

    @property
    def dest(self) -> str:
        """Where argparse keeps it (``config.getoption``)."""
        return f"limbo_opt_{self.name}" if self.kind == "value" else f"limbo_{self.name}"

    @property
    def ini(self) -> str | None:
        """Its pytest.ini name (``None``: command line only)."""
        if self.kind == "repeatable":
            return None
        return self.name if self.name.startswith("limbo_") else f"limbo_{self.name}"


OPTIONS: tuple[Option, ...] = (
    Option("agent", "--agent", "AGENT",
           "agent to evaluate: scripted:<policy>, mcp:<policy>, litellm:<model>, "
           "harness:<codex|copilot|hermes>:<model>, harness:command:<name|path>, "
           "python:<module>:<callable> (default scripted:verify_first)",
           doc=(
               "`scripted:<policy>`: a scripted reference policy, no model (`blind_retry`, "
               "`verify_first`, `same_key`, `escalate_first`, `no_retry`; `limbo list policies`). "
               "`mcp:<policy>`: a policy driven through the real stdio MCP server. "
               "`litellm:<model>`: the paper's minimal function-calling scaffold over any litellm "
               "model. `harness:<codex|copilot|hermes>:<model>`: a production agent CLI, once per "
               "episode. `harness:command:<name|path>`: your own MCP-capable CLI declared in YAML. "
               "`python:<module>:<callable>`: your own agent in Python. It replaces an "
               "experiment's agent list, in every arm.")),
    Option("contract", "--contract", "NAME", "contract variant: native or keys_everywhere",
           doc=(
               "`native`: only billing charges and Mastodon accept keys; `keys_everywhere`: every "
               "non-idempotent write accepts a key. A contract only offers keys; whether they are "
               "sent is the agent's: of the scripted agents only `same_key` sends them (the "
               "default `verify_first`, `blind_retry`, `escalate_first` and `no_retry` never do, "
               "so `keys_everywhere` changes nothing for them), the `guard` condition adds them "
               "below any agent, and a model sends them when it chooses to.")),
    Option("docs", "--docs", "NAME",
           "documentation variant: default, no_consistency_docs, explicit, explicit_keyed",
           doc=(
               "`default`, `no_consistency_docs`, `explicit` (every non-idempotent write says it "
               "is not idempotent, as in the paper's E4), `explicit_keyed` (as `explicit`, but a "
               "write that accepts a key is told to retry with the same key instead).")),
    Option("instruction", "--instruction", "NAME", "instruction variant: default or no_cue",
           doc=(
               "`default`, or `no_cue`: the task without \"Make sure each action happens exactly "
               "once.\"")),
    Option("condition", "--condition", "NAME",
           "recovery condition: vanilla, aware, reflect, guard, sdk_retry, wait_<seconds>, … "
           "(limbo list conditions)",
           doc=(
               "`vanilla`, `aware`, `reflect`, `paraphrase_1` … `paraphrase_3` (the system prompt "
               "reworded, E4), `sdk_retry`, `rules`, `vbr`, `wait_<seconds>`, `guard`, "
               "`guard-no-key`, `guard-no-consistency`, `guard-no-block`, `guard-no-annotate`, "
               "`guard-no-promise`, `state_oracle`, `outcome_oracle`.\n\n"
               "`guard` is the guard the "
               "paper evaluated (§6.5): its note on an ambiguous write says the outcome is unknown "
               "and that the harness will verify before sending any identical retry. "
               "`guard-no-promise` is the same guard whose note states the same uncertainty "
               "without that promise — and differs in nothing else, so the contrast measures the "
               "promise (the paper's §7 recommends stating uncertainty without claiming to resolve "
               "it; the paper did not measure it).")),
    Option("operator", "--operator", "NAME", "operator variant: truthful or unresponsive",
           doc=(
               "`truthful` or `unresponsive`: what `escalate_to_human` gets.")),
    Option("experiment", "--experiment", "NAME",
           "experiment spec under specs/experiments/ (default: default)", default="default",
           doc=(
               "The paper's study is `e1` … `e6`, `e2k` and `e3k`; `default` and `smoke` are "
               "small. `--agent`, `--condition`, `--contract`, `--docs`, `--instruction` and "
               "`--operator` replace the experiment's own lists.")),
    Option("limbo_records", "--limbo-records", "PATH",
           f"JSONL file of episode records (default {DEFAULT_RECORDS})",
           default=DEFAULT_RECORDS,
           doc=(
               "A relative path is taken from the project's rootdir (where `reports/` is), "
               "whichever directory pytest runs in; the run's last line names the file it wrote. "
               "Give a path outside the project with `=` (`--limbo-records=/data/run1.jsonl`): "
               "pytest chooses its rootdir before any plugin is loaded, so a path after a space is "
               "taken for a test path once the file exists; Limbo refuses the space form for such "
               "a path with a one-line error asking for the `=` spelling.")),
    Option("limbo_gate", "--limbo-gate", "PATH",
           "gate spec (e.g. specs/gates/release.yaml): its verdict decides the exit status",
           doc=(
               "With a gate, each check is a test result and the run's exit status is the gate's "
               "verdict (0 passed, 1 failed; 10 on infrastructure errors whatever it said).")),
    Option("limbo_baseline", "--limbo-baseline", "PATH|previous",
           "records of a previous run to compare with (exact McNemar on paired episodes); "
           "'previous': the records this run replaces",
           doc=(
               "Without a gate the run prints the comparison (`limbo compare`) after the family "
               "table; with one, the gate also judges it (exact McNemar on the episodes both runs "
               "share, Holm across families). `previous` is the records file this run replaces, "
               "read before it moves to `history/`: not a CI baseline (on a fresh runner there is "
               "none, exit 4).")),
    Option("limbo_specs", "--limbo-specs", "DIR",
           "the specs directory; given, its experiments alone are collected (default: "
           "<rootdir>/specs, else the specs installed with Limbo)",
           doc=(
               "Which specs a run uses: `--limbo-specs=DIR` (or `limbo_specs`) alone decides; else "
               "the project's own `specs/` (next to its pytest configuration); else, once a Limbo "
               "option such as `--experiment` is given, the specs installed with Limbo. `limbo "
               "init [DIR]` copies those into `DIR/specs` to edit them.")),
    Option("limbo_cassette", "--limbo-cassette", "DIR",
           "directory recording/replaying model responses", agent_field="cassette",
           doc=(
               "Model responses are recorded there, so a run can be replayed offline "
               "byte-identically (`--limbo-cassette-mode replay`), e.g. to re-grade in CI without "
               "a key. API keys are never written: a cassette stores only an allow-list of options "
               "that change the model's output.")),
    Option("limbo_cassette_mode", "--limbo-cassette-mode", "MODE",
           "record, replay or auto (default auto)", agent_field="cassette_mode",
           doc=(
               "`record`: call the model and store each answer; `replay`: answer from the cassette "
               "only (no preflight request); `auto`: replay what is recorded, call the model for "
               "the rest.")),
    Option("limbo_cost_limit", "--limbo-cost-limit", "USD",
           "stop starting episodes once this many USD of model cost are recorded",
           doc=(
               "A model-backed run prints its plan before the first episode — per model agent the "
               "episodes, model calls, tokens and estimated cost (`limbo plan`'s estimate) — and "
               "this budget, or that it has none.")),
    Option("limbo_provider_retries", "--limbo-provider-retries", "N",
           "attempts per model call on provider errors (default 8)",
           agent_field="provider_retries",
           doc=(
               "Provider errors (rate limits, 5xx, timeouts) are retried with exponential backoff, "
               "honouring `Retry-After`; an episode that still fails is an infrastructure error, "
               "excluded from the statistics and re-run by `--limbo-resume`.")),
    Option("limbo_provider_backoff", "--limbo-provider-backoff", "SECONDS",
           "base of the exponential backoff in seconds (default 1.0)",
           agent_field="provider_backoff_s",
           doc=(
               "Each retry waits twice as long as the one before, starting from this base, unless "
               "the provider's `Retry-After` says how long.")),
    Option("limbo_preflight", "--limbo-preflight", "MODE",
           "on (default): before the first episode, send one real one-token request to each "
           "model endpoint the run will call, and stop (exit 10) if one does not answer; off",
           doc=(
               "`on`: one real one-token request to each model endpoint the run will call (a "
               "harness's gateway, with its key and wire), through litellm as the episodes will; a "
               "refused key or an absent gateway stops the run with one line and exit 10. `off`: "
               "no request (a cassette in `replay` mode never sends one).")),
    Option("limbo_max_errors", "--limbo-max-errors", "N",
           "stop the run after N consecutive infrastructure errors (default 5; 0: never); "
           "finished episodes stay recorded and --limbo-resume continues",
           doc=(
               "The stop names the last cause and exits 10; every cause is listed after the family "
               "table, grouped. Under pytest-xdist each worker stops itself after that many in a "
               "row.")),
    Option("limbo_step_summary", "--limbo-step-summary", "MODE",
           "on (default): when $GITHUB_STEP_SUMMARY is set (GitHub Actions), append the gate's "
           "verdict and the family table to it as Markdown; off",
           doc=(
               "Appended: the gate's verdict with each check, the infrastructure errors by cause "
               "and the family table.")),
    Option("limbo_episode_timeout", "--limbo-episode-timeout", "SECONDS",
           "wall-clock limit of one episode in seconds, any agent (default 1800; 0: none); "
           "exceeding it is an infrastructure error",
           doc=(
               "No agent's catch-all can swallow it: a watchdog raises the timeout again until the "
               "agent gives up, and one that never does is abandoned after a grace period.")),
    Option("limbo_shard", "--limbo-shard", "K/N",
           "run shard K of N (K from 0) of the collected episodes: every world's episodes on "
           "one shard, balanced by expected cost; env:VAR/N reads K from $VAR (e.g. "
           "env:JOB_COMPLETION_INDEX/4)",
           doc=(
               "`limbo merge` joins the shards' record files; see [Shard a study over "
               "machines](../how-to/shard.md).")),
    Option("limbo_sample", "--limbo-sample", "N",
           "a pilot: run N worlds (every configuration of each) of what -k/-m selected, "
           "stratified over fault families and templates; N:SEED for another sample",
           doc=(
               "Stratified over fault families (equal shares) and, within a family, templates; "
               "every configuration of each world runs, so comparisons stay paired. Deterministic: "
               "`N:SEED` draws another sample. `limbo plan --sample N` prices it first.")),
    Option("limbo_progress", "--limbo-progress", "SECONDS|off",
           "seconds between live progress lines (default 10 on a terminal, 60 in a log; 0: "
           "after every episode; off: none)",
           doc=(
               "A plain line between pytest's dots (no carriage returns or colours), also under "
               "`-n`: episodes done, elapsed time and ETA, the running duplicate rate of each "
               "family, cost against `--limbo-cost-limit`, infrastructure errors. Nothing under "
               "`-q`.")),
    Option("limbo_repeat", "--limbo-repeat", "K",
           "run each episode K times on its same world (ids of the repeats end in -rep1, -rep2, "
           "…); the summary shows pass^k",
           doc=(
               "Worlds depend on the episode, not the repeat, so comparisons stay paired. The "
               "first repeat keeps the plain id, so a repeated run resumes from a single one. "
               "pass^k is tau2-bench's: per episode run `n` times with `c` passes, "
               "`C(c, k) / C(n, k)`, averaged over the episodes.")),
    Option("model_options", "--model-option", "KEY=VALUE",
           "option passed to the model (temperature=0, api_base=…); repeatable",
           agent_field="model_options", kind="repeatable",
           doc=(
               "`timeout=…` bounds each model call (default 300 s); `wire=responses` sends the "
               "conversation over the OpenAI Responses API; `api_key_env=NAME` names a harness "
               "gateway's key variable. Options that would change what is measured or counted "
               "(`mock_response`, `num_retries`, `stream`, the cost-per-token overrides, …) are "
               "refused with a line naming them.")),
    Option("resume", "--limbo-resume", "",
           "skip episodes already recorded with the same configuration", kind="switch",
           doc=(
               "A run killed by Ctrl-C, SIGTERM or even `kill -9` keeps every finished episode; "
               "resuming runs exactly the rest, and refuses a records file of another "
               "configuration, or one whose episodes were made with other specs or model "
               "options (`<records>.fingerprint.json`, kept beside the file, names what "
               "changed). An episode that started and left no record is named at the end of "
               "the run, and resuming runs it again.")),
)
"""Every option of the plugin, in the order ``--help`` lists them."""

VALUED = tuple(o for o in OPTIONS if o.kind == "value")
"""The options that take one value (command line or pytest.ini)."""
BY_NAME = {o.name: o for o in OPTIONS}
BY_AGENT_FIELD = {o.agent_field: o for o in OPTIONS if o.agent_field is not None}


def add_options(parser: pytest.Parser) -> None:
    """Register the table with pytest (``pytest_addoption``)."""
    group = parser.getgroup("limbo", "Limbo: duplicate side effects of tool-using agents")
    for opt in OPTIONS:
        if opt.kind == "value":
            group.addoption(opt.flag, dest=opt.dest, default=None, help=opt.help,
                            metavar=opt.metavar)
            parser.addini(opt.ini or opt.name, opt.help, default=None)
        elif opt.kind == "repeatable":
            group.addoption(opt.flag, dest=opt.dest, action="append", default=[],
                            metavar=opt.metavar, help=opt.help)
        else:
            group.addoption(opt.flag, dest=opt.dest, action="store_true", default=False,
                            help=opt.help)
    resume = BY_NAME["resume"]
    parser.addini(resume.ini or resume.name, "resume by default", type="bool", default=False)


def option(config: pytest.Config, name: str) -> str | None:
    """A valued option: the command line, then pytest.ini (``limbo_<name>``), then the
    built-in default."""
    opt = BY_NAME[name]
    value: str | None = config.getoption(opt.dest, default=None)
    if value is None:
        value = ini_value(config, opt.ini or opt.name) or None
    if value is None:
        value = opt.default
    return value


def ini_value(config: pytest.Config, name: str) -> Any:
    """``config.getini(name)``; a value of the wrong type (``limbo_resume = maybe``, a TOML
    number where pytest takes text) is one usage line naming it, not an INTERNALERROR."""
    try:
        return config.getini(name)
    except (ValueError, TypeError) as exc:
        where = str(config.inipath or "the configuration file")
        text = " ".join(str(exc).split()).removeprefix(f"{where}: ")
        hint = ('text: quote it in TOML (name = "value")' if "expects a string" in text
                else "true or false")
        raise pytest.UsageError(f"{where}: {name}: {text}; it takes {hint}") from None


def flag_of_agent_field(field: str) -> str:
    """The flag that sets an :class:`AgentOptions` field (for its error message)."""
    opt = BY_AGENT_FIELD.get(field)
    return opt.flag if opt is not None else field


PATH_OPTIONS = tuple(o.flag for o in OPTIONS if o.metavar.split("|")[0] in ("PATH", "DIR"))
"""The options whose value is a path (``--limbo-records``, ``--limbo-specs``, …)."""


def check_rootdir(config: pytest.Config) -> None:
    """pytest chooses its rootdir (and so its ini file and ``testpaths``) before any plugin is
    loaded, from the positional paths it sees: in ``--limbo-records /data/run.jsonl`` the value
    is one once the file exists, and the next run would start from ``/data`` and collect
    whatever lies there. No plugin can register its options before that, so a path option
    whose value lies outside the project after a space is refused on every run, the first
    (file not written yet) included, with the spelling that works (``--limbo-records=…``)."""
    if config.getoption("rootdir", None) or config.getoption("inifilename", None):
        return  # the user chose the rootdir or the ini file; nothing was guessed
    invocation = Path(config.invocation_params.dir)
    args = [str(arg) for arg in config.invocation_params.args]
    for flag, value in itertools.pairwise(args):
        if flag not in PATH_OPTIONS:
            continue
        path = invocation / value
        existing = next(p for p in (path, *path.parents) if p.exists())
        if _config_dir(existing if existing.is_dir() else existing.parent) != \
                _config_dir(invocation):
            raise UsageError(f"{flag} {value}: after a space pytest takes {value} for a test "
                             "path once it exists and starts the run from its directory (it "
                             f"reads paths before Limbo's options are known); write "
                             f"{flag}={value}")


CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "setup.py")


def _config_dir(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a file pytest may take for its
    configuration: where a rootdir search from ``start`` ends. A path option's value and the
    working directory that end in different places would give different rootdirs."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / name).is_file() for name in CONFIG_FILES):
            return directory
    return None
