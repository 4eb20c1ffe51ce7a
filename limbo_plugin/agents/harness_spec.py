"""Harness adapters as data: the model of ``specs/harnesses/<name>.yaml`` and its templating.

A production agent CLI is driven by configuration, not code: which files to write into a
throwaway home, which environment to set, which command line to run, how long to wait, and where
it leaves its transcript and token counts. Keeping that in YAML means a new CLI version, or a
user's own MCP-capable agent (``--agent harness:command:<name>``), is a file, not a patch; one
runner (:mod:`limbo_plugin.agents.harness`) executes any of them.

Strings in ``env``, ``files``, ``command`` and the transcript/usage sources may contain
placeholders, filled per episode (``{{`` and ``}}`` stand for literal braces). A string that is
exactly one placeholder takes the placeholder's value whole, so ``"{mcp_args}"`` becomes a list
and ``"{mcp_env}"`` a mapping inside a config file, and ``"{tools}"`` in a command line is
spliced in as several arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from limbo_plugin.errors import SpecError
from limbo_plugin.spec.loader import LoadedYaml, format_path, load_yaml, validate

PLACEHOLDERS: dict[str, str] = {
    "executable": "the harness CLI (installed by `limbo harness install`, or found on PATH)",
    "spec_dir": "the directory of this YAML file (for scripts kept beside it)",
    "home": "the episode's throwaway home directory (HOME)",
    "workdir": "the episode's empty working directory",
    "cache": "a per-harness cache directory shared by episodes (package unpacking and such)",
    "prompt": "the harness preamble (paper A.2) followed by the task",
    "preamble": "the harness preamble alone",
    "task": "the task instruction alone",
    "model": "the model name",
    "api_base": "the OpenAI-compatible model gateway (--model-option api_base=…)",
    "api_key": "the gateway key (--model-option api_key=…, or the variable api_key_env names)",
    "server": "the MCP server's name (acme)",
    "mcp_command": "the program that starts the stdio MCP server",
    "mcp_args": "its arguments (a list)",
    "mcp_env": "the environment it needs (a mapping; carries the episode's token)",
    "mcp_url": "the MCP server's streamable-HTTP URL (mcp_transport: streamable-http)",
    "mcp_token": "the episode's token, which every request to {mcp_url} must carry as "
                 "`Authorization: Bearer {mcp_token}` (in env: or a config file, never argv)",
    "tools": "the harness's names for the episode's tools (a list, from tool_name)",
    "timeout_s": "the wall-clock limit in seconds",
    "limbo_bridge": "the directory of `limbo_bridge`, the standard-library glue a "
                    "framework-built agent imports (put it on PYTHONPATH)",
    "model_entry": "the harness's own catalog entry for the model, with the adapter's "
                   "overrides, or the adapter's fallback for a model it does not know "
                   "(model_catalog)",
}
STDIO_ONLY = frozenset({"mcp_command", "mcp_args", "mcp_env"})
MAPPINGS = frozenset({"mcp_env", "model_entry"})
"""Placeholders whose value is a mapping: they belong in files and env, never in argv."""
SECRETS = frozenset({"mcp_token"})
"""Placeholders whose value is the episode's token: ``ps`` shows argv to every local user."""
HTTP_ONLY = frozenset({"mcp_url", "mcp_token"})
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class InstallSpec(_Strict):
    """Where the pinned CLI comes from: an npm package or a pip requirement, in its own
    directory under the harness cache (``<cache>/<name>/<version>``)."""

    npm: str | None = None
    """The npm package to install (give this or ``pip``)."""
    pip: str | None = None
    """The pip requirement to install into the harness's own virtual environment (give this or
    ``npm``)."""
    version: str = Field(min_length=1)
    """The pinned version (``limbo harness install`` installs exactly it)."""
    executable: str = Field(min_length=1)
    """The program the install provides, run as ``{executable}``: its name in the install's
    bin directory, not a path."""
    python: str | None = None
    """For pip: the interpreter to build the venv with (default: the one running Limbo)."""
    requirements: str | None = None
    """For pip: a requirements file, relative to the adapter's directory, installed with the
    package into the same venv (an agent built with a framework pins the framework's companions
    there); its content is part of the install's identity, so editing it installs anew."""

    @field_validator("executable")
    @classmethod
    def _a_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError(f"{value!r} is not a program name: executable names the program in "
                             "the install's own bin directory (letters, digits, '.', '_', '-'), "
                             "not a path")
        return value

    @field_validator("requirements")
    @classmethod
    def _plain_path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or Path(value).is_absolute()):
            raise ValueError("requirements is a file name relative to the adapter's directory")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> InstallSpec:
        if (self.npm is None) == (self.pip is None):
            raise ValueError("give exactly one of npm (a package) or pip (a requirement)")
        if self.npm is not None and self.requirements is not None:
            raise ValueError("requirements is a pip requirements file: it needs pip, not npm")
        return self

    @property
    def package(self) -> str:
        """``name@version`` (npm) or ``requirement==version`` (pip)."""
        if self.npm is not None:
            return f"{self.npm}@{self.version}"
        return f"{self.pip}=={self.version}"


