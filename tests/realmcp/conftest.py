"""Fixtures of the real-server tests: server-memory with a store of its own, and the guard
configuration that gives it a read-back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from realkit import MEMORY_VERIFY, real_server


@pytest.fixture
def memory(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """server-memory's command and an environment that keeps its store in ``tmp_path`` (the
    test skips when the server is not installed)."""
    return [real_server("memory")], {**os.environ,
                                     "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}


@pytest.fixture
def memory_verify(tmp_path: Path) -> Path:
    """A guard configuration file holding server-memory's read-back (:data:`MEMORY_VERIFY`)."""
    config = tmp_path / "memory.yaml"
    config.write_text(MEMORY_VERIFY)
    return config


@pytest.fixture
def sqlite_db(tmp_path: Path) -> tuple[list[str], Path]:
    """mcp-server-sqlite's command on a database of its own in ``tmp_path``, and that file."""
    db = tmp_path / "data.sqlite"
    return [real_server("sqlite"), "--db-path", str(db)], db


@pytest.fixture
def files(tmp_path: Path) -> tuple[list[str], Path]:
    """server-filesystem's command on a directory of its own in ``tmp_path``, and that
    directory."""
    root = tmp_path / "files"
    root.mkdir()
    return [real_server("filesystem"), str(root)], root
