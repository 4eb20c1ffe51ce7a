"""Experiment specs with arms: the union of partial designs, validated where they are written.

An arm overrides dimensions of the top level; the experiment's episodes are the union over its
arms, each episode once, sorted. These tests build experiments in a temporary specs directory
and compare them with the same designs written without arms (the expansion every existing
experiment already relies on) and with episode lists written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.errors import SpecError
from limbo_plugin.experiments import Episode, Experiment, load_experiment
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

NO_OVERRIDES: dict[str, str | None] = {}


def write(tmp_path: Path, name: str, text: str) -> Path:
    directory = tmp_path / "experiments"
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(f"name: {name}\n{text}")
    return path


def expand(registry: SpecRegistry, path: Path, **overrides: str) -> list[Episode]:
    experiment = load_experiment(path, registry)
    return experiment.episodes(registry, overrides, RunConfig())


def ids(episodes: list[Episode]) -> list[str]:
    return [f"{e.id}|{e.config.agent}" for e in episodes]


def load_error(registry: SpecRegistry, path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_experiment(path, registry)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_without_arms_an_experiment_is_the_product_of_its_dimensions(
        registry: SpecRegistry, tmp_path: Path) -> None:
    path = write(tmp_path, "plain", "templates: [incident_open]\ninstances: [0]\n"
                 "focal_writes: [ticket, comment]\nmodes: [timeout_post, none]\n"
                 "conditions: [vanilla, guard]\n")
    assert ids(expand(registry, path)) == [  # by world, then configuration (guard < vanilla)
        "incident_open-i0-baseline-none-guard|scripted:verify_first",
        "incident_open-i0-baseline-none|scripted:verify_first",
        "incident_open-i0-comment-timeout_post-guard|scripted:verify_first",
        "incident_open-i0-comment-timeout_post|scripted:verify_first",
        "incident_open-i0-ticket-timeout_post-guard|scripted:verify_first",
        "incident_open-i0-ticket-timeout_post|scripted:verify_first",
    ]


def test_one_arm_that_changes_nothing_is_the_experiment_itself(registry: SpecRegistry,
                                                              tmp_path: Path) -> None:
    top = ("templates: [incident_open, migration_log]\ninstances: [0, 1]\n"
           "modes: [none, timeout_late, partial_batch]\nconditions: [vanilla, vbr]\n")
    plain = expand(registry, write(tmp_path, "plain", top))
    armed = expand(registry, write(tmp_path, "armed", top + "arms:\n  - name: all of it\n"))
    # 2 conditions × 2 instances × (incident_open: none + 3 late commits; migration_log: none +
    # 2 late commits + the batch's partial batch)
    assert plain == armed and len(plain) == 2 * 2 * ((1 + 3) + (1 + 2 + 1))


def test_the_episodes_are_the_union_of_the_arms_each_once_and_sorted(registry: SpecRegistry,
                                                                    tmp_path: Path) -> None:
    top = ("templates: [incident_open]\ninstances: [0]\nfocal_writes: [ticket]\n"
           "modes: [timeout_post, timeout_late]\nagents: [scripted:verify_first]\n")
    armed = write(tmp_path, "armed", top + """\
arms:
  - name: base
  - name: guard on late commits
    modes: [timeout_late]
    conditions: [guard]
  - name: the base again, and another policy on another template
    templates: [incident_open, cross_post]
    focal_writes: [ticket, post_x]
    agents: [scripted:verify_first, scripted:same_key]