FILE_ROOTS = ("{home}/", "{workdir}/")
"""Where an adapter may write a file: inside the episode's own temporary directories."""


class FileSpec(_Strict):
    """A file written before the run; ``content`` is rendered as ``format``."""

    path: str
    """Where the file is written, with placeholders (``{home}/.codex/config.toml``)."""
    format: Literal["json", "toml", "yaml", "text"] = "text"
    """How ``content`` is written: ``json``, ``toml``, ``yaml`` or ``text``."""
    content: Any = None
    """What it holds, rendered as ``format`` after its placeholders are filled."""

    @field_validator("path")
    @classmethod
    def _inside_the_episode(cls, value: str) -> str:
        """A harness's files go in the episode's temporary home or working directory, which are
        removed after it: an adapter (a file anyone may share) must not write elsewhere on the
        machine that runs it."""
        if not value.startswith(FILE_ROOTS) or ".." in Path(value).parts:
            raise ValueError(f"{value!r} is outside the episode's directories: a file path "
                             f"starts with {' or '.join(FILE_ROOTS)} and has no '..'")
        return value


class SourceSpec(_Strict):
    """A transcript source: ``stdout``, ``stderr``, or a glob under the home directory; for a
    SQLite file, ``query`` exports its rows as JSON lines."""

    source: str
    """``stdout``, ``stderr``, or a glob under ``{home}``."""
    query: str | None = None
    """For a SQLite file: the query whose rows are kept as JSON lines."""


class LineMatch(_Strict):
    """Lines of a CLI's output that mean something: a JSON line matching ``where`` (dotted
    paths), or a line containing ``contains``, in ``source``."""

    source: str = "stdout"
    """Where to look: ``stdout``, ``stderr``, or a file under ``{home}``."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Dotted paths and the values a JSON line must have there."""
    contains: str | None = None
    """A text the line must contain (instead of ``where``)."""

    @model_validator(mode="after")
    def _one_test(self) -> LineMatch:
        if bool(self.where) == bool(self.contains):
            raise ValueError("give exactly one of where (a JSON-line match) or contains (text)")
        return self


class UsageSpec(_Strict):
    """Where token counts are: JSON lines (sum ``prompt_tokens``/``completion_tokens`` and
    ``cached_tokens``, dotted paths, over events matching ``where``) or a SQLite query returning
    ``(prompt, completion, model calls[, cached prompt tokens])``."""

    source: str
    """Where the usage is: ``stdout``, ``stderr``, or a file under ``{home}``."""
    format: Literal["jsonl", "sqlite"] = "jsonl"
    """``jsonl`` (JSON lines) or ``sqlite`` (a database file and a ``query``)."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Dotted paths and values that select the usage events among the JSON lines."""
    prompt_tokens: str | None = None
    """The dotted path of an event's prompt tokens."""
    completion_tokens: str | None = None
    """The dotted path of an event's completion tokens."""
    cached_tokens: str | None = None
    """The part of the prompt tokens the provider served from its prompt cache."""
    requests: LineMatch | None = None
    """Lines that each mark one request to the model, for a CLI whose usage events cover a
    whole turn of several requests (Codex); without it each usage event is one model call."""
    query: str | None = None
    """For ``sqlite``: a query returning ``(prompt, completion, model calls[, cached prompt
    tokens])``."""

    @model_validator(mode="after")
    def _complete(self) -> UsageSpec:
        if self.format == "sqlite" and not self.query:
            raise ValueError("a sqlite usage source needs a query")
        if self.format == "jsonl" and not (self.prompt_tokens and self.completion_tokens):
            raise ValueError("a jsonl usage source needs prompt_tokens and completion_tokens")
        return self


class ErrorSpec(LineMatch):
    """How the CLI reports that its model gateway failed for good."""

    times: int = Field(default=1, ge=1, le=1000)
    """How many such lines mean the CLI has given up (a CLI that retries reports each try).
    The output is watched while the CLI runs, so one that keeps reconnecting is stopped then,
    not at the wall-clock limit."""


