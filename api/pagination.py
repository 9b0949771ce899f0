"""Cursor pagination: ``?cursor=&limit=`` in, ``{items, next_cursor}`` out."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel, Field

from api.deps import SettingsDep
from api.exceptions import Unprocessable, field_error

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page"
    )


class PageParams(BaseModel):
    cursor: str | None
    limit: int


async def page_params(
    settings: SettingsDep,
    cursor: Annotated[str | None, Query(max_length=64, description="From `next_cursor`")] = None,
    limit: Annotated[
        int | None,
        Query(ge=1, description="Items per page: default 50, at most 500 (configurable)"),
    ] = None,
) -> PageParams:
    # The ceiling is a setting (max_page_size), so it is checked here, not in the schema.
    if limit is not None and limit > settings.max_page_size:
        raise Unprocessable(
            "limit too large",
            errors=[field_error(["query", "limit"], f"must be <= {settings.max_page_size}")],
        )
    return PageParams(cursor=cursor, limit=limit or settings.page_size)


PageParamsDep = Annotated[PageParams, Depends(page_params)]
