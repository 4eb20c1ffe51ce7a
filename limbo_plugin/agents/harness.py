"""The harness runner: any agent CLI, described by a :class:`HarnessSpec`, as an :class:`Agent`.

``--agent harness:<name>:<model>`` (the built-in ``codex``, ``copilot``, ``hermes``) and
``--agent harness:command:<name or path>`` (your own MCP-capable CLI) both end up here. Per
episode the runner

1. exposes the episode's session through the sandbox service under a fresh token — so the
   recovery condition, the trace, the call budget and the fault transport apply exactly as for
   an in-process agent, and ``--condition guard`` works for every harness with no extra code;
2. creates an empty working directory and a throwaway home (no memory or session carries over;
   only ``{cache}``, a per-harness package cache, is shared);
3. writes the adapter's config files, with ``limbo mcp`` as the CLI's only MCP server and the
   model reached through the configured OpenAI-compatible gateway;
4. runs the CLI non-interactively with the paper's harness preamble before the task, under a
   wall-clock limit, and stops it shortly after the episode has ended (``finish`` or the call
   budget) if it lingers;
5. keeps its transcript under the run's reports directory and adds up its token usage.

Whether the run counts is judged from the sandbox's call log, never from the CLI's exit code
(none of the three built-in CLIs exits non-zero when its MCP tools silently fail to load): a CLI
that never listed the tools, ran out of time, or was killed before the episode ended is an
:class:`InfrastructureError` — excluded from the statistics and re-run on ``--limbo-resume`` —
not a graded agent failure. So is an unfinished episode whose transcript shows the CLI gave up
on its model gateway (the adapter's ``model_errors``), as a provider error is in the scaffold.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbo_plugin.agents.base import AgentSession, InfrastructureError
from limbo_plugin.agents.harness_catalog import model_entry
from limbo_plugin.agents.harness_install import (
    harness_environment,
    resolve_executable,
    shared_cache,
    version_of,
)
from limbo_plugin.agents.harness_spec import (
    FileSpec,
    HarnessSpec,
    LineMatch,
    SourceSpec,
    render,
    render_command,
)
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.prompts import HARNESS_PREAMBLE, harness_prompt
from limbo_plugin.bridge import BRIDGE_DIR
from limbo_plugin.errors import UsageError
from limbo_plugin.processes import kill_group, stop
from limbo_plugin.records import HarnessRun
from limbo_plugin.scrubbing import Scrubber, current, learn, scrub
from limbo_plugin.server.launch import episode_launch, mcp_http_server
from limbo_plugin.server.sandbox_http import EpisodeLease, SandboxServer, shared_sandbox
from limbo_plugin.server.wire import SERVER_NAME

LOCAL_API_KEY = "limbo-local"
"""Sent when no key is configured: local gateways (and the scripted model server) ignore it."""
STOP_WAIT_S = 5.0
POLL_S = 0.05
WATCH_S = 1.0
"""How often the CLI's output is checked for its own report that the gateway failed."""


@dataclass
class Execution:
    """What happened to the CLI process."""

    exit_code: int | None
    wall_s: float
    timed_out: bool = False
    stopped_after_end: bool = False
    gave_up: str | None = None
    """Why the CLI was stopped while running: it kept reporting that its gateway failed."""


