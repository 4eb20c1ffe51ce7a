"""Tickets: projects, tickets, comments and a search index that lags by 60 s."""

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
from limbo_plugin.world.store import SEED_TIME, VersionedTable, search_matches

if TYPE_CHECKING:
    from limbo_plugin.world.world import World

URL = "https://tickets.acme.example/browse/{id}"


class TicketsService(Service):
    name = "tickets"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.tickets = VersionedTable()
        self.comments = VersionedTable()

    def record_tables(self) -> list[VersionedTable]:
        return [self.tickets, self.comments]

    def seed(self, records: dict[str, Any]) -> None:
        for ticket in records.get("tickets", []):
            comments = ticket.get("comments", [])
            data = {"status": "open", "description": "", "url": URL.format(id=ticket["id"]),
                    "created": None,
                    **{k: v for k, v in ticket.items() if k != "comments"}}
            self.tickets.put(ticket["id"], data, SEED_TIME)
            for i, body in enumerate(comments):
                comment_id = f"cm_seed_{ticket['id']}_{i}"
                self.comments.put(comment_id, {"id": comment_id, "ticket_id": ticket["id"],
                                               "body": body, "created": ticket.get("created")},
                                  SEED_TIME)
        unknown = set(records) - {"tickets"}
        if unknown:
            raise ValueError(f"tickets seed has unknown collections: {sorted(unknown)}")

    # -- writes --------------------------------------------------------------------------------
    @handles("tickets_create")
    def create_ticket(self, args: Args, ex: Execution) -> Body:
        ticket_id = self.world.ids.ticket(args["project"], ex.seq, ex.redelivered, ex.part)
        url = URL.format(id=ticket_id)
        data = {"id": ticket_id, "project": args["project"], "title": args["title"],
                "description": args["description"], "status": "open", "url": url,
                "created": iso(ex.t)}
        self.tickets.put(ticket_id, data, ex.t)
        self.commit(args, ex, [ticket_id])
        return {"id": ticket_id, "url": url, "project": args["project"], "status": "open"}

    @validates("tickets_add_comment")
    def check_add_comment(self, args: Args) -> None:
        if self.tickets.current(args["ticket_id"]) is None:
            raise not_found("ticket", args["ticket_id"])

    @handles("tickets_add_comment")
    def add_comment(self, args: Args, ex: Execution) -> Body:
        self.check_add_comment(args)
        comment_id = self.new_id("cm", ex)
        self.comments.put(comment_id, {"id": comment_id, "ticket_id": args["ticket_id"],
                                       "body": args["body"], "created": iso(ex.t)}, ex.t)
        self.commit(args, ex, [comment_id], targets=[args["ticket_id"]])
        return {"id": comment_id, "ticket_id": args["ticket_id"]}

    @validates("tickets_set_status")
    def check_set_status(self, args: Args) -> None:
        if self.tickets.current(args["ticket_id"]) is None:
            raise not_found("ticket", args["ticket_id"])

    @handles("tickets_set_status")
    def set_status(self, args: Args, ex: Execution) -> Body:
        self.check_set_status(args)
        ticket_id = args["ticket_id"]
        data = dict(self.tickets.current(ticket_id) or {})
        if data["status"] != args["status"]:
            data["status"] = args["status"]
            self.tickets.put(ticket_id, data, ex.t)
            effect = self.commit(args, ex, [ticket_id], kind="update",
                                 targets=[ticket_id], sets={"status": args["status"]})
            if args["status"] == "cancelled":
                self.world.ledger.mark_undone(ticket_id, ex.t, by=effect.seq)
        return {"id": ticket_id, "status": data["status"]}

    # -- reads ---------------------------------------------------------------------------------
    def _comments_of(self, ticket_id: str, at: float) -> list[dict[str, Any]]:
        return [{"id": c["id"], "body": c["body"], "created": c["created"]}
                for _, c, _ in self.comments.visible(at) if c["ticket_id"] == ticket_id]

    @handles("tickets_list")
    def list_tickets(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        rows = [{k: data[k] for k in ("id", "title", "status", "url", "created")}
                for _, data, _ in self.tickets.visible(at) if data["project"] == args["project"]]
        rows.reverse()
        return {"project": args["project"], "tickets": rows[:50]}

    @handles("tickets_get")
    def get_ticket(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        data = self.tickets.as_of(args["ticket_id"], at)
        if data is None:
            raise not_found("ticket", args["ticket_id"])
        return {"ticket": {**data, "comments": self._comments_of(data["id"], at)}}

    @handles("tickets_search")
    def search_tickets(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        hits = []
        for ticket_id, data, _ in self.tickets.visible(at):
            bodies = [c["body"] for c in self._comments_of(ticket_id, at)]
            if search_matches(args["query"], data["title"], data.get("description", ""), *bodies):
                hits.append({k: data[k] for k in ("id", "project", "title", "status", "url")})
        hits.reverse()
        return {"query": args["query"], "tickets": hits[:50]}


SERVICES = (TicketsService,)
