"""Database: tables with declared columns; batch inserts are non-atomic, row by row, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from limbo_plugin.toolapi import canonical_json
from limbo_plugin.world.services.base import (
    Args,
    Body,
    Execution,
    Service,
    ServiceError,
    handles,
    not_found,
    validates,
)
from limbo_plugin.world.store import SEED_TIME, VersionedTable

if TYPE_CHECKING:
    from limbo_plugin.world.world import World


@dataclass
class Table:
    name: str
    columns: list[str]
    key: list[str] = field(default_factory=list)
    rows: VersionedTable = field(default_factory=VersionedTable)


class DatabaseService(Service):
    name = "database"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.tables: dict[str, Table] = {}

    def record_tables(self) -> list[VersionedTable]:
        return [t.rows for t in self.tables.values()]

    def seed(self, records: dict[str, Any]) -> None:
        for name, spec in records.get("tables", {}).items():
            table = Table(name=name, columns=list(spec["columns"]), key=list(spec.get("key", [])))
            for i, row in enumerate(spec.get("rows", [])):
                row_id = row.get("id") or f"row_seed_{name}_{i}"
                table.rows.put(row_id, {"id": row_id, **row}, SEED_TIME)
            self.tables[name] = table
        unknown = set(records) - {"tables"}
        if unknown:
            raise ValueError(f"database seed has unknown collections: {sorted(unknown)}")

    # -- validation ----------------------------------------------------------------------------
    def _table(self, name: str) -> Table:
        table = self.tables.get(name)
        if table is None:
            known = ", ".join(sorted(self.tables)) or "none"
            raise ServiceError(404, "table_missing", f"No such table: {name} (tables: {known})")
        return table

    @staticmethod
    def _check_columns(table: Table, row: dict[str, Any], what: str) -> None:
        unknown = [c for c in row if c not in table.columns]
        if unknown:
            raise ServiceError(400, "unknown_column",
                               f"{what}: unknown column(s) {', '.join(map(str, unknown))} in "
                               f"{table.name} (columns: {', '.join(table.columns)})")
        for column, value in row.items():
            if isinstance(value, dict | list):
                raise ServiceError(400, "invalid_value",
                                   f"{what}: column {column} must hold a scalar value")

    @validates("db_insert_rows")
    def check_insert_rows(self, args: Args) -> None:
        table = self._table(args["table"])
        for i, row in enumerate(args["rows"]):
            self._check_columns(table, row, f"row {i}")

    @validates("db_insert_row")
    def check_insert_row(self, args: Args) -> None:
        self._check_columns(self._table(args["table"]), args["row"], "row")

    @validates("db_upsert")
    def check_upsert(self, args: Args) -> None:
        table = self._table(args["table"])
        if not table.key:
            raise ServiceError(400, "no_key", f"table {table.name} has no key; use an insert")
        if sorted(args["key"]) != sorted(table.key):
            raise ServiceError(400, "invalid_key",
                               f"the key of {table.name} is ({', '.join(table.key)})")
        self._check_columns(table, args["key"], "key")
        self._check_columns(table, args["values"], "values")

    @validates("db_delete_rows")
    def check_delete_rows(self, args: Args) -> None:
        table = self._table(args["table"])
        missing = [i for i in args["ids"] if not table.rows.ever_existed(i)]
        if missing:
            raise not_found(f"row in {table.name}", ", ".join(missing))

    @validates("db_query")
    def check_query(self, args: Args) -> None:
        self._check_columns(self._table(args["table"]), args.get("where") or {}, "where")

    # -- writes --------------------------------------------------------------------------------
    def _insert(self, table: Table, row: dict[str, Any], args: Args, ex: Execution,
                index: int) -> str:
        row_id = self.new_id("row", ex, index)
        table.rows.put(row_id, {"id": row_id, **row}, ex.t)
        self.commit(args, ex, [row_id], intent={"table": table.name, "row": dict(row)})
        return row_id

    @handles("db_insert_rows")
    def insert_rows(self, args: Args, ex: Execution) -> Body:
        self.check_insert_rows(args)
        table = self._table(args["table"])
        rows = args["rows"]
        stop = len(rows) if ex.row_stop is None else ex.row_stop
        ids = [self._insert(table, rows[i], args, ex, i)
               for i in range(ex.row_start, stop)]
        return {"table": table.name, "inserted": len(ids), "ids": ids}

    @handles("db_insert_row")
    def insert_row(self, args: Args, ex: Execution) -> Body:
        self.check_insert_row(args)
        table = self._table(args["table"])
        row_id = self._insert(table, args["row"], args, ex, 0)
        return {"table": table.name, "id": row_id}

    @handles("db_upsert")
    def upsert(self, args: Args, ex: Execution) -> Body:
        """Insert or update; the answer is the resulting row either way, so a repeated upsert
        looks the same whether or not an earlier attempt had already applied it."""
        self.check_upsert(args)
        table = self._table(args["table"])
        key, values = args["key"], args["values"]
        for row_id, row in table.rows.all_current():
            if all(row.get(k) == v for k, v in key.items()):
                changed = [k for k, v in values.items() if row.get(k) != v]
                if changed:
                    row = {**row, **values}
                    table.rows.put(row_id, row, ex.t)
                    self.commit(args, ex, [row_id], kind="update",
                                targets=[row_id], sets=values, changed=changed)
                return {"table": table.name, "id": row_id, "row": row, "result": "upserted"}
        # Named after the key, not the request: whichever attempt inserts the row, it is the
        # same row, so a re-issued upsert answers identically whether or not the first landed.
        row_id = self.world.ids.derived("row", table.name, canonical_json(key))
        row = {"id": row_id, **key, **values}
        table.rows.put(row_id, row, ex.t)
        self.commit(args, ex, [row_id], sets=values)
        return {"table": table.name, "id": row_id, "row": row, "result": "upserted"}

    @handles("db_delete_rows")
    def delete_rows(self, args: Args, ex: Execution) -> Body:
        self.check_delete_rows(args)
        table = self._table(args["table"])
        deleted = [i for i in dict.fromkeys(args["ids"]) if table.rows.current(i) is not None]
        if deleted:
            effect = self.commit(args, ex, deleted, kind="update",
                                 targets=deleted)
        for row_id in deleted:
            table.rows.delete(row_id, ex.t)
            self.world.ledger.mark_undone(row_id, ex.t, by=effect.seq)
        return {"table": table.name, "deleted": len(deleted), "ids": deleted}

    # -- reads ---------------------------------------------------------------------------------
    @handles("db_query")
    def query(self, args: Args, ex: Execution) -> Body:
        self.check_query(args)
        table = self._table(args["table"])
        where = args.get("where") or {}
        at = self.view_time(ex)
        rows = [row for _, row, _ in table.rows.visible(at)
                if all(row.get(k) == v for k, v in where.items())]
        return {"table": table.name, "rows": rows[:100], "count": len(rows)}


SERVICES = (DatabaseService,)
