"""Measured usage for ``limbo plan --cassette``: per-episode model calls and tokens from a run
the user already made, instead of the paper's figures.

Recordings that hold usage, all accepted:

- a **records file** (``--limbo-records``, JSONL): every model-backed episode carries its
  ``usage`` (model calls, prompt and completion tokens). This is the measurement ``plan`` wants:
  per agent and per fault mode, the mean over the episodes that finished without an
  infrastructure error. A pilot run (``-k``, a few templates) is enough; fault modes it did not
  cover take the agent's mean over the modes it did;
- a folder of records files (searched recursively, ``history/`` left out), such as the
  ``records/`` folder of a ``limbo reproduce --small`` pilot;
- a **cassette directory** (``--limbo-cassette``): one entry per model response, with its
  tokens but not the episode it served (episodes of one template share entries), so it gives
  tokens per model call, per model; calls per episode then stay the paper's figure.

Why per fault mode: a fault lengthens the conversation (a read-back, a retry, an escalation), so
a pilot run on late commits alone would overstate a design that is half fault-free episodes.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from limbo_plugin.agents.registry import harness_of, model_of
from limbo_plugin.errors import UsageError

ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json")


@dataclass(frozen=True)
class PerEpisode:
    """Mean usage of one episode (or, from a cassette, of one model call)."""

    model_calls: float
    prompt_tokens: float
    completion_tokens: float

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens


def mean(samples: Sequence[PerEpisode]) -> PerEpisode:
    n = len(samples)
    return PerEpisode(sum(s.model_calls for s in samples) / n,
                      sum(s.prompt_tokens for s in samples) / n,
                      sum(s.completion_tokens for s in samples) / n)


@dataclass(frozen=True)
class Estimate:
    """Planned usage of one agent's episodes, and where the figures came from."""

    model_calls: float
    prompt_tokens: float
    completion_tokens: float
    source: str


class RecordedUsage:
    """Usage measured in a records file: per agent, per fault mode."""

    def __init__(self, path: str, samples: Mapping[str, Mapping[str, Sequence[PerEpisode]]]
                 ) -> None:
        self.path = path
        self.samples = samples

    def estimate(self, agent: str, modes: Sequence[str]) -> Estimate | None:
        """Usage of ``agent``'s planned episodes (one fault mode each), or ``None`` when nothing
        measured fits: the same agent, else any measured agent of the same harness."""
        if agent in self.samples:
            by_mode, measured_on = self.samples[agent], agent
        else:
            same = sorted(a for a in self.samples if harness_of(a) == harness_of(agent))
            if not same:
                return None
            pooled: dict[str, list[PerEpisode]] = defaultdict(list)
            for other in same:
                for mode, samples in self.samples[other].items():
                    pooled[mode].extend(samples)
            by_mode, measured_on = pooled, ", ".join(same)
        overall = mean([s for samples in by_mode.values() for s in samples])
        per_mode = {mode: mean(samples) for mode, samples in by_mode.items()}
        planned = [per_mode.get(mode, overall) for mode in modes]
        covered = len({m for m in modes if m in per_mode})
        episodes = sum(len(s) for s in by_mode.values())
        source = (f"measured: {episodes} episode(s) of {measured_on} in {self.path}, "
                  f"{covered} of {len(set(modes))} fault mode(s) covered")
        return Estimate(sum(p.model_calls for p in planned),
                        sum(p.prompt_tokens for p in planned),
                        sum(p.completion_tokens for p in planned), source)


class CassetteUsage:
    """Tokens per model call measured in a cassette directory, per model."""

    def __init__(self, path: str, per_call: Mapping[str, Sequence[PerEpisode]]) -> None:
        self.path = path
        self.per_call = per_call

    def estimate(self, agent: str, episodes: int, calls_per_episode: float) -> Estimate | None:
        """Only the scaffold (``litellm:``) goes through a cassette; harness CLIs call their
        gateway themselves."""
        if not agent.startswith("litellm:"):
            return None
        model = model_of(agent)
        samples = self.per_call.get(model)
        measured_on = model
        if samples is None:
            samples = [s for calls in self.per_call.values() for s in calls]
            measured_on = ", ".join(sorted(self.per_call))
        per = mean(samples)
        calls = calls_per_episode * episodes
        return Estimate(calls, per.prompt_tokens * calls, per.completion_tokens * calls,
                        f"tokens per call measured: {len(samples)} call(s) of {measured_on} in "
                        f"{self.path}; {calls_per_episode} calls per episode from the paper")


