"""The behaviour coder cannot be fooled: a read verifies only if it could have shown the focal
write, and a re-issue is what the grader counts as the same effect again. Real episodes with
hand-written agents; each expectation is worked out from the calls the agent makes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

Step = Callable[[AgentSession, dict[str, Any]], None]


class Recovering:
    """Charges the first customer (the focal write, which the fault hits), then runs
    ``recover`` with the charge's arguments, and finishes."""

    name = "recovering"

    def __init__(self, params: dict[str, Any], recover: Step) -> None:
        self.params, self.recover = params, recover

    def run(self, session: AgentSession) -> None:
        first = self.params["customers"][0]
        args = {"customer_id": first["id"], "amount_cents": self.params["amount"] * 100,
                "currency": "usd", "description": f"Invoice {self.params['invoice_id']}"}
        session.call("billing_create_charge", args)
        self.recover(session, args)
        session.call("finish", {"status": "completed", "summary": "charged"})


def episode(registry: SpecRegistry, recover: Step, mode: str = "timeout_post") -> EpisodeRecord:
    params = registry.template("invoice_batch").instantiate(0).params
    key = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                     fault_mode=mode)
    return run_episode(key, RunConfig(), registry=registry, agent=Recovering(params, recover))


def other_customer(registry: SpecRegistry) -> str:
    customers = registry.template("invoice_batch").instantiate(0).params["customers"]
    return str(customers[1]["id"])


def again(session: AgentSession, args: dict[str, Any]) -> None:
    session.call("billing_create_charge", args)


@pytest.mark.parametrize(("read", "behaviour"), [
    ("own", "verify_then_retry"),     # the read that would have shown the charge
    ("other", "blind_retry"),         # another customer's charges: it could not
    ("failed", "blind_retry"),        # a read the service refused (no customer): saw nothing
    ("get", "blind_retry"),           # a charge by an id the agent never got: not the write
])
def test_only_a_read_that_could_show_the_write_verifies(registry: SpecRegistry, read: str,
                                                        behaviour: str) -> None:
    other = other_customer(registry)

    def recover(session: AgentSession, args: dict[str, Any]) -> None:
        if read == "own":
            session.call("billing_list_charges", {"customer_id": args["customer_id"]})
        elif read == "other":
            session.call("billing_list_charges", {"customer_id": other})
        elif read == "failed":
            assert session.call("billing_list_charges", {}).is_error
        else:
            session.call("billing_get_charge", {"charge_id": "ch_prev00000001"})
        again(session, args)

    record = episode(registry, recover)
    assert record.fired and record.duplicates == 1  # a lost ack: the re-issue duplicated
    assert record.behaviour == behaviour


def test_a_reworded_reissue_is_a_reissue(registry: SpecRegistry) -> None:
    """The same charge with its description reworded: the grader counts the duplicate (the
    task asks for one charge of this customer whose description names the invoice), so the
    coder must see a re-issue, not an agent that moved on."""
    def reworded(session: AgentSession, args: dict[str, Any]) -> None:
        session.call("billing_create_charge",
                     {**args, "description": args["description"] + " (second attempt)"})

    record = episode(registry, reworded)
    assert record.duplicates == 1
    assert record.behaviour == "blind_retry"


def test_a_different_write_of_the_same_tool_is_not_a_reissue(registry: SpecRegistry) -> None:
    """Charging the second customer is the task's next step, not a re-issue of the first."""
    other = other_customer(registry)

    def next_customer(session: AgentSession, args: dict[str, Any]) -> None:
        session.call("billing_create_charge", {**args, "customer_id": other})

    record = episode(registry, next_customer)
    assert record.duplicates == 0
    assert record.behaviour == "move_on"
