"""Idempotent POSTs (runs, sweeps): the header, and the check that a replayed key comes
with the request it was first used for."""

from __future__ import annotations

from typing import Annotated, Protocol, TypeVar

from fastapi import Header

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
