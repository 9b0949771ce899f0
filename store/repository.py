"""A small generic repository: get by id (a tenant's own), insert, and cursor pages ordered
newest first."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import CursorResult, Executable, Select, select
from sqlalchemy.orm import Session

from store.models import Base

M = TypeVar("M", bound=Base)


def affected(session: Session, statement: Executable) -> int:
    """Rows an UPDATE or DELETE changed: the statement's cursor result's rowcount."""
    result = session.execute(statement)
    assert isinstance(result, CursorResult)
    return result.rowcount


class InvalidCursor(ValueError):
    """A cursor this service did not hand out."""


def encode_cursor(last_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(last_id.bytes).decode().rstrip("=")


def decode_cursor(cursor: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return uuid.UUID(bytes=raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursor(cursor) from exc


@dataclass(frozen=True, slots=True)
class Page(Generic[M]):
    items: Sequence[M]
    next_cursor: str | None


class Repository(Generic[M]):
    """Ids are UUIDv7, so ordering by id is ordering by creation time and makes a stable cursor."""

    model: ClassVar[type[Any]]

    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, id: uuid.UUID) -> M | None:
        return self.session.get(self.model, id)

    def owned(self, id: uuid.UUID, *, tenant_id: uuid.UUID) -> M | None:
        """The row (of a model with a `tenant_id`) if it is this tenant's: another tenant's
        is as absent as a missing one."""
        row: Any = self.get(id)
        return row if row is not None and row.tenant_id == tenant_id else None

    def insert(self, row: M) -> M:
        """`row` added and flushed, so its defaults (the id, timestamps) are set."""
        self.session.add(row)
        self.session.flush()
        return row

    def page(
        self, statement: Select[Any], *, cursor: str | None, limit: int, rows: bool = False
    ) -> Page[Any]:
        """A page of `statement`'s results newest first: entities, or with `rows` the rows
        of a select of columns (attribute access by column name)."""
        if cursor is not None:
            statement = statement.where(self.model.id < decode_cursor(cursor))
        ordered = statement.order_by(self.model.id.desc()).limit(limit + 1)
        found: Sequence[Any] = (
            self.session.execute(ordered).all() if rows else self.session.scalars(ordered).all()
        )
        return self.page_of(found, limit=limit)

    @staticmethod
    def page_of(found: Sequence[Any], *, limit: int) -> Page[Any]:
        """The page that up to `limit` + 1 rows newest first make (one more than the page
        holds says that another page follows)."""
        more = len(found) > limit
        items = found[:limit]
        return Page(items=items, next_cursor=encode_cursor(items[-1].id) if more else None)

    def select(self) -> Select[tuple[M]]:
        return select(self.model)
