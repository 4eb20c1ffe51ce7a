"""Task templates: instantiation, variants, and errors that name the spec file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from limbo_plugin.errors import SpecError
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.spec.templates import CUE

SPECS = Path(__file__).resolve().parents[1] / "specs"
PAPER_TEMPLATES = ("cross_post", "customer_notice", "deploy_release", "feature_flags",
                   "hotfix_long", "incident_open", "invoice_batch", "migration_log",
                   "refund_duplicate", "release_announcement", "subscription_upgrade",
                   "ticket_resolution")


def broken_specs(tmp_path: Path, template: str, old: str, new: str) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(SPECS, root)
    file = root / "tasks" / f"{template}.yaml"
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new, 1))
    return root


@pytest.mark.parametrize(("template", "old", "new", "message", "path"), [
    ("release_announcement", 'tool: "{item.id}_publish"}', 'tool: "{item.id}_post"}',
     "unknown tool 'weibo_post'", "focal_writes[0]"),
    ("incident_open", "- {id: comment, tool: tickets_add_comment}",
     "- {id: comment, tool: tickets_get}", "'tickets_get' is not a write", "focal_writes[1]"),
    ("invoice_batch", "k: [2, 3]", "k: [2, 30]", "cannot sample", "params.customers"),
    ("cross_post", "exactly once.", "exactly once!", "cue sentence", "instruction"),
    ("migration_log", "{migration_list}", "{migration_lits}", "nothing named 'migration_lits'",
     "instruction"),
    ("feature_flags", "flag_list: {join: flags}", "flag_list: {join: flags, choice: [a]}",
     "exactly one of", "params.flag_list"),
])
def test_template_errors_name_file_line_and_path(tmp_path: Path, template: str, old: str,
                                                 new: str, message: str, path: str) -> None:
    registry = SpecRegistry.load(broken_specs(tmp_path, template, old, new))
    assert template not in registry.templates, "a broken template does not load"
    others = len(list((registry.root / "tasks").glob("*.yaml"))) - 1
    assert len(registry.templates) == others, "the other templates still do"
    with pytest.raises(SpecError) as caught:
        registry.template(template)
    error = caught.value
    assert registry.template_errors == {template: error}
    assert Path(error.file).name == f"{template}.yaml"
    assert error.line is not None and error.line > 1
    assert error.path.startswith(path)
    assert message in str(error)


def test_no_cue_drops_only_the_cue_sentence(registry: SpecRegistry) -> None:
    for template in registry.templates.values():
        task = template.instantiate(0)
        default, no_cue = task.instruction("default"), task.instruction("no_cue")
        assert default.endswith(CUE)
        assert default == f"{no_cue} {CUE}"


def test_about_thirty_five_focal_writes_per_instance(registry: SpecRegistry) -> None:
    """The paper's twelve templates hold 34 focal writes per instance (a template added to the
    specs brings its own)."""
    for instance in (0, 1, 2, 3):
        count = sum(len(registry.template(name).instantiate(instance).focal_writes)
                    for name in PAPER_TEMPLATES)
        assert 34 <= count <= 35, (instance, count)


def test_focal_writes_are_writes_in_the_templates_services(registry: SpecRegistry) -> None:
    catalog = registry.catalog()
    for template in registry.templates.values():
        task = template.instantiate(1)
        for focal in task.focal_writes:
            assert catalog.contract(focal.tool).is_write
            assert catalog.service_of(focal.tool) in task.services
