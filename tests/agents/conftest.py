"""Fixtures for the model-backed agent tests: a local OpenAI-compatible server per test.

Every test talks to the scaffold through real litellm calls over HTTP to
:class:`~limbo_plugin.testing.openai_server.OpenAIServer`, so the whole client stack (request
building, response parsing, error mapping) is exercised without a network or a key. Helpers for
running episodes against it are in ``scaffoldkit.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from limbo_plugin.testing.models import TextModel
from limbo_plugin.testing.openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running server (a fresh one per test, so recorded requests never leak between tests);
    set ``openai_server.model`` to the scripted model the test needs."""
    with OpenAIServer(TextModel()) as server:
        yield server
