"""The runs list: a page of a tenant's runs and its version, read by one statement, and
the version alone, so that a list that has not changed is checked for a fraction of what
reading it costs (``api.runs.endpoints``' cached pages)."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    Select,
    Text,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    tuple_,
)

from store.models import Run, RunStatus
from store.repository import Page, Repository, decode_cursor

#: What a list shows of each run (``api.runs.present.run_fields`` reads these and no
#: others): the columns its query selects, and whose values make a page's version.
LIST_COLUMNS: list[Any] = [
    Run.id,
    Run.status,
    Run.progress,
    Run.cancel_requested,
    Run.scenario_id,
    Run.preset,
    Run.scenario_name,
    Run.scenario_hash,
    Run.seed,
    Run.engine_version,
    Run.cache_hit,
    Run.source_run_id,
    Run.attempts,
    Run.created_at,
    Run.started_at,
    Run.heartbeat_at,
    Run.finished_at,
    Run.error,
]

#: The version of a page that shows no run.
EMPTY_VERSION = ""


@dataclass(frozen=True, slots=True)
class VersionedPage:
    """A page of the runs list and its version (``RunListRepository.list_version``), both read
    by one statement, so the version is the one of exactly these rows."""

    page: Page[Any]
    version: str


def _version_of(rows: Select[Any], dialect: str) -> Select[tuple[str]]:
    """One short row that changes whenever anything `rows` selects changes: every value
    of every row written out by the database, unambiguously, so equal versions are equal
    pages. Not a counter the writers bump: nothing can forget to bump it (a worker, the
    reconciler, a scenario's deletion setting `scenario_id` to NULL), and nobody queues on
    a shared counter's row lock."""
    page = rows.subquery()
    if dialect == "postgresql":
        # A record's text form quotes each field as needed (floats: their shortest exact
        # form); md5 of the rows keeps the answer short.
        row: ColumnElement[Any] = cast(tuple_(*page.c), Text)
        joined = func.md5(func.string_agg(row, literal_column("';'")))
    else:
        # SQLite: each row a JSON array (text escaped, integers exact), but a REAL as
        # quote() writes it, exactly (JSON would round it to 15 digits; a float changed
        # by one ulp is tests/integration/test_runs_list.py's); group_concat, not
        # json_group_array, so that no rows is NULL, as on PostgreSQL. (quote() on every
        # value, the obvious way, costs 2.5 times as much.)
        values = [func.quote(c) if isinstance(c.type, Float) else c for c in page.c]
        joined = func.group_concat(func.json_array(*values), literal_column("';'"))
    return select(func.coalesce(joined, EMPTY_VERSION))


@functools.cache
def _list_statements(
    dialect: str, *, status: bool, scenario_id: bool, preset: bool, after: bool
) -> tuple[Select[Any], Select[tuple[str]]]:
    """The runs list's statements for one combination of filters, built once: a page's
    rows with its version alongside, and the version alone. Their values are bound at
    execution (``tenant_id``, ``status``, ``scenario_id``, ``preset``, ``after``, ``rows``);
    building a statement this size anew costs more than running it."""
    stmt = select(*LIST_COLUMNS).where(Run.tenant_id == bindparam("tenant_id"))
    if status:
        stmt = stmt.where(Run.status == bindparam("status"))
    if scenario_id:
        stmt = stmt.where(Run.scenario_id == bindparam("scenario_id"))
    if preset:
        stmt = stmt.where(Run.preset == bindparam("preset"))
    if after:
        stmt = stmt.where(Run.id < bindparam("after"))
    rows = stmt.order_by(Run.id.desc()).limit(bindparam("rows", type_=Integer))
    version = _version_of(rows, dialect)
    return rows.add_columns(version.scalar_subquery().label("list_version")), version


class RunListRepository(Repository[Run]):
    model = Run

    def list(
        self,
        *,
        tenant_id: uuid.UUID,
        cursor: str | None,
        limit: int,
        status: RunStatus | None = None,
        scenario_id: uuid.UUID | None = None,
        preset: str | None = None,
    ) -> VersionedPage:
        """The tenant's runs, newest first, as rows of the columns a list shows (plain
        rows, not entities: nothing is updated through them, and the identity map would
        double the cost of a page), with the page's version, read by the same statement."""
        (stmt, _), params = self._list(tenant_id, cursor, limit, status, scenario_id, preset)
        found = self.session.execute(stmt, params).all()
        version = found[0].list_version if found else EMPTY_VERSION
        return VersionedPage(self.page_of(found, limit=limit), version)

    def list_version(
        self,
        *,
        tenant_id: uuid.UUID,
        cursor: str | None,
        limit: int,
        status: RunStatus | None = None,
        scenario_id: uuid.UUID | None = None,
        preset: str | None = None,
    ) -> str:
        """The version of the page `list` gives for the same arguments now: equal versions,
        equal pages. One short row instead of a page, so a list that has not changed is
        checked for a fraction of what reading it costs."""
        (_, stmt), params = self._list(tenant_id, cursor, limit, status, scenario_id, preset)
        return str(self.session.execute(stmt, params).scalar_one())

    def _list(
        self,
        tenant_id: uuid.UUID,
        cursor: str | None,
        limit: int,
        status: RunStatus | None,
        scenario_id: uuid.UUID | None,
        preset: str | None,
    ) -> tuple[tuple[Select[Any], Select[tuple[str]]], dict[str, Any]]:
        """The statements for these filters (`_list_statements`) and their values."""
        params: dict[str, Any] = {"tenant_id": tenant_id, "rows": limit + 1}
        if status is not None:
            params["status"] = status
        if scenario_id is not None:
            params["scenario_id"] = scenario_id
        if preset is not None:
            params["preset"] = preset
        if cursor is not None:
            params["after"] = decode_cursor(cursor)
        statements = _list_statements(
            self.session.get_bind().dialect.name,
            status=status is not None,
            scenario_id=scenario_id is not None,
            preset=preset is not None,
            after=cursor is not None,
        )
        return statements, params
