"""Per-tenant request rate, with the `limits` library: a moving window per limit, kept in
Redis when the broker is Redis (so every API process counts together), else in memory."""

from __future__ import annotations

import math
import time
import uuid

from limits import RateLimitItem, parse_many
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from api.exceptions import TooManyRequests
from settings import Settings


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        self.items: list[RateLimitItem] = (
            parse_many(settings.rate_limit) if settings.rate_limit else []
        )
        self.storage: Storage | None = None
        if self.items:
            url = settings.broker_url
            if url is not None and url.startswith(("redis://", "rediss://")):
                self.storage = RedisStorage(
                    "async+" + url, implementation="redispy", key_prefix="tcpfr-rate"
                )
            else:
                self.storage = MemoryStorage()
        self.strategy = MovingWindowRateLimiter(self.storage) if self.storage else None

    async def check(self, tenant_id: uuid.UUID) -> None:
        """Count one request of the tenant's; a 429 with Retry-After when over a limit."""
        if self.strategy is None:
            return
        key = str(tenant_id)
        for item in self.items:
            if not await self.strategy.hit(item, key):
                stats = await self.strategy.get_window_stats(item, key)
                wait = max(1, math.ceil(stats.reset_time - time.time()))
                raise TooManyRequests(
                    f"more than {item} requests for this tenant; retry in {wait} s",
                    retry_after=wait,
                    limit=str(item),
                )
