"""``run_episode`` builds the record once, with the run's context in it: the plugin no longer
changes a record's run id, experiment, arm or repeat after the episode returns it (nor the
record of an episode given up at its time limit)."""

from __future__ import annotations

from limbo_plugin import EpisodeKey, RunConfig, RunContext, run_episode
from limbo_plugin.records import make_test_id
from limbo_plugin.spec.registry import SpecRegistry

KEY = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                 fault_mode="timeout_post")


def test_the_record_carries_its_context_as_built(registry: SpecRegistry) -> None:
    config = RunConfig(agent="scripted:verify_first")
    context = RunContext(run_id="r1", experiment="e1", arm="keys", repeat=2)
    record = run_episode(KEY, config, registry=registry, context=context)
    assert (record.run_id, record.experiment, record.arm, record.repeat) == ("r1", "e1", "keys", 2)
    assert record.test_id == make_test_id(KEY.id, config, 2)
    plain = run_episode(KEY, config, registry=registry)
    assert (plain.run_id, plain.experiment, plain.arm, plain.repeat) == (None, None, None, 0)
    assert plain.model_dump(exclude={"run_id", "experiment", "arm", "repeat", "test_id"}) == \
        record.model_dump(exclude={"run_id", "experiment", "arm", "repeat", "test_id"})


def test_the_plugin_does_not_change_a_record_after_it_is_built() -> None:
    """The two places that set fields on a returned record are gone."""
    from pathlib import Path

    import limbo_plugin.plugin.items as items

    source = Path(items.__file__).read_text(encoding="utf-8")
    for field in ("run_id", "repeat", "test_id", "experiment", "arm"):
        assert f"record.{field} =" not in source and f"record.{field}," not in source, field
