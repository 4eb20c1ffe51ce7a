"""What every world asks its catalog is computed once per catalog: the tools of a set of
services and the tools that verify a write. The answers must equal the plain definitions, and
a world (or an agent's harness) that edits the list it was given edits only its own."""

from __future__ import annotations

import pytest

from limbo_plugin.contracts import GENERAL_TOOLS
from limbo_plugin.spec.registry import SpecRegistry


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_tools_of_services_are_the_definition_and_a_fresh_list(registry: SpecRegistry,
                                                               contract: str) -> None:
    catalog = registry.catalog(contract)
    for template in registry.templates.values():
        services = template.instantiate(0).services
        wanted = set(services)
        expected = [t for t in catalog.tools.values() if t.service in wanted] + [
            catalog.tools[name] for name in GENERAL_TOOLS if name in catalog.tools]
        first = catalog.for_services(services)
        assert first == expected
        first.clear()
        assert catalog.for_services(reversed(list(services))) == expected
    with pytest.raises(KeyError, match="unknown services: nowhere"):
        catalog.for_services(["nowhere"])


def test_reads_of_a_service_are_its_tools_that_write_nothing(registry: SpecRegistry) -> None:
    catalog = registry.catalog()
    for service in catalog.services:
        assert catalog.reads_of(service) == {
            t.name for t in catalog.tools.values() if t.service == service and not t.is_write}
