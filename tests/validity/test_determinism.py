"""A world depends only on its key: the same episode twice gives identical records."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

KEYS = [
    EpisodeKey(template="hotfix_long", instance=1, focal_write="publish_weibo",
               fault_mode="timeout_late_tail"),
    EpisodeKey(template="migration_log", instance=0, focal_write="batch",
               fault_mode="partial_batch"),
    EpisodeKey(template="invoice_batch", instance=1, focal_write="charge_2",
               fault_mode="redelivery"),
]


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.id)
def test_same_episode_twice_is_identical(registry: SpecRegistry, key: EpisodeKey) -> None:
    config = RunConfig(agent="scripted:verify_first")
    first = run_episode(key, config, registry=registry).model_dump_json()
    second = run_episode(key, config, registry=registry).model_dump_json()
    assert first == second


def test_records_do_not_depend_on_the_process(registry: SpecRegistry) -> None:
    """Another interpreter, with another hash seed, produces byte-identical records."""
    script = (
        "import sys, json\n"
        "from limbo_plugin.episode import run_episode\n"
        "from limbo_plugin.records import EpisodeKey\n"
        "from limbo_plugin.runconfig import RunConfig\n"
        "from limbo_plugin.spec.registry import SpecRegistry\n"
        "reg = SpecRegistry.load(sys.argv[1])\n"
        "for raw in json.loads(sys.argv[2]):\n"
        "    print(run_episode(EpisodeKey(**raw), RunConfig(), registry=reg).model_dump_json())\n"
    )
    payload = json.dumps([k.model_dump() for k in KEYS])
    out = subprocess.run([sys.executable, "-c", script, str(registry.root), payload],
                         capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout.splitlines()
    local = [run_episode(k, RunConfig(), registry=registry).model_dump_json() for k in KEYS]
    assert out == local


def test_parameters_depend_only_on_template_and_instance(registry: SpecRegistry) -> None:
    template = registry.template("release_announcement")
    first = template.instantiate(0)
    rebuilt = type(template)(spec=template.spec, file=template.file, doc=template.doc,
                             sources=registry).instantiate(0)
    assert first.params == rebuilt.params
    assert first.params != template.instantiate(1).params