def load_usage(path_text: str) -> RecordedUsage | CassetteUsage:
    """A records file or a cassette directory, or a one-line :class:`UsageError` naming it."""
    path = Path(path_text)
    if path.is_dir() and not cassette_entries(path):
        files = sorted(p for p in path.rglob("*.jsonl") if "history" not in p.parts)
        if files:  # a folder of records files, as `limbo reproduce --small` leaves them
            return _load_records(files, path_text)
    if path.is_dir():
        return _load_cassette(path, path_text)
    if not path.exists():
        raise UsageError(f"--cassette {path_text}: no such file or directory; give a records "
                         "file (--limbo-records) or a cassette directory (--limbo-cassette) of "
                         "a run of a model-backed agent")
    return _load_records(path, path_text)


def _load_records(paths: Path | Sequence[Path], shown: str) -> RecordedUsage:
    from limbo_plugin.store.read import RecordFileError, read_records

    try:
        records = [r for p in ([paths] if isinstance(paths, Path) else paths)
                   for r in read_records(p)]
    except RecordFileError as exc:
        raise UsageError(f"--cassette {exc}; give a records file (--limbo-records) or a "
                         "cassette directory (--limbo-cassette)") from None
    samples: dict[str, dict[str, list[PerEpisode]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        usage = record.usage
        if record.error is not None or usage is None or usage.model_calls <= 0:
            continue
        samples[record.agent][record.fault_mode].append(
            PerEpisode(usage.model_calls, usage.prompt_tokens, usage.completion_tokens))
    if not samples:
        agents = sorted({r.agent for r in records})
        seen = f" (it holds {len(records)} record(s) of {', '.join(agents)})" if agents else \
            " (it holds no record)"
        raise UsageError(f"--cassette {shown}: no finished episode with model usage{seen}; "
                         "scripted and MCP agents make no model call: record a pilot run of a "
                         "litellm: or harness: agent with --limbo-records")
    return RecordedUsage(shown, samples)


def _load_cassette(path: Path, shown: str) -> CassetteUsage:
    per_call: dict[str, list[PerEpisode]] = defaultdict(list)
    for entry_path in cassette_entries(path):
        model, turn = _read_entry(entry_path)
        per_call[model].append(PerEpisode(1.0, turn[0], turn[1]))
    if not per_call:
        raise UsageError(f"--cassette {shown}: a directory without cassette entries "
                         "(<key[:2]>/<key>.json); give a cassette directory a run wrote with "
                         "--limbo-cassette, or its records file")
    return CassetteUsage(shown, per_call)


def cassette_entries(path: Path) -> list[Path]:
    """``<key[:2]>/<key>.json`` with ``key`` a SHA-256 in hex: only what a cassette writes (a
    records folder's ``<experiment>/<agent>.summary.json`` is not an entry)."""
    return sorted(p for p in path.glob("*/*.json")
                  if ENTRY_NAME.fullmatch(p.name) and p.parent.name == p.name[:2])


def _read_entry(path: Path) -> tuple[str, tuple[int, int]]:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        response = entry["response"]
        model = str(entry["request"]["model"])
        tokens = (int(response["prompt_tokens"]), int(response["completion_tokens"]))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc).split("\n")[0]
        raise UsageError(f"--cassette {path}: not a cassette entry ({what}); a cassette entry "
                         "holds request.model and response.prompt_tokens/completion_tokens"
                         ) from None
    if min(tokens) < 0:
        raise UsageError(f"--cassette {path}: negative token count {min(tokens)}")
    return model, tokens
