"""What made a records file's episodes, kept beside it so a resume cannot mix two studies.

Every episode's own record names its world and configuration, which a resume matches; what it
does not name is the content of the specs behind them (a template or fault mode edited between
two runs makes other worlds under the same ids) and the ``--model-option`` values. A run that
starts a records file writes ``<records>.fingerprint.json`` beside it: a hash of each spec file
(by its path under the specs directory; a package's spec YAML, :mod:`limbo_plugin.spec.layers`,
by its module and path) and of each model option's value (names in clear,
values hashed: an option may be a key). ``--limbo-resume`` compares it with its own and refuses
a mismatch in one line naming what changed. A file without one (written before fingerprints)
is resumed as it is, and gets one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from limbo_plugin.atomic_files import write_text_atomically
from limbo_plugin.spec.layers import spec_layers

SUFFIX = ".fingerprint.json"


def fingerprint_path(records: Path) -> Path:
    """``reports/episodes.jsonl`` → ``reports/episodes.fingerprint.json``."""
    return records.with_name(records.stem + SUFFIX)


def run_fingerprint(specs_dir: Path, model_options: Mapping[str, Any]) -> dict[str, Any]:
    """The hashes of everything under ``specs_dir`` that episodes are made from, and of the
    model options."""
    specs = _hashes(specs_dir)
    for layer in spec_layers():  # a package's spec YAML, by its module: ``<module>/tasks/…``
        specs |= {f"{layer.module}/{name}": digest
                  for name, digest in _hashes(layer.root).items()}
    options = {name: _digest(json.dumps(value, sort_keys=True, default=str).encode())
               for name, value in sorted(model_options.items())}
    return {"specs": specs, "model_options": options}


def _hashes(root: Path) -> dict[str, str]:
    return {file.relative_to(root).as_posix(): _digest(file.read_bytes())
            for file in sorted(root.rglob("*.yaml")) if file.is_file()}


def changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints, in words (at most a few of each kind)."""
    said: list[str] = []
    for kind, what in (("specs", "specs/{} "), ("model_options", "--model-option {} ")):
        old, new = dict(recorded.get(kind) or {}), dict(current.get(kind) or {})
        for name in sorted(set(old) | set(new)):
            if name not in new:
                said.append(what.format(name) + ("is gone" if kind == "specs"
                                                 else "was given then, not now"))
            elif name not in old:
                said.append(what.format(name) + "is new")
            elif old[name] != new[name]:
                said.append(what.format(name) + "changed")
    return said


def check_or_write(records: Path, current: dict[str, Any], *, resume: bool) -> str | None:
    """On a resume, what changed since the file's episodes were made (None: nothing, or a file
    from before fingerprints); otherwise, or then, the fingerprint is written beside it."""
    path = fingerprint_path(records)
    if resume and path.is_file():
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            recorded = None
        if isinstance(recorded, dict):
            differ = changes(recorded, current)
            if differ:
                shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more"
                                                 if len(differ) > 4 else "")
                return shown
    write_text_atomically(path, json.dumps(current, indent=1, sort_keys=True) + "\n")
    return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
