"""The run's preflight: one cheap real request per distinct model endpoint, before the first
episode.

Without it a refused key or a gateway that is not there is found episode by episode: every
litellm episode retries with backoff for minutes, and a run of hundreds ends in hundreds of
identical errors. The request is a real one-token completion sent through litellm exactly as an
episode sends its calls (:func:`limbo_plugin.agents.provider.probe`), so whatever credential
source litellm would use — an environment variable, ``~/.aws``, a local Ollama, a gateway's key
— is what is checked. A harness agent's endpoint is the OpenAI-compatible gateway it reaches its
model through, asked with the harness's key over the harness's wire; the CLI itself is not
started here (``limbo harness install`` and the readiness check found it installed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.scrubbing import learn_options, scrub

if TYPE_CHECKING:
    from limbo_plugin.agents.harness_spec import HarnessSpec
    from limbo_plugin.agents.registry import AgentPlan

HARNESS_LOCAL_KEY = "limbo-local"
"""The key a harness is given when none is set (the harness agent's own default)."""


@dataclass(frozen=True)
class Endpoint:
    """Where one preflight request goes: the litellm ``model``, the options that reach it
    (``api_base``, credentials; as sorted JSON), the wire, and the agent it stands for."""

    agent: str
    model: str
    options: str
    wire: str = "chat"

    @classmethod
    def of(cls, agent: str, model: str, options: Mapping[str, Any], wire: str = "chat"
           ) -> Endpoint:
        return cls(agent, model, json.dumps(dict(options), sort_keys=True, default=str), wire)

    def model_options(self) -> dict[str, Any]:
        options: dict[str, Any] = json.loads(self.options)
        return options

    @property
    def address(self) -> str:
        """The gateway the request went to, or the provider's own endpoint."""
        options = self.model_options()
        base = options.get("api_base") or options.get("base_url")
        if base:
            return str(base)
        provider = self.model.split("/", 1)[0] if "/" in self.model else "its provider"
        return f"{provider}'s default endpoint"

    def key(self) -> tuple[str, str, str]:
        """Endpoints that send the same request are asked once."""
        return self.model, self.options, self.wire


def gateway_request(agent: str, spec: HarnessSpec, model: str,
                    options: Mapping[str, Any]) -> Endpoint | None:
    """The request that checks a harness's gateway: ``openai/<model>`` at its ``api_base``, with
    the key the harness will be given (``api_key``, else the variable ``api_key_env`` names,
    default ``OPENAI_API_KEY``), over its wire."""
    base = options.get("api_base") or options.get("base_url")
    if not base or not model:
        return None  # the readiness check says what is missing
    key = options.get("api_key") or os.environ.get(
        str(options.get("api_key_env") or "OPENAI_API_KEY")) or HARNESS_LOCAL_KEY
    return Endpoint.of(agent, f"openai/{model}", {"api_base": str(base), "api_key": str(key)},
                       spec.wire)


def endpoints(plans: Iterable[AgentPlan]) -> list[Endpoint]:
    """The distinct endpoints of ``plans``, in a stable order (agents without one left out)."""
    from limbo_plugin.agents.registry import agent_kind

    found: dict[tuple[str, str, str], Endpoint] = {}
    for plan in sorted(plans, key=lambda p: (p.agent, p.condition, p.values)):
        kind, rest = agent_kind(plan.agent)
        if kind.endpoint is None:
            continue
        endpoint = kind.endpoint(rest, plan)
        if endpoint is not None:
            found.setdefault(endpoint.key(), endpoint)
    return list(found.values())


def preflight(plans: Iterable[AgentPlan]) -> str | None:
    """Send one request to each endpoint of ``plans``; ``None`` if every one answered, else
    one line naming each that did not (the agent, the address and the provider's answer)."""
    from limbo_plugin.agents.provider import probe

    problems = []
    for endpoint in endpoints(plans):
        options = endpoint.model_options()
        learn_options(options)  # its credentials never reach the line
        try:
            probe(endpoint.model, options, endpoint.wire)
        except InfrastructureError as exc:
            problems.append(f"{endpoint.agent} at {endpoint.address}: {exc}")
    if not problems:
        return None
    return scrub("preflight failed, no episode was started: " + "; ".join(problems)
                 + " (fix the key or the gateway, or skip this check with "
                 "--limbo-preflight=off)")
