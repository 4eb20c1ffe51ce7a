"""Helpers of the harness-path tests: run code inside a real episode, and talk HTTP to the
sandbox service the way ``limbo mcp`` does."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
LATE = EpisodeKey(template="release_announcement", instance=0, focal_write="email",
                  fault_mode="timeout_late")


class Probe:
    """An agent that runs ``body(session)`` and keeps what it returns: a real episode (world,
    fault, condition, trace) with the test in the agent's seat."""

    name = "probe"

    def __init__(self, body: Callable[[AgentSession], Any]) -> None:
        self.body = body
        self.result: Any = None

    def run(self, session: AgentSession) -> None:
        self.result = self.body(session)


def in_episode(body: Callable[[AgentSession], Any], key: EpisodeKey = LOST_ACK,
               config: RunConfig | None = None) -> tuple[Any, EpisodeRecord]:
    probe = Probe(body)
    record = run_episode(key, config or RunConfig(), agent=probe, registry=REGISTRY)
    return probe.result, record


def request(url: str, method: str, path: str, *, token: str | None = None,
            body: Any = None, raw: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """One request on a fresh connection; the JSON body of the answer (every answer has one)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def http_client(url: str, token: str, read_timeout_seconds: float = 60) -> Any:
    """An SDK :class:`mcp.Client` for ``limbo mcp``'s streamable-HTTP endpoint, sending the
    episode's token as ``Authorization: Bearer`` (the endpoint refuses requests without it)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http),
                  read_timeout_seconds=read_timeout_seconds)
