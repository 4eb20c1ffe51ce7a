"""The simulated world: a virtual clock, an effect ledger and six services, all pure Python."""

from limbo_plugin.world.world import World

__all__ = ["World"]