class HarnessAgent:
    """Runs ``spec``'s CLI with ``model`` for each episode (see the module docstring).

    Options (from the plugin): ``model_options`` — ``api_base`` (required: the gateway),
    ``api_key`` or ``api_key_env`` (the variable holding it; default ``OPENAI_API_KEY``),
    ``timeout_s`` (overrides the adapter's limit) — and ``reports_dir`` (default ``reports``).
    """

    def __init__(self, spec: HarnessSpec, model: str, options: AgentOptions | None = None,
                 *, name: str | None = None, sandbox: SandboxServer | None = None) -> None:
        options = options or AgentOptions()
        model_options = dict(options.model_options)
        self.spec = spec
        self.model = model
        self.name = name or f"harness:{spec.name}:{model}"
        api_base = model_options.get("api_base") or model_options.get("base_url")
        if not api_base:
            raise UsageError(f"{self.name}: harnesses reach their model through an "
                             "OpenAI-compatible gateway; pass --model-option api_base=URL")
        self.api_base = str(api_base).rstrip("/")
        self.api_key = _api_key(model_options)
        learn(_given_secrets(spec, self.api_key))  # kept out of transcripts and records
        self.timeout_s = float(model_options.get("timeout_s") or spec.timeout_s)
        self.reports_dir = Path(options.reports_dir or "reports")
        self.executable = resolve_executable(spec)
        # Before the first episode: a CLI's first run may unpack itself into {cache}.
        self.version = version_of(spec, self.executable)
        # The harness's own per-model metadata (its system prompt), read from the harness.
        self.model_entry = model_entry(spec, self.executable, model)
        self._sandbox = sandbox

    def run(self, session: AgentSession) -> None:
        sandbox = self._sandbox or shared_sandbox()
        with sandbox.episode(session) as lease, \
                tempfile.TemporaryDirectory(prefix=f"limbo-{self.spec.name}-") as tmp:
            root = Path(tmp)
            home, workdir = root / "home", root / "work"
            home.mkdir()
            workdir.mkdir()
            with self._mcp_values(lease) as mcp:
                values = self._values(session, home, workdir, mcp)
                for file in self.spec.files:
                    _write(file, values)
                argv = render_command(self.spec.command, values)
                def watch() -> str | None:
                    return _model_error(self.spec, session, root, home)

                execution = _execute(argv, workdir, harness_environment(self.spec, values), root,
                                     self.timeout_s, self.spec.grace_s, session, watch)
            _add_usage(session, self.spec, root, home)
            transcript = self._keep_transcript(session, root, home, token=lease.token)
            session.harness = HarnessRun(
                name=self.spec.name,
                version=self.version,
                wall_s=round(execution.wall_s, 3), exit_code=execution.exit_code,
                timed_out=execution.timed_out, stopped_after_end=execution.stopped_after_end,
                tool_listings=lease.listings, tool_calls=lease.calls, transcript=transcript)
            problem = execution.gave_up or _infrastructure_problem(
                lease, execution, session, self.timeout_s, self.spec)
            if problem is None or problem.startswith(EXITED):  # say why it exited, if it did
                problem = _model_error(self.spec, session, root, home) or problem
            if problem is not None and problem.startswith(GATEWAY_FAILED):
                problem = problem.replace(GATEWAY_FAILED,
                                          f"the model gateway {self.api_base} failed", 1)
            stderr_tail = _tail(root / "stderr", lease.token)
        if lease.failure is not None:
            raise lease.failure
        if problem is not None:
            raise InfrastructureError(f"{self.spec.name}: {problem}"
                                      + (f" (stderr: {stderr_tail})" if stderr_tail else ""))

    # -- per-episode values ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _mcp_values(self, lease: EpisodeLease) -> Iterator[dict[str, Any]]:
        if self.spec.mcp_transport == "streamable-http":
            with mcp_http_server(lease.url, lease.token) as url:
                yield {"mcp_url": url, "mcp_token": lease.token}
            return
        launch = episode_launch(lease.url, lease.token)
        yield {"mcp_command": launch.command, "mcp_args": list(launch.args),
               "mcp_env": dict(launch.env)}

    def _values(self, session: AgentSession, home: Path, workdir: Path,
                mcp: Mapping[str, Any]) -> dict[str, Any]:
        tool_name = self.spec.tool_name.replace("{server}", SERVER_NAME)
        return {
            "executable": self.executable, "home": str(home), "workdir": str(workdir),
            "spec_dir": str(Path(self.spec.file).resolve().parent) if self.spec.file else "",
            "cache": str(shared_cache(self.spec)), "prompt": harness_prompt(session.instruction),
            "preamble": HARNESS_PREAMBLE, "task": session.instruction, "model": self.model,
            "api_base": self.api_base, "api_key": self.api_key, "server": SERVER_NAME,
            "tools": [tool_name.replace("{tool}", t.name) for t in session.shared_tools],
            "timeout_s": str(int(self.timeout_s)), "model_entry": self.model_entry,
            "limbo_bridge": str(BRIDGE_DIR), **mcp,
        }

    def _keep_transcript(self, session: AgentSession, root: Path, home: Path, *,
                         token: str = "") -> str | None:
        """Copy the transcript sources under ``<reports>/transcripts/``, with the episode's
        ``token`` and every known secret scrubbed from every kept file; return the directory."""
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)
        episode = session.episode_id or "episode"
        target = self.reports_dir / "transcripts" / episode / f"{slug}-{uuid.uuid4().hex[:8]}"
        kept = 0
        sources = list(self.spec.transcript)
        if not any(source.source == "stderr" for source in sources):
            sources.append(SourceSpec(source="stderr"))  # why a CLI failed is always kept
        for number, source in enumerate(sources):
            for path in _source_files(source.source, root, home):
                name = f"{number:02d}-{path.name}"
                target.mkdir(parents=True, exist_ok=True)
                if source.query:
                    _export_sqlite(path, source.query, target / f"{name}.jsonl")
                else:
                    shutil.copyfile(path, target / name)
                kept += 1
        if kept:
            scrubber = _scrubber(token)
            for path in target.iterdir():
                scrubber.file(path)
        return str(target) if kept else None


