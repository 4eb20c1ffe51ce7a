"""``limbo_bridge``: what an agent built with any framework needs to run as a Limbo episode.

Standard library only, so it imports in any virtual environment: a harness adapter puts its
directory on the agent's ``PYTHONPATH`` (``PYTHONPATH: "{limbo_bridge}"`` under ``env:``) and
sets the episode's variables (see :data:`VARIABLES`). An agent then does::

    import limbo_bridge

    async def main(episode: limbo_bridge.Episode) -> None:
        ...  # connect to episode.mcp_url with episode.mcp_headers(), call the model at
             # episode.api_base, and limbo_bridge.report_usage(...) after each model request

    limbo_bridge.run(main)

- Usage: one JSON line per model request on stdout (:func:`report_usage`), which the adapter's
  ``usage:`` section reads (``where: {limbo: usage}``): Limbo counts model calls and tokens the
  same way for every framework.
- Outages: :func:`run` turns an exception raised by the model provider (a refused or absent
  gateway, a timeout, a 5xx, a refused key, a rate limit the framework gave up on) into one
  ``{"limbo": "model_error", …}`` line and exit status 3, which the adapter's ``model_errors:``
  section makes an *infrastructure error* — the episode is excluded and re-run on resume rather
  than graded as the agent's failure. Anything else is the agent's own failure: its traceback
  goes to stderr (kept with the transcript) and the exit status is 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

VARIABLES = {
    "LIMBO_MCP_URL": "{mcp_url}",
    "LIMBO_MCP_TOKEN": "{mcp_token}",
    "LIMBO_MODEL": "{model}",
    "LIMBO_API_BASE": "{api_base}",
    "LIMBO_API_KEY": "{api_key}",
    "LIMBO_PROMPT": "{prompt}",
}
"""The environment an adapter sets for :meth:`Episode.from_environment`, and the placeholder each
comes from. The prompt travels in the environment too: argv is visible to ``ps``, and a long
prompt is safer there than on a command line."""

OUTAGE_EXIT = 3
"""The exit status of an agent whose model provider failed (see :func:`run`)."""

_PROVIDER_FAILURES = frozenset({
    # openai (and every SDK built on it), anthropic
    "APIConnectionError", "APITimeoutError", "InternalServerError", "RateLimitError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "APIStatusError",
    # httpx / httpcore, when a framework lets them through
    "ConnectError", "ConnectTimeout", "ReadTimeout", "RemoteProtocolError",
    # pydantic-ai
    "ModelAPIError",
})
"""Exception class names (anywhere in the chain of causes) that mean the provider failed.
Matched by name so that this module imports nothing of the frameworks it serves."""


@dataclass(frozen=True)
class Episode:
    """Where this episode's tools and model are."""

    mcp_url: str
    mcp_token: str
    model: str
    api_base: str
    api_key: str
    prompt: str

    @classmethod
    def from_environment(cls) -> Episode:
        """Read the variables the adapter set; a missing one is one line naming it."""
        missing = [name for name in VARIABLES if name not in os.environ]
        if missing:
            raise SystemExit(f"limbo_bridge: {', '.join(missing)} not set: run this agent "
                             "through its Limbo adapter (env: in its YAML sets them)")
        values = [os.environ[name] for name in VARIABLES]
        return cls(*values)

    def mcp_headers(self) -> dict[str, str]:
        """The header every request to the episode's endpoint must carry (else HTTP 401)."""
        return {"Authorization": f"Bearer {self.mcp_token}"}


def report_usage(prompt_tokens: int, completion_tokens: int, *,
                 cached_tokens: int = 0) -> None:
    """Report one model request's tokens (call it once per request the model served)."""
    print(json.dumps({"limbo": "usage", "prompt_tokens": int(prompt_tokens or 0),
                      "completion_tokens": int(completion_tokens or 0),
                      "cached_tokens": int(cached_tokens or 0)}), flush=True)


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and its causes, contexts and (for an exception group) members, each once."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        stack.extend(getattr(current, "exceptions", ()) or ())


def provider_failure(error: BaseException) -> BaseException | None:
    """The exception in ``error``'s chain that says the model provider failed, if any."""
    for item in causes(error):
        if any(kind.__name__ in _PROVIDER_FAILURES for kind in type(item).__mro__):
            return item
    return None


def run(main: Callable[[Episode], Coroutine[Any, Any, None]]) -> None:
    """Run the agent's ``main`` for this episode and exit with a status Limbo understands:
    0 when it returned, :data:`OUTAGE_EXIT` after a ``model_error`` line when the provider
    failed, 1 with the traceback on stderr when the agent itself failed."""
    episode = Episode.from_environment()
    try:
        asyncio.run(main(episode))
    except Exception as error:  # the agent's run, whatever it raised, ends here
        failure = provider_failure(error)
        if failure is None:
            raise
        first = (str(failure).strip().splitlines() or [""])[0]
        print(json.dumps({"limbo": "model_error", "error": type(failure).__name__,
                          "message": first[:300]}), flush=True)
        sys.exit(OUTAGE_EXIT)
