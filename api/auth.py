"""API keys: their format, their hash, and which tenant a request acts for.

A key reads ``tcpfr_<prefix>_<secret>``: the prefix (12 hex digits) is public and indexed,
so a person can tell keys apart and revoke one by it; the secret is 32 random bytes. Only
SHA-256 of the whole key is stored. A slow password hash (bcrypt, Argon2) exists to make
guessing a *low-entropy* secret expensive; guessing 256 random bits is out of reach
whatever the hash, so a slow one would only add tens of milliseconds to every request.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from api.exceptions import Unauthorized
from store.models import DEFAULT_TENANT_ID
from store.tenants import ApiKeyRepository
from store.types import utcnow

log = logging.getLogger(__name__)

KEY_PREFIX = "tcpfr_"
_KEY = re.compile(r"^tcpfr_(?P<prefix>[0-9a-f]{12})_(?P<secret>[A-Za-z0-9_-]{43})$")
#: last_used_at is a hint for people ("is this key still in use?"), not an audit log.
TOUCH_EVERY = timedelta(minutes=1)

# Declared as dependencies so the OpenAPI document shows both ways of presenting a key;
# auto_error=False because we answer 401 ourselves, as problem+json.
bearer_scheme = HTTPBearer(
    scheme_name="BearerKey",
    bearerFormat="tcpfr_<prefix>_<secret>",
    description="`Authorization: Bearer <API key>`; keys come from `python -m api.keys create`",
    auto_error=False,
)
header_scheme = APIKeyHeader(
    name="X-API-Key",
    scheme_name="ApiKeyHeader",
    description="`X-API-Key: <API key>`, the same key as for `Authorization: Bearer`",
    auto_error=False,
)


@dataclass(frozen=True, slots=True)
class NewKey:
    key: str  # shown once, never stored
    prefix: str
    key_hash: str


def hash_key(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def new_key() -> NewKey:
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(key=key, prefix=prefix, key_hash=hash_key(key))


def prefix_of(key: str) -> str | None:
    """The public prefix of a well-formed key, else None."""
    match = _KEY.match(key)
    return match["prefix"] if match else None


async def presented_key(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    header: Annotated[str | None, Depends(header_scheme)],
) -> str | None:
    """The key from `Authorization: Bearer`, else from `X-API-Key`. An `Authorization`
    header that is not a Bearer key presents an invalid key (a 401), whatever `X-API-Key`
    says: a client that sends credentials gets them judged, not silently passed over."""
    if bearer is not None and bearer.credentials:
        return bearer.credentials.strip()
    if "authorization" in request.headers:
        return INVALID_KEY
    return header.strip() if header else None


#: What an unusable `Authorization` header presents: no key can equal it.
INVALID_KEY = "invalid"


PresentedKey = Annotated[str | None, Depends(presented_key)]


def tenant_for(session: Session, key: str | None, *, auth: bool) -> uuid.UUID:
    """The tenant this key belongs to; with auth off, the default tenant whatever is sent."""
    if not auth:
        return DEFAULT_TENANT_ID
    if not key:
        raise Unauthorized(
            "an API key is required: `Authorization: Bearer <key>` or `X-API-Key: <key>`"
        )
    prefix = prefix_of(key)
    digest = hash_key(key)
    # Look up by the public prefix, then compare hashes in constant time: the database
    # never compares anything derived from the secret, and neither do we byte by byte.
    found = None
    if prefix is not None:
        for row in ApiKeyRepository(session).by_prefix(prefix):
            if hmac.compare_digest(row.key_hash, digest) and row.revoked_at is None:
                found = row
    if found is None:
        raise Unauthorized("the API key is not valid (wrong, or revoked)")
    now = utcnow()
    if found.last_used_at is None or found.last_used_at < now - TOUCH_EVERY:
        _touch(session, found.id, now)
    return found.tenant_id


def _touch(session: Session, key_id: uuid.UUID, now: datetime) -> None:
    try:
        if ApiKeyRepository(session).touch(key_id, now=now, every=TOUCH_EVERY):
            session.commit()
    except SQLAlchemyError:  # a busy database must not cost the request: it is a hint
        session.rollback()
        log.warning("could not record the use of API key %s", key_id, exc_info=True)