# -- running the CLI -------------------------------------------------------------------------
def _execute(argv: list[str], workdir: Path, env: Mapping[str, str], root: Path,
             timeout_s: float, grace_s: float, session: AgentSession,
             watch: Callable[[], str | None] | None = None) -> Execution:
    """Run ``argv`` in its own process group; stop it on the time limit, ``grace_s`` after
    the episode has ended, or as soon as ``watch`` finds in its output that it has given up on
    its model gateway (a CLI that keeps reconnecting would otherwise wait out the limit)."""
    start = time.monotonic()
    watched = start
    with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err:
        try:
            process = subprocess.Popen(argv, cwd=workdir, env=dict(env),
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True)
        except OSError as exc:
            raise InfrastructureError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        execution = Execution(exit_code=None, wall_s=0.0)
        ended_at: float | None = None
        try:
            while True:
                try:
                    execution.exit_code = process.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if session.over and ended_at is None:
                    ended_at = now
                if ended_at is not None and now - ended_at > grace_s:
                    execution.stopped_after_end = True
                    execution.exit_code = stop(process, grace_s=STOP_WAIT_S, group=True)
                    break
                if now - start > timeout_s:
                    execution.timed_out = True
                    execution.exit_code = stop(process, grace_s=STOP_WAIT_S, group=True)
                    break
                if watch is not None and ended_at is None and now - watched >= WATCH_S:
                    watched = now
                    out.flush()
                    err.flush()
                    execution.gave_up = watch()
                    if execution.gave_up is not None:
                        execution.exit_code = stop(process, grace_s=STOP_WAIT_S, group=True)
                        break
        finally:
            execution.wall_s = time.monotonic() - start
            kill_group(process.pid)  # whatever it left behind (its MCP server, helpers)
            stop(process, grace_s=0)
    return execution


def _infrastructure_problem(lease: EpisodeLease, execution: Execution, session: AgentSession,
                            timeout_s: float, spec: HarnessSpec) -> str | None:
    """Why this run cannot be graded, judged from the sandbox's log and, for a CLI that exits
    with an error before the episode ended, its exit status (unless the adapter says such an
    exit is the agent's own)."""
    if execution.timed_out:
        return (f"did not finish within the wall-clock limit of {timeout_s:g} s "
                f"({lease.calls} tool calls made)")
    if lease.listings == 0:
        return (f"its tools never loaded: the sandbox saw no tools/list request "
                f"(the CLI exited with {execution.exit_code})")
    if (execution.exit_code is not None and execution.exit_code < 0
            and not execution.stopped_after_end and not session.over):
        return f"the CLI was killed by signal {-execution.exit_code} before the task ended"
    if (execution.exit_code is not None and execution.exit_code > 0 and not session.over
            and spec.nonzero_exit == "infrastructure"):
        return (f"{EXITED} {execution.exit_code} before the task ended "
                f"({lease.calls} tool calls made)")
    return None


GATEWAY_FAILED = "the model gateway failed"
EXITED = "the CLI exited with status"


def _model_error(spec: HarnessSpec, session: AgentSession, root: Path, home: Path
                 ) -> str | None:
    """The CLI's own report that its model gateway failed (``times`` matching lines of one of
    the adapter's ``model_errors``), if the episode had not finished."""
    if session.end_reason == "finished":
        return None
    for error in spec.model_errors:
        seen = _matching_lines(error, root, home)
        if len(seen) >= error.times:
            return f"{GATEWAY_FAILED}: {scrub(seen[-1])[:300]}"
    return None


