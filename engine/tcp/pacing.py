"""Pacing: when a sender's next segment may leave. Linux stamps each segment with an
earliest departure time (tcp_wstamp_ns: the previous one's plus its length over the pacing
rate) and the qdisc, or TCP's own hrtimer, holds it until then; ns-3 runs a pacing timer
the same way. A segment sent late does not bank credit for the next.

Linux spaces segments only once ten have been sent (tcp_update_skb_after_send:
data_segs_out >= 10), and ns-3 leaves the initial window unpaced: the first flight leaves
at once, the eleventh segment is the first to wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.kernel import Timer

if TYPE_CHECKING:
    from engine.kernel import Kernel

UNPACED_SEGMENTS = 10


class Pacer:
    """One flow's release time and the one timer that wakes the sender at it."""

    __slots__ = ("env", "timer", "next_release")

    def __init__(self, env: Kernel, release: Callable[[], None]) -> None:
        self.env = env
        self.timer = Timer(env, release)  # calls the sender back when a segment may go
        self.next_release = 0.0

    def holds(self) -> bool:
        """The next segment must wait; the timer will call the sender back at its time."""
        now = self.env.now
        release = self.next_release
        if now >= release:
            return False
        timer = self.timer
        if not timer.running:
            timer.start(release - now)
        return True

    def sent(self, length: int, rate: float, segments_sent: int, now: float) -> None:
        """A segment of `length` payload bytes left at `now`, the sender's
        `segments_sent`-th, while pacing at `rate` bytes/s (0: no rate yet)."""
        if rate > 0 and segments_sent >= UNPACED_SEGMENTS:
            release = self.next_release
            self.next_release = (release if release > now else now) + length / rate
