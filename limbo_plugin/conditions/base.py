"""What middleware conditions are given: the contracts, a clock to sleep on, a way to call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from limbo_plugin.contracts import ToolDefinition

if TYPE_CHECKING:
    from limbo_plugin.world.world import World


@dataclass
class HarnessEnv:
    """The harness's view of an episode.

    ``tools`` carry the contracts; ``sleep`` lets simulated time pass (backoff, deferred
    verification). ``ground_truth`` is the world itself and is set only for the oracle
    conditions, which are reference points that may read what no real client can.
    """

    tools: dict[str, ToolDefinition]
    world: World
    ground_truth: World | None = None

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.world.clock.advance(seconds)

    @property
    def now(self) -> float:
        return self.world.clock.now