class ModelCatalogSpec(_Strict):
    """Where the harness keeps its own per-model metadata (its system prompt among it):
    ``command`` prints it as JSON, ``entries`` is the dotted path of the list of entries and
    ``key`` the field naming the model. A model the harness knows gets its own entry with
    ``overrides`` applied (which tools it may be offered); any other model gets ``fallback``
    (``{model}`` filled in). See :mod:`limbo_plugin.agents.harness_catalog`."""

    command: list[str] = Field(min_length=1)
    """The command printing the harness's model catalog as JSON."""
    entries: str = "models"
    """The dotted path of the list of entries in it."""
    key: str = "slug"
    """The field of an entry naming its model."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """What is changed in a known model's entry (which tools it may be offered)."""
    fallback: dict[str, Any]
    """The entry given to a model the harness does not know (``{model}`` filled in)."""


class HarnessSpec(_Strict):
    """One harness adapter (``specs/harnesses/<name>.yaml``)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    """The adapter's name, as in ``harness:<name>:<model>`` or ``harness:command:<name>``."""
    description: str = ""
    """What the agent CLI is (shown by ``limbo harness list``)."""
    install: InstallSpec | None = None
    """How ``limbo harness install`` installs the pinned CLI; without it the command must be on
    PATH."""
    version_command: list[str] | None = Field(default=None, min_length=1)
    """A command printing the CLI's version, recorded with each episode."""
    wire: Literal["chat", "responses"] = "chat"
    """What the harness speaks to its model (informational: the gateway must speak it)."""
    model: str | None = None
    """Default model for ``harness:command:<name>`` (else ``--model-option model=…``)."""
    mcp_transport: Literal["stdio", "streamable-http"] = "stdio"
    """How the CLI reaches the episode's tools: ``stdio`` (``{mcp_command}``, ``{mcp_args}``,
    ``{mcp_env}``) or ``streamable-http`` (``{mcp_url}``, and ``{mcp_token}``, sent as a bearer
    token)."""
    tool_name: str = "{tool}"
    """How the harness names an MCP tool to its model, from ``{server}`` and ``{tool}``."""
    env: dict[str, str] = Field(default_factory=dict)
    """The CLI's environment, with placeholders (``{api_key}``, ``{api_base}``, ``{mcp_token}``,
    …)."""
    passenv: list[str] = Field(default_factory=list)
    """Variables of Limbo's own environment passed through (besides PATH, locale, proxies)."""
    files: list[FileSpec] = Field(default_factory=list)
    """Files written before each episode (the CLI's configuration)."""
    command: list[str] = Field(min_length=1)
    """The command line run once per episode, with placeholders (``{prompt}``, ``{model}``,
    ``{mcp_url}``, …)."""
    timeout_s: float = Field(default=600.0, gt=0, le=86_400)
    """The CLI's wall-clock limit per episode; running over it is an infrastructure error."""
    grace_s: float = Field(default=15.0, ge=0, le=3600)
    """After the episode ends (finish, or the call budget), how long the CLI may take to exit
    before it is stopped."""
    nonzero_exit: Literal["infrastructure", "graded"] = "infrastructure"
    """What a non-zero exit before the episode ended (``finish`` or the call budget) means:
    by default the CLI failed (its gateway was down, say), an infrastructure error re-run on
    resume; ``graded`` for a CLI whose non-zero exit is the agent's own decision to stop."""
    transcript: list[SourceSpec] = Field(default_factory=lambda: [SourceSpec(source="stdout")])
    """Where the CLI's transcript is, kept under ``reports/transcripts/``."""
    usage: UsageSpec | None = None
    """Where the CLI reports its token counts."""
    model_catalog: ModelCatalogSpec | None = None
    """The harness's own model catalog, read from the harness, for ``{model_entry}``."""
    model_errors: list[ErrorSpec] = Field(default_factory=list)
    """Signs that the model gateway failed (after the CLI's own retries): such an episode,
    unless it had already finished, is an infrastructure error, like a provider error in the
    scaffold."""
    _file: str = PrivateAttr(default="")

    @field_validator("env")
    @classmethod
    def _variable_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name (letters, "
                                 "digits and _, not starting with a digit)")
        return value

    @field_validator("tool_name")
    @classmethod
    def _tool_named(cls, value: str) -> str:
        if "{tool}" not in value:
            raise ValueError("tool_name must contain {tool}")
        return value

    @property
    def file(self) -> str:
        """The YAML file this adapter was loaded from."""
        return self._file

    def uses(self, placeholder: str) -> bool:
        """Whether the environment, files or command lines mention ``{placeholder}``."""
        parts = (self.env, [f.model_dump() for f in self.files], self.command,
                 self.version_command or [])
        return any(placeholder in placeholders_in(text) for part in parts
                   for _, text in _strings(part, ()))


