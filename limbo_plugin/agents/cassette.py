"""Record and replay model responses, so a model-backed run can be re-run offline.

A cassette is a directory. Each entry is one model response, stored as
``<cassette>/<key[:2]>/<key>.json`` where ``key`` is the SHA-256 of the canonical JSON of
everything that determines the answer: the model string, the full message list, the tools and
the output-affecting ``model_options`` — an allow-list (:data:`OUTPUT_OPTIONS`: temperature,
seed, reasoning effort, …); everything else (``api_base``, ``api_key``, ``timeout``,
``extra_headers``, a provider's own credential option) is left out, so a cassette recorded
through one gateway replays through another. Cassettes are made to be committed and shared, so
an entry is scrubbed of every secret Limbo knows (:mod:`limbo_plugin.scrubbing`) before it is
written — a model or gateway that echoes a key leaves ``[secret NAME]`` in its place — and the
episode that recorded it is given the scrubbed answer too, so record and replay see the same.

Why one file per entry: pytest-xdist workers record concurrently, and a file per entry needs no
shared append position. An entry is written to a temporary file in the same directory and
published with ``os.replace``, which is atomic on POSIX and Windows, so a reader sees either no
entry or a complete one. The check-then-publish step runs under an exclusive ``fcntl.flock`` on
``<cassette>/.lock`` (a process-local lock where ``fcntl`` is missing), which makes the rule
below race-free between workers; the model call itself happens outside the lock.

The rule: an entry, once written *in this run*, is what every episode uses for that request —
a worker that loses the race discards its own response and adopts the stored one. Episodes of
the same template share a conversation prefix until their faults diverge, so with a sampling
model two episodes could otherwise get different answers to one request, and the cassette could
not reproduce both. With the rule, what each episode saw is exactly what replay returns.

Modes:

- ``replay``: only read; a missing entry raises :class:`InfrastructureError` naming its key.
  No network, and litellm is not even imported.
- ``auto``: use an entry if it exists, else call the model and store the answer.
- ``record``: call the model for every request not yet recorded in this run, replacing entries
  left by earlier runs. "This run" is pytest-xdist's test-run id when present (shared by all
  workers), else the current process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.agents.provider import OUTPUT_OPTIONS, ChatProvider, ModelTurn
from limbo_plugin.atomic_files import write_text_atomically
from limbo_plugin.scrubbing import current

if TYPE_CHECKING:
    from limbo_plugin.agents.options import CassetteMode

try:  # POSIX; on Windows the lock only covers threads of one process
    import fcntl
except ImportError:  # pragma: no cover - platform dependent
    fcntl = None  # type: ignore[assignment]

ENTRY_VERSION = 1
_PROCESS_RUN_ID = uuid.uuid4().hex
_THREAD_LOCK = threading.Lock()


class CassetteMiss(InfrastructureError):
    """Replay found no entry for a request: only recording it can help, not a re-run."""


def current_run_id() -> str:
    """Shared by all workers of one pytest-xdist run; else unique to this process."""
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or _PROCESS_RUN_ID


def output_options(model_options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``model_options`` that can change the model's answer (part of the cassette key, and
    all of them a cassette stores): an allow-list, so no credential is ever written."""
    return {k: v for k, v in sorted(model_options.items()) if k in OUTPUT_OPTIONS}


def request_key(model: str, messages: Sequence[Mapping[str, Any]],
                tools: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> str:
    payload = {"model": model, "messages": list(messages), "tools": list(tools),
               "options": output_options(options)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Cassette:
    """A cassette directory (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], mode: CassetteMode = "auto", *,
                 run_id: str | None = None) -> None:
        self.path = Path(path)
        self.mode = mode
        self.run_id = run_id or current_run_id()

    def entry_path(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self.entry_path(key), encoding="utf-8") as handle:
                entry: dict[str, Any] | None = json.load(handle)
                return entry
        except FileNotFoundError:
            return None
        except ValueError as exc:  # never written by us: entries appear atomically
            raise InfrastructureError(f"cassette entry {self.entry_path(key)} is corrupt: "
                                      f"{exc}") from exc

    def lookup(self, key: str) -> ModelTurn | None:
        """The stored turn this mode may use for ``key``, or ``None`` (call the model)."""
        entry = self.load(key)
        if entry is None:
            if self.mode == "replay":
                raise CassetteMiss(
                    f"cassette {self.path} has no recorded answer for this model call "
                    f"({key[:12]}…): it was never recorded, or the conversation differs from "
                    "the recorded one (another model, prompt, option or Limbo version). Record "
                    "it by running the same selection with --limbo-cassette-mode auto and the "
                    "model reachable; --limbo-resume alone cannot replay it")
            return None
        if self.mode == "record" and entry.get("run_id") != self.run_id:
            return None  # left by an earlier run: re-record
        return ModelTurn.from_json(entry["response"])

    def publish(self, key: str, turn: ModelTurn, request: Mapping[str, Any]) -> ModelTurn:
        """Store ``turn``, scrubbed, unless this run already stored ``key``; return the turn
        to use (the stored one)."""
        scrubber = current()
        if scrubber:
            turn = ModelTurn.from_json(scrubber.tree(turn.to_json()))
            request = scrubber.tree(dict(request))
        target = self.entry_path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            existing = self.load(key)
            if existing is not None and (self.mode != "record"
                                         or existing.get("run_id") == self.run_id):
                return ModelTurn.from_json(existing["response"])
            entry = {"version": ENTRY_VERSION, "key": key, "run_id": self.run_id,
                     "recorded_at": time.time(), "request": dict(request),
                     "response": turn.to_json()}
            _write_atomically(target, entry)
        return turn

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        with _THREAD_LOCK:
            if fcntl is None:  # pragma: no cover
                yield
                return
            with open(self.path / ".lock", "a+b") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _write_atomically(target: Path, entry: Mapping[str, Any]) -> None:
    write_text_atomically(target, json.dumps(entry, ensure_ascii=False, sort_keys=True, indent=1))


class CassetteProvider(ChatProvider):
    """Puts a :class:`Cassette` in front of a live provider created only when first needed
    (so that replay never imports litellm)."""

    def __init__(self, cassette: Cassette, model: str, model_options: Mapping[str, Any],
                 live: Any) -> None:
        self.cassette = cassette
        self.model = model
        self.model_options = dict(model_options)
        self._live_factory = live
        self._live: ChatProvider | None = None

    def complete(self, messages: Sequence[Mapping[str, Any]],
                 tools: Sequence[Mapping[str, Any]]) -> ModelTurn:
        key = request_key(self.model, messages, tools, self.model_options)
        stored = self.cassette.lookup(key)
        if stored is not None:
            return stored
        if self._live is None:
            self._live = self._live_factory()
        turn = self._live.complete(messages, tools)
        summary = {"model": self.model, "options": output_options(self.model_options),
                   "messages": len(messages), "last_message": messages[-1] if messages else None}
        return self.cassette.publish(key, turn, summary)
