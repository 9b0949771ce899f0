"""``python -m api.keys``: issue, list and revoke API keys, against the configured database.

    python -m api.keys create --tenant acme --name ci   # prints the key once, on stdout
    python -m api.keys list [--tenant acme] [--json]
    python -m api.keys revoke KEY_ID_OR_PREFIX

Tenants are made by the first key issued for their name. The tenant ``default`` owns
what was made while authentication was off. Uses DATABASE_URL, or the embedded SQLite
file under TCPFR_DATA_DIR (migrated first, as ``make run`` would).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Any

import orjson
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.auth import KEY_PREFIX, new_key, prefix_of
from settings import Settings, get_settings
from store.db import make_engine, make_sessionmaker
from store.models import ApiKey
from store.tenants import ApiKeyRepository, TenantRepository


class CliError(Exception):
    """A message for the person at the terminal; exit status 1."""


def _session(settings: Settings) -> Session:
    if settings.is_sqlite:
        from api.serve import migrate  # alembic is heavy: only where we may need it

        settings.ensure_dirs()
        migrate()
    engine = make_engine(settings)
    if not inspect(engine).has_table("api_keys"):
        raise CliError(
            f"{settings.sqlalchemy_url.split('@')[-1]} has no tcpfr schema: "
            "run `alembic upgrade head` first"
        )
    return make_sessionmaker(engine)()


def create(session: Session, *, tenant: str, name: str) -> tuple[ApiKey, str]:
    """A new key for the tenant (made if new); returns the row and the key itself."""
    made = new_key()
    try:
        tenant_row = TenantRepository(session).get_or_create(tenant)
    except IntegrityError:  # another `create` made this tenant a moment ago
        session.rollback()
        tenant_row = TenantRepository(session).get_or_create(tenant)
    row = ApiKeyRepository(session).create(
        tenant_id=tenant_row.id, name=name, prefix=made.prefix, key_hash=made.key_hash
    )
    session.commit()
    return row, made.key


def find(session: Session, ref: str) -> ApiKey:
    """A key by id, by prefix (`tcpfr_` optional) or by the key itself."""
    keys = ApiKeyRepository(session)
    try:
        row = keys.get(uuid.UUID(ref))
    except ValueError:
        row = None
    if row is not None:
        return row
    prefix = prefix_of(ref) or ref.removeprefix(KEY_PREFIX).rstrip("_")
    matches = keys.by_prefix(prefix)
    if not matches:
        raise CliError(f"no API key with id or prefix {ref!r}")
    if len(matches) > 1:
        ids = ", ".join(str(m.id) for m in matches)
        raise CliError(f"prefix {ref!r} is ambiguous ({ids}): give the key's id")
    return matches[0]


def revoke(session: Session, ref: str) -> tuple[ApiKey, bool]:
    """Revoke a key; returns it and whether it was live until now."""
    row = find(session, ref)
    changed = ApiKeyRepository(session).revoke(row.id)
    session.commit()
    session.refresh(row)
    return row, changed


def listing(session: Session, *, tenant: str | None) -> list[dict[str, Any]]:
    tenants = TenantRepository(session)
    tenant_id = None
    if tenant is not None:
        found = tenants.by_name(tenant)
        if found is None:
            raise CliError(f"no tenant named {tenant!r}")
        tenant_id = found.id
    names = tenants.names()
    return [
        {
            "id": str(k.id),
            "tenant": names.get(k.tenant_id, str(k.tenant_id)),
            "name": k.name,
            "prefix": f"{KEY_PREFIX}{k.prefix}",
            "created_at": k.created_at.isoformat(timespec="seconds"),
            "last_used_at": k.last_used_at.isoformat(timespec="seconds")
            if k.last_used_at
            else None,
            "revoked_at": k.revoked_at.isoformat(timespec="seconds") if k.revoked_at else None,
        }
        for k in ApiKeyRepository(session).list(tenant_id=tenant_id)
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    cols = ["id", "tenant", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    cells = [cols] + [[str(r[c] or "-") for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= 200:
        raise argparse.ArgumentTypeError("1 to 200 characters")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m api.keys", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("create", help="issue a key; it is printed once and never again")
    c.add_argument("--tenant", required=True, type=_name, help="tenant name (made if new)")
    c.add_argument("--name", required=True, type=_name, help="what the key is for, e.g. ci")
    r = sub.add_parser("revoke", help="revoke a key at once")
    r.add_argument("key", help="the key's id, its prefix (tcpfr_xxxxxxxxxxxx) or the key")
    ls = sub.add_parser("list", help="keys, oldest first; secrets are never shown")
    ls.add_argument("--tenant", type=_name, help="only this tenant's keys")
    ls.add_argument("--json", action="store_true", help="one JSON array")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with _session(get_settings()) as session:
            if args.command == "create":
                row, key = create(session, tenant=args.tenant, name=args.name)
                # The key alone on stdout, so `KEY=$(python -m api.keys create ...)` works.
                print(key)
                print(
                    f"created key {row.id} ({KEY_PREFIX}{row.prefix}) for tenant {args.tenant!r}; "
                    "store it now: it is not shown again",
                    file=sys.stderr,
                )
            elif args.command == "revoke":
                row, changed = revoke(session, args.key)
                state = "revoked" if changed else "was already revoked"
                print(f"{row.id} ({KEY_PREFIX}{row.prefix}, {row.name!r}) {state}")
            else:
                rows = listing(session, tenant=args.tenant)
                if args.json:
                    print(orjson.dumps(rows).decode())
                else:
                    print(_table(rows))
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
