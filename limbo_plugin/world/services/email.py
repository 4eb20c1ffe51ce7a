"""Email: outgoing mail and a Sent folder that synchronises after 120 s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from limbo_plugin.world.clock import iso
from limbo_plugin.world.services.base import Args, Body, Execution, Service, handles
from limbo_plugin.world.store import SEED_TIME, VersionedTable, search_matches

if TYPE_CHECKING:
    from limbo_plugin.world.world import World

SENDER = "ops@acme.example"


class EmailService(Service):
    name = "email"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.sent = VersionedTable()

    def record_tables(self) -> list[VersionedTable]:
        return [self.sent]

    def seed(self, records: dict[str, Any]) -> None:
        for message in records.get("sent", []):
            self.sent.put(message["id"], {"from": SENDER, "body": "", **message}, SEED_TIME)
        unknown = set(records) - {"sent"}
        if unknown:
            raise ValueError(f"email seed has unknown collections: {sorted(unknown)}")

    @handles("email_send")
    def send(self, args: Args, ex: Execution) -> Body:
        message_id = self.new_id("msg", ex)
        self.sent.put(message_id, {"id": message_id, "from": SENDER, "to": args["to"],
                                   "subject": args["subject"], "body": args["body"],
                                   "created": iso(ex.t)}, ex.t)
        self.commit(args, ex, [message_id])
        return {"id": message_id, "status": "sent", "to": args["to"]}

    @handles("email_search_sent")
    def search_sent(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        hits = [data for _, data, _ in self.sent.visible(at)
                if search_matches(args["query"], data["to"], data["subject"], data["body"])]
        hits.reverse()
        return {"query": args["query"], "messages": hits[:50]}


SERVICES = (EmailService,)
