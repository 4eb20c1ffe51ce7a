"""Record identifiers derived from (world base seed, request sequence number).

Never from how many records exist: the re-issue after a lost request and after a lost
acknowledgement gets the same id, so no response leaks whether a hidden commit happened.

The sequence number is the number of the agent's call (see
:attr:`~limbo_plugin.toolapi.ToolCall.seq`); a request a harness makes on the agent's behalf is a
further *part* of the call it serves. So a condition's read-backs and retries never shift the ids
of the agent's own records: a world is the same world under every condition and contract.
"""

from __future__ import annotations

import hashlib

HARNESS_TICKET_STRIDE = 10_000
"""Ticket numbers of a harness's requests lie this far above the agent's own (part 0), so the
two never collide in an episode of fewer than 5,000 agent calls."""


def stable_int(*parts: object) -> int:
    """A 64-bit integer determined by ``parts`` alone (not by Python's per-process hash seed)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


class IdFactory:
    def __init__(self, base_seed: int) -> None:
        self.base_seed = base_seed
        self.ticket_offset = 2000 + base_seed % 5000

    def make(self, prefix: str, seq: int, sub: str = "", part: int = 0) -> str:
        request = str(seq) if part == 0 else f"{seq}.{part}"
        digest = hashlib.sha256(f"{self.base_seed}:{request}:{sub}".encode()).hexdigest()
        return f"{prefix}_{digest[:12]}"

    def derived(self, prefix: str, *intent: object) -> str:
        """An id derived from the intent instead of the request (SPEC §1.3 allows either): for
        records an idempotent write creates at most once, so every request of that intent,
        whichever executes first, names the record identically."""
        return f"{prefix}_{stable_int(self.base_seed, prefix, *intent):016x}"[: len(prefix) + 13]

    def ticket(self, project: str, seq: int, redelivered: bool = False, part: int = 0) -> str:
        number = self.ticket_offset + 2 * seq + (1 if redelivered else 0)
        return f"{project}-{number + HARNESS_TICKET_STRIDE * part}"

    def seed_ticket(self, project: str, index: int) -> str:
        return f"{project}-{self.ticket_offset - 10 - index}"