def _matching_lines(match: LineMatch, root: Path, home: Path) -> list[str]:
    """The lines of ``match.source`` that ``match`` selects (JSON lines re-serialised)."""
    seen: list[str] = []
    for path in _source_files(match.source, root, home):
        if match.contains is not None:
            with open(path, encoding="utf-8", errors="replace") as handle:
                seen += [x.strip() for x in handle if match.contains in x]
            continue
        seen += [json.dumps(event) for event in _json_lines(path)
                 if all(_dig(event, k) == v for k, v in match.where.items())]
    return seen


# -- files, usage, transcripts ---------------------------------------------------------------
def _write(file: FileSpec, values: Mapping[str, Any]) -> None:
    path = Path(str(render(file.path, values)))
    path.parent.mkdir(parents=True, exist_ok=True)
    content = render(file.content, values)
    if file.format == "json":
        text = json.dumps(content, indent=1, ensure_ascii=False)
    elif file.format == "toml":
        import tomli_w

        text = tomli_w.dumps(content)
    elif file.format == "yaml":
        import yaml

        text = yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
    else:
        text = "" if content is None else str(content)
    path.write_text(text, encoding="utf-8")


def _source_files(source: str, root: Path, home: Path) -> list[Path]:
    if source in ("stdout", "stderr"):
        path = root / source
        return [path] if path.is_file() and path.stat().st_size else []
    return sorted(p for p in home.glob(source) if p.is_file())


def _add_usage(session: AgentSession, spec: HarnessSpec, root: Path, home: Path) -> None:
    usage_spec = spec.usage
    if usage_spec is None:
        return
    prompt = completion = calls = cached = 0
    for path in _source_files(usage_spec.source, root, home):
        if usage_spec.format == "sqlite":
            assert usage_spec.query is not None
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                try:
                    rows = db.execute(usage_spec.query).fetchall()
                except sqlite3.Error:
                    continue
            for row in rows:
                prompt += int(row[0] or 0)
                completion += int(row[1] or 0)
                calls += int(row[2] or 0) if len(row) > 2 else 0
                cached += int(row[3] or 0) if len(row) > 3 else 0
            continue
        for event in _json_lines(path):
            if all(_dig(event, k) == v for k, v in usage_spec.where.items()):
                prompt += int(_dig(event, usage_spec.prompt_tokens or "") or 0)
                completion += int(_dig(event, usage_spec.completion_tokens or "") or 0)
                if usage_spec.cached_tokens:
                    cached += int(_dig(event, usage_spec.cached_tokens) or 0)
                calls += 1
    if usage_spec.requests is not None:  # the usage events are per turn: count the requests
        calls = len(_matching_lines(usage_spec.requests, root, home))
    session.usage.prompt_tokens += prompt
    session.usage.completion_tokens += completion
    session.usage.cached_prompt_tokens += cached
    session.usage.model_calls += calls
    session.usage.unpriced_calls += calls  # a CLI reports tokens, never what they cost


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _dig(value: Any, dotted: str) -> Any:
    for part in dotted.split(".") if dotted else []:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _export_sqlite(path: Path, query: str, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            cursor = db.execute(query)
        except sqlite3.Error as exc:
            target.write_text(json.dumps({"error": f"cannot export {path.name}: {exc}"}) + "\n")
            return
        columns = [d[0] for d in cursor.description or []]
        with open(target, "w", encoding="utf-8") as out:
            for row in cursor:
                out.write(json.dumps(dict(zip(columns, row, strict=True)), default=str,
                                     ensure_ascii=False) + "\n")


def _scrubber(token: str) -> Scrubber:
    """Every secret this process knows, and the episode's token (in all their forms)."""
    return current().adding({token: "episode token"}) if token else current()


def _given_secrets(spec: HarnessSpec, api_key: str) -> dict[str, str]:
    """The harness's gateway key and the values of the variables its adapter passes on."""
    given = {os.environ[name]: name for name in spec.passenv if os.environ.get(name)}
    if api_key != LOCAL_API_KEY:
        given[api_key] = f"{spec.name} api_key"
    return given


def _tail(path: Path, token: str = "", limit: int = 400) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    text = _scrubber(token).text(text)  # before the cut, which could halve a key
    text = " / ".join(line.strip() for line in text.strip().splitlines()[-4:] if line.strip())
    return text if len(text) <= limit else "…" + text[-limit:]


def _api_key(model_options: Mapping[str, Any]) -> str:
    key = model_options.get("api_key")
    if key:
        return str(key)
    variable = str(model_options.get("api_key_env") or "OPENAI_API_KEY")
    return os.environ.get(variable) or LOCAL_API_KEY
