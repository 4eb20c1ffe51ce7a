"""Billing: customers, charges and refunds (Stripe-like; key semantics live in the world)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from limbo_plugin.world.clock import iso
from limbo_plugin.world.services.base import (
    Args,
    Body,
    Execution,
    Service,
    handles,
    not_found,
    validates,
)
from limbo_plugin.world.store import SEED_TIME, VersionedTable

if TYPE_CHECKING:
    from limbo_plugin.world.world import World


class BillingService(Service):
    name = "billing"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.customers: dict[str, dict[str, Any]] = {}
        self.charges = VersionedTable()
        self.refunds = VersionedTable()

    def record_tables(self) -> list[VersionedTable]:
        return [self.charges, self.refunds]

    def seeded_ids(self) -> list[str]:
        return [*self.customers, *super().seeded_ids()]

    def seed(self, records: dict[str, Any]) -> None:
        for customer in records.get("customers", []):
            self.customers[customer["id"]] = dict(customer)
        for charge in records.get("charges", []):
            data = {"status": "succeeded", "currency": "usd", "refunded": False,
                    "refund_id": None, **charge}
            self.charges.put(charge["id"], data, SEED_TIME)
        unknown = set(records) - {"customers", "charges"}
        if unknown:
            raise ValueError(f"billing seed has unknown collections: {sorted(unknown)}")

    # -- checks --------------------------------------------------------------------------------
    @validates("billing_create_charge")
    def check_create_charge(self, args: Args) -> None:
        if args["customer_id"] not in self.customers:
            raise not_found("customer", args["customer_id"])

    @validates("billing_refund_charge")
    def check_refund_charge(self, args: Args) -> None:
        if self.charges.current(args["charge_id"]) is None:
            raise not_found("charge", args["charge_id"])

    # -- writes --------------------------------------------------------------------------------
    @handles("billing_create_charge")
    def create_charge(self, args: Args, ex: Execution) -> Body:
        self.check_create_charge(args)
        charge_id = self.new_id("ch", ex)
        data = {
            "id": charge_id, "customer_id": args["customer_id"],
            "amount_cents": args["amount_cents"], "currency": args["currency"],
            "description": args["description"], "status": "succeeded", "refunded": False,
            "refund_id": None, "created": iso(ex.t),
        }
        self.charges.put(charge_id, data, ex.t)
        self.commit(args, ex, [charge_id])
        return {"id": charge_id, "object": "charge", "status": "succeeded",
                "amount_cents": args["amount_cents"], "currency": args["currency"]}

    @handles("billing_refund_charge")
    def refund_charge(self, args: Args, ex: Execution) -> Body:
        self.check_refund_charge(args)
        charge_id = args["charge_id"]
        charge = dict(self.charges.current(charge_id) or {})
        if charge.get("refunded"):
            return self._refund_body(charge["refund_id"], charge)
        # Named after the charge, not the request: a charge is refunded at most once, and the
        # re-issue of a lost refund must answer the same whether or not the first one landed.
        refund_id = self.world.ids.derived("re", charge_id)
        self.refunds.put(refund_id, {"id": refund_id, "charge_id": charge_id,
                                     "amount_cents": charge["amount_cents"],
                                     "created": iso(ex.t)}, ex.t)
        charge.update(refunded=True, refund_id=refund_id)
        self.charges.put(charge_id, charge, ex.t)
        effect = self.commit(args, ex, [refund_id], kind="update",
                             targets=[charge_id])
        self.world.ledger.mark_undone(charge_id, ex.t, by=effect.seq)
        return self._refund_body(refund_id, charge)

    @staticmethod
    def _refund_body(refund_id: str, charge: dict[str, Any]) -> Body:
        return {"id": refund_id, "object": "refund", "charge_id": charge["id"],
                "amount_cents": charge["amount_cents"], "status": "succeeded"}

    # -- reads ---------------------------------------------------------------------------------
    @handles("billing_list_charges")
    def list_charges(self, args: Args, ex: Execution) -> Body:
        customer_id = args["customer_id"]
        if customer_id not in self.customers:
            raise not_found("customer", customer_id)
        at = self.view_time(ex)
        rows = [data for _, data, _ in self.charges.visible(at)
                if data["customer_id"] == customer_id]
        rows.reverse()
        return {"object": "list", "customer_id": customer_id, "charges": rows[:50]}

    @handles("billing_get_charge")
    def get_charge(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        data = self.charges.as_of(args["charge_id"], at)
        if data is None:
            raise not_found("charge", args["charge_id"])
        return {"charge": data}


SERVICES = (BillingService,)
