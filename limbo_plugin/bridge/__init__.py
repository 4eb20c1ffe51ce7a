"""The glue a framework-built agent shares when Limbo runs it as a harness.

An agent written with the OpenAI Agents SDK, LangGraph or PydanticAI lives in its own virtual
environment (its pins are not Limbo's) and is run per episode as ``harness:command:<adapter>``:
it reaches the episode's tools over the ``limbo mcp`` endpoint and its model through the
``--model-option`` gateway. What every such agent needs from Limbo is the same three things —
where the episode's endpoint and model are, how to report token usage, how to say that the model
provider (not the agent) failed — so they live once, in :mod:`limbo_plugin.bridge.limbo_bridge`,
a standard-library-only module that an adapter puts on the agent's ``PYTHONPATH`` with the
``{limbo_bridge}`` placeholder (the agent then writes ``import limbo_bridge``). The recipes under
``examples/agents/`` use it.
"""

from __future__ import annotations

from pathlib import Path

BRIDGE_DIR = Path(__file__).resolve().parent
"""The directory to put on a framework agent's ``PYTHONPATH`` (``{limbo_bridge}``)."""

__all__ = ["BRIDGE_DIR"]