def load_harness(path: str | Path) -> HarnessSpec:
    """Load and check one adapter; any problem is one :class:`SpecError` with file:line."""
    doc = load_yaml(path)
    spec = validate(doc, HarnessSpec)
    stem = Path(path).name.rsplit(".", 1)[0]
    if Path(path).parent.name == "harnesses" and spec.name != stem:
        # There ``harness:<name>:…`` finds the adapter by its file name, and its records and
        # install carry the name inside: the two must be one (a copy elsewhere may differ).
        raise SpecError(doc.file, f"{spec.name!r} is not the file's name ({Path(path).name}), "
                        f"by which harness:{stem}:<model> finds it: rename the file to "
                        f"{spec.name}.yaml or the harness to {stem!r}",
                        line=doc.line_of(("name",)), path="name")
    _check_placeholders(doc, spec)
    requirements = spec.install.requirements if spec.install is not None else None
    if requirements is not None and not (Path(path).parent / requirements).is_file():
        raise SpecError(doc.file, f"requirements file {requirements!r} is not "
                        f"beside the adapter (looked in {Path(path).parent})",
                        line=doc.line_of(("install", "requirements")),
                        path="install.requirements")
    spec._file = str(path)
    return spec


def _check_placeholders(doc: LoadedYaml, spec: HarnessSpec) -> None:
    allowed = set(PLACEHOLDERS)
    allowed -= HTTP_ONLY if spec.mcp_transport == "stdio" else STDIO_ONLY
    for path, text in _strings(doc.data, ()):
        if path and path[0] in ("description", "tool_name", "name", "install"):
            continue
        if path[:2] in (("model_catalog", "overrides"), ("model_catalog", "fallback")) and (
                set(placeholders_in(text)) <= {"model"}):
            continue
        for name in placeholders_in(text):
            if name == "model_entry" and spec.model_catalog is None:
                raise SpecError(doc.file, "{model_entry} needs a model_catalog section (where "
                                "the harness keeps its own per-model metadata)",
                                line=doc.line_of(path), path=format_path(path))
            if name in MAPPINGS and _in_argv(path):
                raise SpecError(doc.file, f"{{{name}}} is a mapping (it carries the episode's "
                                "token) and cannot be a command-line argument; put it in a "
                                "config file or pass its variables through env:",
                                line=doc.line_of(path), path=format_path(path))
            if name in SECRETS and _in_argv(path):
                raise SpecError(doc.file, f"{{{name}}} is the episode's token and cannot be a "
                                "command-line argument (ps shows it to every local user); "
                                "pass it through env: or a config file",
                                line=doc.line_of(path), path=format_path(path))
            if name not in allowed:
                hint = ""
                if name in PLACEHOLDERS:
                    hint = f" (not with mcp_transport: {spec.mcp_transport})"
                raise SpecError(doc.file, f"unknown placeholder {{{name}}}{hint}; valid: "
                                + ", ".join(sorted(allowed)),
                                line=doc.line_of(path), path=format_path(path))


def _in_argv(path: tuple[str | int, ...]) -> bool:
    """Whether ``path`` is inside a command line (the run, version or catalog command)."""
    return bool(path) and (path[0] in ("command", "version_command")
                           or path[:2] == ("model_catalog", "command"))


def _strings(value: Any, path: tuple[str | int, ...]) -> Any:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def placeholders_in(text: str) -> list[str]:
    return [m.group(1) for m in _PLACEHOLDER.finditer(text) if m.group(1)]


def render(value: Any, values: Mapping[str, Any]) -> Any:
    """``value`` with placeholders filled (recursively through lists and mappings)."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1):
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: _text(m, values), value)
    if isinstance(value, Mapping):
        return {render(k, values): render(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, values) for v in value]
    return value


def render_command(command: list[str], values: Mapping[str, Any]) -> list[str]:
    """The command line: list-valued placeholders standing alone are spliced in."""
    argv: list[str] = []
    for part in command:
        rendered = render(part, values)
        if isinstance(rendered, list):
            argv.extend(str(item) for item in rendered)
        else:
            argv.append(str(rendered))
    return argv


def _text(match: re.Match[str], values: Mapping[str, Any]) -> str:
    token = match.group(0)
    if token == "{{":
        return "{"
    if token == "}}":
        return "}"
    value = values[match.group(1)]
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)
