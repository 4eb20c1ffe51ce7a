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

TICKET_PARTS = 4
"""Request parts of one call whose tickets are numbered in the call's own block: the agent's
request and up to three a harness sends for it (a client's transparent retries)."""
TICKET_BLOCK = 2 * TICKET_PARTS
"""Ticket numbers each agent call takes: two per part (a request and its redelivered copy)."""
FAR_TICKETS = 1_000_000
"""Where the tickets of a call's further parts (a fifth request for one call, which no built-in
condition sends for a ticket) are numbered, so they never collide with another call's."""


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
        """``<PROJECT>-<n>``: each agent call takes a block of :data:`TICKET_BLOCK` numbers, and
        a request a harness sends for the call (part ``p``) is numbered inside that block, so
        its ticket looks like any other in the sequence; a ticket number says nothing about
        whether middleware retried (docs/decisions.md, D-ticket-numbers)."""
        slot = 2 * part + (1 if redelivered else 0)
        if part < TICKET_PARTS:
            return f"{project}-{self.ticket_offset + TICKET_BLOCK * seq + slot}"
        return f"{project}-{FAR_TICKETS + self.ticket_offset + TICKET_BLOCK * seq + slot}"

    def seed_ticket(self, project: str, index: int) -> str:
        return f"{project}-{self.ticket_offset - 10 - index}"
