"""Tool patterns whose matching can take exponential time are refused at load; nested
repetitions whose iterations split the text one way only (a version number, a slug) are not.

The corpus (``service_pattern_*.yaml``) holds the refused shapes as whole specs; here the rule
itself, on both sides of the line, and one accepted pattern through a real service spec."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from limbo_plugin.spec.backtracking import nested_repeat
from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[2] / "specs"

ACCEPTED = [
    r"^(\d+\.)*\d+$",  # a version number: each iteration ends at a '.'
    r"^([a-z0-9]+-)*[a-z0-9]+$",  # a slug
    r"^(\.[a-z]+)+$",  # each iteration starts at a '.'
    r"^(\w+\.)*\w+$",
    r"^(a*b)*$",
    r"^(\d+[^\d])*$",
    r"^([a-z]+A)*$",  # 'A' is not in [a-z] (case matters here)
    r"^[a-z]+(ab)*$",
]
REFUSED = [
    r"(a+)+", r"^(\w*)*@x$", r"^(\w+\s?)*$",  # the classic shapes
    r"^(?:[a-z]{1,9}){1,99}$",  # bounded, still exponential
    r"^([a-z.]+\.)*$",  # the delimiter is one of the repeated characters
    r"(?i)^([a-z]+A)*$",  # ... once case is ignored
    r"^(a+a)*$", r"^(\d+.)*$",
    r"^(x\d+\d+)*$",  # two loops share each iteration's text
    r"^((\d+\.)*x)*$",  # a delimited loop inside another loop
    r"^(\d+\.?)*$",  # an optional delimiter is none
    r"^(?=(a+)+b)", r"(.*a){1,20}(b+)*",
]


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_a_nested_repetition_that_splits_one_way_is_accepted(pattern: str) -> None:
    assert not nested_repeat(pattern)


@pytest.mark.parametrize("pattern", REFUSED)
def test_a_nested_repetition_that_can_share_out_its_text_is_refused(pattern: str) -> None:
    assert nested_repeat(pattern)


def test_a_service_with_a_version_pattern_loads(tmp_path: Path) -> None:
    root = tmp_path / "specs"
    shutil.copytree(SPECS, root)
    email = root / "services" / "email.yaml"
    text = email.read_text()
    email.write_text(text.replace(r'pattern: "^[^@\\s]+@[^@\\s]+$"',
                                  "pattern: '^([a-z0-9]+[.])*[a-z0-9]+@[a-z0-9.-]+$'", 1))
    assert "pattern: '^([a-z0-9]+[.])*" in email.read_text(), "the control: the spec changed"
    registry = SpecRegistry.load(root)
    send = registry.catalog().get("email_send")
    assert send is not None
    assert send.input_schema["properties"]["to"]["pattern"].startswith("^([a-z0-9]+[.])*")
