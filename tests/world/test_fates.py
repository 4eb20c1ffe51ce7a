"""The fates table: what became of a request is read off its fate's flags, by the operator and
the oracles alike, so a fate an extension declares is treated like Limbo's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType

import pytest
from worldkit import make_box, write_args

from limbo_plugin import extensions
from limbo_plugin.errors import UsageError
from limbo_plugin.extend import Fate
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.fates import fate_of, fates


@pytest.fixture
def declare(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Declares fates in an extension module (the fates table is then read again)."""
    module = ModuleType("limbo_fates_ext")
    monkeypatch.setattr(extensions, "extension_modules", lambda: (module,))

    def declare(*declared: Fate) -> None:
        module.__dict__["FATES"] = declared
        fates.cache_clear()

    yield declare
    fates.cache_clear()


def test_limbos_fates_say_what_executed_and_what_is_pending() -> None:
    table = {name: (fate.executed, fate.pending) for name, fate in fates().items()}
    assert {name for name, (executed, _) in table.items() if executed == "all"} == {
        "committed", "replayed"}
    assert table["partial"] == ("first_rows", False)
    assert [name for name, (_, pending) in table.items() if pending] == ["in_flight"]


def test_the_operator_reads_an_extension_fate_by_its_flags(
        registry: SpecRegistry, declare: Callable[..., None]) -> None:
    declare(Fate("queued", pending=True))
    box = make_box(registry, mode="timeout_pre", tool="email_send")
    box.call("email_send", write_args("email_send"))
    box.world.requests[0].fate = "queued"
    answer = box.call("escalate_to_human", {"message": "Did it go through?"}).content
    [operation] = answer["operations"]
    assert operation["outcome"] == "in_flight" and "Do not send it again" in operation["finding"]


def test_an_undeclared_fate_is_one_line_naming_the_declared_ones() -> None:
    with pytest.raises(UsageError) as error:
        fate_of("queued")
    assert str(error.value).startswith("request fate 'queued' is not declared; declared: sent, ")
    assert "\n" not in str(error.value)


def test_a_fate_named_as_no_word_is_refused(declare: Callable[..., None]) -> None:
    declare(Fate("Queued up"))
    with pytest.raises(UsageError, match=r"^limbo_fates_ext.FATES: fate name 'Queued up' is not "
                                         r"a lower-case word \(letters, digits, _\)$"):
        fates()