""")
    parts = [
        write(tmp_path, "base", top),
        write(tmp_path, "guarded", top.replace("timeout_post, timeout_late", "timeout_late")
              + "conditions: [guard]\n"),
        write(tmp_path, "wider", top.replace("[incident_open]", "[incident_open, cross_post]")
              .replace("[ticket]", "[ticket, post_x]")
              .replace("agents: [scripted:verify_first]",
                       "agents: [scripted:verify_first, scripted:same_key]")),
    ]
    union = {e for part in parts for e in expand(registry, part)}
    episodes = expand(registry, armed)
    assert len(episodes) == len(union) == len(set(episodes))
    assert set(episodes) == union
    assert episodes == sorted(episodes, key=Episode.sort_key)
    # the wider arm repeats the base arm's two episodes: they are not collected twice
    assert sum(len(expand(registry, part)) for part in parts) == len(episodes) + 2


def test_an_arm_inherits_what_it_does_not_set(registry: SpecRegistry, tmp_path: Path) -> None:
    path = write(tmp_path, "inherit", """\
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [timeout_post]
contracts: [keys_everywhere]
docs: [explicit]
arms:
  - conditions: [guard]
  - instances: [1]
""")
    episodes = expand(registry, path)
    assert {(e.key.instance, e.config.condition, e.config.contract, e.config.docs)
            for e in episodes} == {(0, "guard", "keys_everywhere", "explicit"),
                                   (1, "vanilla", "keys_everywhere", "explicit")}


def test_the_command_line_replaces_a_dimension_in_every_arm(registry: SpecRegistry,
                                                           tmp_path: Path) -> None:
    path = write(tmp_path, "two", """\
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [timeout_late]
agents: [litellm:openai/a, litellm:openai/b]
arms:
  - conditions: [vanilla, guard]
  - conditions: [vbr]
    agents: [litellm:openai/c]
""")
    assert {e.config.agent for e in expand(registry, path)} == {
        "litellm:openai/a", "litellm:openai/b", "litellm:openai/c"}
    replaced = expand(registry, path, agent="scripted:same_key")
    assert {(e.config.agent, e.config.condition) for e in replaced} == {
        ("scripted:same_key", "vanilla"), ("scripted:same_key", "guard"),
        ("scripted:same_key", "vbr")}


def test_a_max_focal_writes_of_the_top_level_can_be_lifted_by_an_arm(registry: SpecRegistry,
                                                                    tmp_path: Path) -> None:
    path = write(tmp_path, "lift", """\
templates: [hotfix_long]
instances: [0]
max_focal_writes: 1
modes: [timeout_post]
arms:
  - name: first
  - name: every
    max_focal_writes: null
    conditions: [guard]
