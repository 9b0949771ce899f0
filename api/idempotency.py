"""Idempotent POSTs (runs, sweeps): the header, and the check that a replayed key comes
with the request it was first used for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Protocol, TypeVar

from fastapi import Header
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.exceptions import IdempotencyKeyReused, field_error

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Retrying a POST with the same key returns what the first one made; "
        "the same key with a different body is a 422",
    ),
]


class _Keyed(Protocol):
    request_fingerprint: str | None


K = TypeVar("K", bound=_Keyed)


def replay(existing: K, fingerprint: str) -> K:
    """What the key made before, if this is the same request; a 422 if it is not."""
    if existing.request_fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used with a different request body",
            errors=[
                field_error(["header", "Idempotency-Key"], "key already used for another request")
            ],
        )
    return existing


R = TypeVar("R")


def create_once(
    session: Session,
    *,
    key: str | None,
    fingerprint: str,
    lookup: Callable[[str], K | None],
    insert: Callable[[], R],
) -> tuple[R | K, bool]:
    """Create what a POST asks for, once per Idempotency-Key: `(made, True)` when `insert`
    made it (committed here), `(earlier, False)` when the key already made it.

    Concurrent retries of one request race on the key's unique index: the loser's commit
    raises IntegrityError, and it replays what the winner made. `insert` may raise
    anything else (a bad request, a limit); that propagates and nothing is stored.
    """
    if key is not None and (existing := lookup(key)) is not None:
        return replay(existing, fingerprint), False
    try:
        made = insert()
        session.commit()
    except IntegrityError:
        session.rollback()
        if key is None or (existing := lookup(key)) is None:
            raise
        return replay(existing, fingerprint), False
    return made, True
