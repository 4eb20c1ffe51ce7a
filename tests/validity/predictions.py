"""What the paper's propositions predict for each scripted reference policy.

A prediction is derived from the focal write's effective contract (does it accept a key, is it
idempotent, does it have a read-back) and the fault mode's labels in the fault spec (its hidden
outcome and group), never from running anything or from mode names, so the validity tests compare
two independent sources and a new mode is predicted by what the spec says it does.
"""

from __future__ import annotations

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.spec.models import FaultModeSpec

EXECUTED = {"committed", "late", "partial", "duplicated"}
"""Hidden outcomes in which the request took (or will take) effect."""
IDEMPOTENT = {"idempotent", "naturally_idempotent"}
KEY_SENDERS = {"same_key"}
"""SPEC §6.1: only same_key sends keys. verify_first reads back and sends none, even where the
contract accepts one, so it is the read-back-only policy of Proposition 1 on every write."""


def committed(mode: FaultModeSpec) -> bool:
    """The request executed behind an ambiguous answer (an error of group T or E, or the
    success of a redelivery, group S); explicit faults (group ``-``) are answered truthfully."""
    return mode.hidden_outcome in EXECUTED and mode.group != "-"


def redelivered(mode: FaultModeSpec) -> bool:
    """The request executed and the transport delivers it again: no error to react to."""
    return mode.hidden_outcome == "duplicated"


def predicted_duplicate(policy: str, mode: FaultModeSpec, focal: ToolDefinition) -> bool:
    """Whether ``policy`` duplicates the focal write in a world of ``mode``."""
    contract = focal.contract
    if contract.idempotency in IDEMPOTENT or not committed(mode):
        return False
    keyed = policy in KEY_SENDERS and focal.accepts_key
    if keyed:
        return False  # Proposition 2: one key per intent is exactly-once in all states
    if policy == "blind_retry":
        return True  # re-issues on every committed world (redelivery needs no error at all)
    if policy == "escalate_first":
        return redelivered(mode)  # the operator resolves every error, but sees none here
    # verify_first, and same_key on a write without key support (its fallback):
    if redelivered(mode):
        return True
    if mode.hidden_outcome == "late":
        # Proposition 1: the read-back precedes the in-flight commit. A write with no read-back
        # is escalated instead, and the truthful operator reports the request as in flight.
        return contract.read_back is not None
    return False  # lost ack, misleading 500, partial batch: the read-back resolves them
