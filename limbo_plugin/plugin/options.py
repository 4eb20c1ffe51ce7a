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
           "python:<module>:<callable> (default scripted:verify_first)"),
    Option("contract", "--contract", "NAME", "contract variant: native or keys_everywhere"),
    Option("docs", "--docs", "NAME",
           "documentation variant: default, no_consistency_docs, explicit"),
    Option("instruction", "--instruction", "NAME", "instruction variant: default or no_cue"),
    Option("condition", "--condition", "NAME",
           "recovery condition: vanilla, aware, reflect, guard, sdk_retry, wait_<seconds>, … "
           "(limbo list conditions)"),
    Option("operator", "--operator", "NAME", "operator variant: truthful or unresponsive"),
    Option("experiment", "--experiment", "NAME",
           "experiment spec under specs/experiments/ (default: default)", default="default"),
    Option("limbo_records", "--limbo-records", "PATH",
           f"JSONL file of episode records (default {DEFAULT_RECORDS})",
           default=DEFAULT_RECORDS),
    Option("limbo_gate", "--limbo-gate", "PATH",
           "gate spec (e.g. specs/gates/release.yaml): its verdict decides the exit status"),
    Option("limbo_baseline", "--limbo-baseline", "PATH|previous",
           "records of a previous run to compare with (exact McNemar on paired episodes); "
           "'previous': the records this run replaces"),
    Option("limbo_specs", "--limbo-specs", "DIR",
           "the specs directory; given, its experiments alone are collected (default: "
           "<rootdir>/specs, else the specs installed with Limbo)"),
    Option("limbo_cassette", "--limbo-cassette", "DIR",
           "directory recording/replaying model responses", agent_field="cassette"),
    Option("limbo_cassette_mode", "--limbo-cassette-mode", "MODE",
           "record, replay or auto (default auto)", agent_field="cassette_mode"),
    Option("limbo_cost_limit", "--limbo-cost-limit", "USD",
           "stop starting episodes once this many USD of model cost are recorded"),
    Option("limbo_provider_retries", "--limbo-provider-retries", "N",
           "attempts per model call on provider errors (default 8)",
           agent_field="provider_retries"),
    Option("limbo_provider_backoff", "--limbo-provider-backoff", "SECONDS",
           "base of the exponential backoff in seconds (default 1.0)",
           agent_field="provider_backoff_s"),
    Option("limbo_preflight", "--limbo-preflight", "MODE",
           "on (default): before the first episode, send one real one-token request to each "
           "model endpoint the run will call, and stop (exit 10) if one does not answer; off"),
    Option("limbo_max_errors", "--limbo-max-errors", "N",
           "stop the run after N consecutive infrastructure errors (default 5; 0: never); "
           "finished episodes stay recorded and --limbo-resume continues"),
    Option("limbo_step_summary", "--limbo-step-summary", "MODE",
           "on (default): when $GITHUB_STEP_SUMMARY is set (GitHub Actions), append the gate's "
           "verdict and the family table to it as Markdown; off"),
    Option("limbo_episode_timeout", "--limbo-episode-timeout", "SECONDS",
           "wall-clock limit of one episode in seconds, any agent (default 1800; 0: none); "
           "exceeding it is an infrastructure error"),
    Option("limbo_shard", "--limbo-shard", "K/N",
           "run shard K of N (K from 0) of the collected episodes: every world's episodes on "
           "one shard, balanced by expected cost; env:VAR/N reads K from $VAR (e.g. "
           "env:JOB_COMPLETION_INDEX/4)"),
    Option("limbo_sample", "--limbo-sample", "N",
           "a pilot: run N worlds (every configuration of each) of what -k/-m selected, "
           "stratified over fault families and templates; N:SEED for another sample"),
    Option("limbo_progress", "--limbo-progress", "SECONDS|off",
           "seconds between live progress lines (default 10 on a terminal, 60 in a log; 0: "
           "after every episode; off: none)"),
    Option("limbo_repeat", "--limbo-repeat", "K",
           "run each episode K times on its same world (ids of the repeats end in -rep1, -rep2, "
           "…); the summary shows pass^k"),
    Option("model_options", "--model-option", "KEY=VALUE",
           "option passed to the model (temperature=0, api_base=…); repeatable",
           agent_field="model_options", kind="repeatable"),
    Option("resume", "--limbo-resume", "",
           "skip episodes already recorded with the same configuration", kind="switch"),
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
