"""Seeds. A world depends only on ``(template, instance, focal_write, fault_mode)``.

Two seeds are derived from it. The *base seed* depends on ``(template, instance)`` alone: it draws
the task's parameters and every record id, so worlds that differ only in their hidden outcome
(``timeout_pre`` vs ``timeout_post``) name records identically. The *world seed* adds the focal
write and the fault mode: it draws what is private to one world (the tail delay of a late
commit, the size of a partial batch).
"""

from __future__ import annotations

import random

from limbo_plugin.world.ids import stable_int


def base_seed(template: str, instance: int) -> int:
    return stable_int("limbo-base", template, instance)


def world_seed(template: str, instance: int, focal_write: str, fault_mode: str) -> int:
    return stable_int("limbo-world", template, instance, focal_write, fault_mode)


def rng_for(seed: int, purpose: str) -> random.Random:
    """An independent random stream per purpose, so adding a draw never shifts another."""
    return random.Random(stable_int(seed, purpose))