""")
    by_condition: dict[str, set[str]] = {}
    for e in expand(registry, path):
        by_condition.setdefault(e.config.condition, set()).add(e.key.focal_write)
    assert by_condition == {"vanilla": {"deploy_production"},
                            "guard": {"deploy_production", "publish_weibo", "email", "ticket"}}


BROKEN_ARMS = {
    "unknown field": ("arms:\n  - name: a\n    modez: [none]\n", 3, "unknown field"),
    "unknown template": ("arms:\n  - name: a\n    templates: [incident_open, nope]\n", 3,
                         "unknown template 'nope'"),
    "unknown mode": ("arms:\n  - name: a\n  - name: b\n    modes: [timeout_later]\n", 4,
                     "unknown fault mode 'timeout_later'"),
    "unknown condition": ("arms:\n  - conditions:\n      - vanilla\n      - magic\n", 4,
                          "unknown condition 'magic'"),
    "bad agent": ("arms:\n  - agents: [harness:codex]\n", 2, "harness:<name>:<model>"),
    "unknown harness": ("arms:\n  - agents: [harness:nope:gpt]\n", 2, "unknown harness 'nope'"),
    "no arms": ("arms: []\n", 1, "at least 1 item"),
    "empty list": ("arms:\n  - conditions: []\n", 2, "at least 1 item"),
    "null dimension": ("arms:\n  - name: a\n    templates:\n", 2, "templates is empty"),
    "negative instance": ("arms:\n  - instances: [-1]\n", 2, "numbered from 0"),
    "twice the same name": ("arms:\n  - name: a\n  - name: a\n", 3, "two arms are named 'a'"),
    "no episode": ("arms:\n  - name: ok\n  - name: empty\n    modes: [partial_batch]\n", 3,
                   "arm 'empty' has no episode"),
    "inherited focal write": ("arms:\n  - templates: [cross_post]\n", 2,
                              "focal write 'ticket' (from the top level) is in none of the "
                              "templates of arm 1"),
    "own focal write": ("arms:\n  - focal_writes: [ticket, tickt]\n", 2,
                        "unknown focal write 'tickt'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_ARMS))
def test_a_broken_arm_is_one_line_naming_its_file_and_line(registry: SpecRegistry,
                                                          tmp_path: Path, case: str) -> None:
    text, line, message = BROKEN_ARMS[case]
    header = "templates: [incident_open]\ninstances: [0]\nfocal_writes: [ticket]\n"
    path = write(tmp_path, "broken", header + text)
    error = load_error(registry, path)
    assert error.startswith(f"{path}:{line + 4}:"), error  # the name and header come first
    assert message in error


def test_the_size_is_independent_of_the_order_and_stable(registry: SpecRegistry,
                                                        tmp_path: Path) -> None:
    """Collection must be identical on every xdist worker: no set order or seed may leak."""
    arms = ["  - {modes: [timeout_late], conditions: [guard, vbr]}\n",
            "  - {modes: [timeout_post, timeout_late], agents: [scripted:same_key]}\n",
            "  - {instances: [1], conditions: [wait_60]}\n"]
    top = ("templates: [incident_open, invoice_batch]\ninstances: [0]\n"
           "agents: [scripted:verify_first, scripted:blind_retry]\narms:\n")
    forward = expand(registry, write(tmp_path, "forward", top + "".join(arms)))
    backward = expand(registry, write(tmp_path, "backward", top + "".join(reversed(arms))))
    assert forward == backward
    assert forward == expand(registry, write(tmp_path, "again", top + "".join(arms)))


def test_parts_say_where_each_dimension_was_written(registry: SpecRegistry,
                                                   tmp_path: Path) -> None:
    path = write(tmp_path, "where", "instances: [0]\narms:\n  - name: x\n"
                 "    conditions: [guard]\n")
    experiment: Experiment = load_experiment(path, registry)
    (part,) = experiment.parts()
    assert part.label == "arm 'x'"
    assert part.path("conditions") == ("arms", 0, "conditions")
    assert part.path("instances") == ("instances",)


def test_item_ids_lead_back_to_their_agents(registry: SpecRegistry, tmp_path: Path) -> None:
    """What the xdist controller, which collects nothing, learns from the workers' item ids."""
    from limbo_plugin.experiments import agents_of_items

    write(tmp_path, "mixed", "templates: [incident_open]\ninstances: [0]\n"
                 "focal_writes: [ticket]\nmodes: [timeout_post, timeout_late]\n"
                 "agents: [scripted:same_key, harness:hermes:m]\n")
    file = "experiments/mixed.yaml"
    ids = [f"{file}::incident_open-i0-ticket-timeout_post-scripted-same_key",
           f"{file}::incident_open-i0-ticket-timeout_late-scripted-same_key",
           "tests/test_x.py::test_y", f"{file}::spec-error[mixed.yaml]"]
    assert agents_of_items(ids, tmp_path, registry, {}, RunConfig()) == {"scripted:same_key"}
    ids.append(f"{file}::incident_open-i0-ticket-timeout_post-harness-hermes-m")
    assert agents_of_items(ids, tmp_path, registry, {}, RunConfig()) == {
        "scripted:same_key", "harness:hermes:m"}
    write(tmp_path, "single", "templates: [incident_open]\ninstances: [0]\n"
          "focal_writes: [ticket]\nmodes: [timeout_post]\n")  # a non-default agent is in ids
    assert agents_of_items(["experiments/single.yaml::incident_open-i0-ticket-timeout_post"
                            "-harness-codex-x"],
                           tmp_path, registry, {"agent": "harness:codex:x"}, RunConfig()) == {
        "harness:codex:x"}
