"""A service names each of its tools once, in the ``@handles`` (or ``@validates``) that marks
its method: the effect a handler commits and the view time a read uses take the tool from the
execution, so a renamed tool cannot leave a stale name behind in a handler body."""

from __future__ import annotations

import ast
import inspect

from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.services import service_classes


def named_outside_decorators(source: str, tools: set[str]) -> list[str]:
    tree = ast.parse(source)
    in_decorators = {id(node) for function in ast.walk(tree)
                     if isinstance(function, ast.FunctionDef)
                     for decorator in function.decorator_list for node in ast.walk(decorator)}
    return [f"line {node.lineno}: {node.value}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in tools
            and id(node) not in in_decorators]


def test_each_tool_is_named_once_in_its_service_module(registry: SpecRegistry) -> None:
    checked = 0
    for name, spec in registry.services.items():
        if name not in service_classes():
            continue  # the general tools (wait, finish) are the episode's, not a service's
        checked += 1
        module = inspect.getmodule(service_classes()[name])
        assert module is not None
        tools = {tool.name for tool in spec.tools}
        assert named_outside_decorators(inspect.getsource(module), tools) == [], name
    assert checked == len(service_classes())
