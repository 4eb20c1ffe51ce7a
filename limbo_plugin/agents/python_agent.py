"""``--agent python:<module>:<callable>``: your own agent, written in Python, run in process.

``<callable>`` is looked up in ``<module>`` (imported from the current directory too, as
``python -m`` would) and is one of:

- an object with ``run(session)`` — used as is;
- a class or factory — called with the ``--model-option`` values as one ``dict`` if it takes an
  argument, with nothing otherwise; what it returns must have ``run(session)``.

The agent acts only through :class:`~limbo_plugin.AgentSession`: ``session.instruction``,
``session.tools`` (each with ``name``, ``description``, ``input_schema`` and ``openai_tool()``)
and ``session.call(name, arguments)``, which returns a :class:`~limbo_plugin.ToolResult`
(``.text()`` is what to show a model). Its calls go through the recovery condition and the fault
transport like any other agent's and are graded the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from typing import Any

from limbo_plugin.agents.base import Agent
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.errors import UsageError

FORM = "python:<module>:<callable> (e.g. python:my_agents:MyAgent)"


def resolve(target: str) -> Any:
    """The object ``<module>:<callable>`` names; a one-line :class:`UsageError` otherwise."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"agent 'python:{target}' must have the form {FORM}")
    try:
        module = _import(module_name)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"agent 'python:{target}': importing {module_name} failed: "
                         f"{type(exc).__name__}: {exc}") from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageError(f"agent 'python:{target}': {module_name} has no attribute "
                             f"{attribute!r}")
        value = getattr(value, part)
    if not (callable(value) or hasattr(value, "run")):
        raise UsageError(f"agent 'python:{target}': {attribute} is neither an agent (with "
                         "run(session)) nor a class or factory returning one")
    return value


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not _is_missing(exc, module_name):
            raise  # the module exists but a dependency of it does not
        if os.getcwd() not in sys.path:  # like `python -m`: the current directory counts
            sys.path.insert(0, os.getcwd())
            try:
                return importlib.import_module(module_name)
            except ModuleNotFoundError as again:
                if not _is_missing(again, module_name):
                    raise
    raise UsageError(f"agent 'python:{module_name}:…': no module named {module_name!r} (is it "
                     "on PYTHONPATH or in the current directory?)")


def _is_missing(exc: ModuleNotFoundError, module_name: str) -> bool:
    return exc.name is not None and (module_name == exc.name
                                     or module_name.startswith(exc.name + "."))


def make_python_agent(target: str, options: AgentOptions | None = None) -> Agent:
    value = resolve(target)
    if not callable(value) or (hasattr(value, "run") and not inspect.isclass(value)):
        agent = value
    else:
        model_options = dict(options.model_options) if options is not None else {}
        agent = value(model_options) if _takes_an_argument(value) else value()
    if not callable(getattr(agent, "run", None)):
        raise UsageError(f"agent 'python:{target}' gave {type(agent).__name__}, which has no "
                         "run(session) method")
    if not isinstance(getattr(agent, "name", None), str):
        with contextlib.suppress(AttributeError):  # e.g. __slots__
            agent.name = f"python:{target}"
    return ContainedAgent(agent, f"python:{target}")


class ContainedAgent:
    """A ``python:`` agent whose processes end with its episode
    (:func:`~limbo_plugin.agent_processes.ended_with_the_episode`)."""

    def __init__(self, agent: Any, name: str) -> None:
        self.agent = agent
        found = getattr(agent, "name", None)
        self.name = found if isinstance(found, str) else name

    def run(self, session: Any) -> None:
        from limbo_plugin.agent_processes import ended_with_the_episode

        with ended_with_the_episode():
            self.agent.run(session)


def _takes_an_argument(factory: Any) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
               for p in signature.parameters.values())
