"""BECN-adaptive shaping of one PVC direction at its entry router (`becn_shaping: true`), as
Cisco IOS Frame Relay traffic shaping with `frame-relay adaptive-shaping becn` does it.

The shaper spaces frames at a current rate starting at CIR (frame i leaves at
max(arrival, previous departure + previous bits / rate)). When a BECN-marked frame of the
opposite direction leaves the PVC at this router, the rate is cut by 25%, at most once per
Tc, not below `min_cir` (default CIR / 2, Cisco's mincir default). After 16 Tc without BECN
the rate grows by (Bc + Be) / 16 bits per Tc, once per Tc, until it is back at CIR (from
CIR / 2 with Be = 0, 8 steps). Those steps are applied lazily at the next frame or BECN
and traced at the time they were due. A delayed frame costs one event (its release to the
access port); the shaper holds at most as many frames (or bytes) as the entry port's queue
limit, and counts the overflow in `shaper_dropped`.

It has no Bc/Be burst allowance (a pure rate spacer) and ignores FECN, as Cisco routers do.
"""

from __future__ import annotations

import math
from collections import deque

from engine.recorder import Trace

STEP_DOWN = 0.75  # rate multiplier per BECN step (Cisco adaptive shaping)
QUIET_INTERVALS = 16  # Tc intervals without BECN before the rate steps back up
STEP_UP_SHARE = 16  # each step back up adds (Bc + Be) / 16 per Tc to the rate


class Shaper:
    """A rate spacer whose rate BECN steps down toward `floor` and quiet time back to CIR."""

    __slots__ = (
        "cir",
        "floor",
        "tc",
        "rate",
        "free_at",
        "_waiting",
        "queued_bytes",
        "limit_packets",
        "limit_bytes",
        "last_down",
        "quiet_from",
        "up_steps",
        "trace",
        "burst",
    )

    def __init__(self, cir: float, floor: float, tc: float, burst: float):
        self.cir, self.floor, self.tc = cir, floor, tc
        self.burst = burst  # Bc + Be
        self.rate = cir
        self.free_at = 0.0
        # (release time, bytes) of frames not yet released
        self._waiting: deque[tuple[float, int]] = deque()
        self.queued_bytes = 0
        self.limit_packets: int | None = None
        self.limit_bytes: int | None = None
        self.last_down = -math.inf
        self.quiet_from = math.inf
        self.up_steps = 0
        self.trace = Trace("bit/s")
        self.trace.add(0.0, cir)

    def release_time(self, bits: int, now: float) -> float | None:
        """When a frame of `bits` arriving now leaves the shaper; None if the queue is full."""
        self._recover(now)
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            self.queued_bytes -= waiting.popleft()[1]
        start = self.free_at
        if start > now:
            size = bits // 8
            if self.limit_packets is not None:
                if len(waiting) >= self.limit_packets:
                    return None
            elif self.limit_bytes is not None and self.queued_bytes + size > self.limit_bytes:
                return None
            waiting.append((start, size))
            self.queued_bytes += size
        else:
            start = now
        self.free_at = start + bits / self.rate
        return start

    def on_becn(self, now: float) -> None:
        self._recover(now)
        if now - self.last_down >= self.tc:
            self.last_down = now
            rate = max(self.floor, self.rate * STEP_DOWN)
            if rate != self.rate:
                self.rate = rate
                self.trace.add(now, rate)
        self.quiet_from = now + QUIET_INTERVALS * self.tc
        self.up_steps = 0

    def _recover(self, now: float) -> None:
        """Apply the step-ups due by `now`: one per Tc from `quiet_from` on, up to CIR."""
        if self.rate >= self.cir or now < self.quiet_from:
            return
        due = int((now - self.quiet_from) / self.tc) + 1
        while self.up_steps < due and self.rate < self.cir:
            at = self.quiet_from + self.up_steps * self.tc
            self.up_steps += 1
            self.rate = min(self.cir, self.rate + self.burst / STEP_UP_SHARE / self.tc)
            self.trace.add(at, self.rate)
