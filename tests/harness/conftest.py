"""Fixtures of the harness tests: the scripted model server, and adapter files on the fly."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from limbo_plugin.agents.harness_install import CACHE_ENV, cache_root
from limbo_plugin.testing.models import TextModel
from limbo_plugin.testing.openai_server import OpenAIServer

HERE = Path(__file__).resolve().parent
FAKE_CLI = HERE / "fake_cli.py"


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    """A scripted model server (set ``.model``); it speaks chat completions and Responses."""
    with OpenAIServer(TextModel()) as server:
        yield server


@pytest.fixture
def fake_harness(tmp_path: Path) -> Any:
    """Write an adapter running :mod:`fake_cli` in ``mode``; return its path."""

    def write(mode: str, **extra: Any) -> Path:
        spec = {
            "name": f"fake-{mode}",
            "model": "scripted",
            "files": [{"path": "{home}/mcp.json", "format": "json",
                       "content": {"command": "{mcp_command}", "args": "{mcp_args}",
                                   "env": "{mcp_env}"}}],
            "command": [sys.executable, str(FAKE_CLI), mode, "{home}/mcp.json", "{prompt}"],
            "usage": {"source": "stdout", "where": {"type": "usage"},
                      "prompt_tokens": "prompt", "completion_tokens": "completion"},
            "grace_s": 10,  # closing its MCP client can take seconds on a loaded machine
            **extra,
        }
        path = tmp_path / f"fake-{mode}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    return write


SPECS = HERE.parents[1] / "specs"
HARNESS_CACHE = str(cache_root())
"""Where the CLIs are installed, read before pytester points HOME at a temporary directory."""
SMALL = """\
name: small
templates: [incident_open, invoice_batch]
instances: [0]
focal_writes: [ticket, charge_1]
modes: [none, timeout_post, timeout_late]
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytest project holding a copy of the specs and a small experiment (and the harness
    cache of the real home)."""
    monkeypatch.setenv(CACHE_ENV, HARNESS_CACHE)
    shutil.copytree(SPECS, pytester.path / "specs")
    (pytester.path / "specs" / "experiments" / "small.yaml").write_text(SMALL)
    pytester.makeini("[pytest]\ntestpaths = specs\n"
                     "addopts = -p no:cacheprovider -p no:benchmark\n")
    return pytester
