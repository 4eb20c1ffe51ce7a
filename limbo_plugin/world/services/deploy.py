"""Deploy: deployment runs of services to staging and production."""

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

RUN_SECONDS = 120
"""A run reports ``running`` for this long after it starts, then ``succeeded`` (a choice the SPEC
leaves open; ``docs/decisions.md``, D-deploy-status)."""


class DeployService(Service):
    name = "deploy"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.known_services: set[str] = set()
        self.runs = VersionedTable()

    def record_tables(self) -> list[VersionedTable]:
        return [self.runs]

    def seed(self, records: dict[str, Any]) -> None:
        self.known_services.update(records.get("services", []))
        for run in records.get("runs", []):
            self.runs.put(run["id"], {"status": "succeeded", **run}, SEED_TIME)
            self.known_services.add(run["service"])
        unknown = set(records) - {"services", "runs"}
        if unknown:
            raise ValueError(f"deploy seed has unknown collections: {sorted(unknown)}")

    @validates("deploy_trigger")
    def check_trigger(self, args: Args) -> None:
        if args["service"] not in self.known_services:
            raise not_found("service", args["service"])

    @handles("deploy_trigger")
    def trigger(self, args: Args, ex: Execution) -> Body:
        self.check_trigger(args)
        run_id = self.new_id("run", ex)
        self.runs.put(run_id, {"id": run_id, "service": args["service"],
                               "version": args["version"], "environment": args["environment"],
                               "status": "running", "started_at": ex.t,
                               "created": iso(ex.t)}, ex.t)
        self.commit(args, ex, [run_id])
        return {"id": run_id, "status": "running", "service": args["service"],
                "environment": args["environment"], "version": args["version"]}

    @validates("deploy_cancel_run")
    def check_cancel_run(self, args: Args) -> None:
        if self.runs.current(args["run_id"]) is None:
            raise not_found("deployment run", args["run_id"])

    @handles("deploy_cancel_run")
    def cancel_run(self, args: Args, ex: Execution) -> Body:
        self.check_cancel_run(args)
        run = dict(self.runs.current(args["run_id"]) or {})
        if run["status"] != "cancelled":
            run["status"] = "cancelled"
            self.runs.put(run["id"], run, ex.t)
            effect = self.commit(args, ex, [run["id"]], kind="update",
                                 targets=[run["id"]])
            self.world.ledger.mark_undone(run["id"], ex.t, by=effect.seq)
        return {"id": run["id"], "status": "cancelled"}

    @handles("deploy_list_runs")
    def list_runs(self, args: Args, ex: Execution) -> Body:
        if args["service"] not in self.known_services:
            raise not_found("service", args["service"])
        at = self.view_time(ex)
        runs = []
        for _, run, _ in self.runs.visible(at):
            if run["service"] != args["service"] or run["environment"] != args["environment"]:
                continue
            shown = {k: v for k, v in run.items() if k != "started_at"}
            started = run.get("started_at")
            if shown["status"] == "running" and started is not None \
                    and ex.t - started >= RUN_SECONDS:
                shown["status"] = "succeeded"
            runs.append(shown)
        runs.reverse()
        return {"service": args["service"], "environment": args["environment"], "runs": runs[:50]}


SERVICES = (DeployService,)
