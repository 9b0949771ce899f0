"""The two scheduling primitives the engine builds on: a bare SimPy event that calls one
function with one value (the hot path: one per packet per hop), and a lazily re-armed timer.

SimPy cannot cancel a scheduled event. A TCP retransmission timer restarted on every ACK
would otherwise leave one dead event per ACK in the heap; `Timer` instead keeps at most
one event outstanding and, when it fires early because the deadline moved later, re-arms
itself once for the new deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

from simpy import Environment
from simpy.events import NORMAL


class Call:
    """An already-triggered event that calls `fn(value)` after `delay`.

    It is not a simpy Event but has what `Environment.step` reads of one (`callbacks`,
    `_ok`): a slotted object is cheaper to build, and this is built once per packet per
    hop. SimPy swaps an event's callbacks out before running them and never mutates the
    list, so every Call shares one; scheduling is `Environment.schedule` inlined.
    """

    __slots__ = ("callbacks", "fn", "value")
    _ok = True

    def __init__(self, env: Environment, delay: float, fn: Callable[[Any], None], value: Any):
        self.callbacks = _CALLBACKS
        self.fn = fn
        self.value = value
        heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), self))


def _invoke(event: Call) -> None:
    event.fn(event.value)


_CALLBACKS = [_invoke]


class Timer:
    """A one-shot timer with a movable deadline and at most one pending event."""

    __slots__ = ("env", "fn", "deadline", "_pending")

    def __init__(self, env: Environment, fn: Callable[[], None]):
        self.env = env
        self.fn = fn
        self.deadline: float | None = None
        self._pending: Call | None = None

    def start(self, delay: float) -> None:
        """Arm (or re-arm) the timer to fire `delay` seconds from now."""
        deadline = self.env.now + delay
        self.deadline = deadline
        pending = self._pending
        # A pending event earlier than the new deadline will re-arm itself when it fires;
        # only a deadline earlier than the pending event needs an event of its own.
        if pending is None or pending.value > deadline:
            self._pending = Call(self.env, delay, self._fire, deadline)

    def stop(self) -> None:
        self.deadline = None

    @property
    def running(self) -> bool:
        return self.deadline is not None

    def _fire(self, scheduled_for: float) -> None:
        pending = self._pending
        if pending is None or pending.value != scheduled_for:
            return  # superseded by an earlier-scheduled event
        self._pending = None
        deadline = self.deadline
        if deadline is None:
            return
        now = self.env.now
        if deadline > now:
            self._pending = Call(self.env, deadline - now, self._fire, deadline)
            return
        self.deadline = None
        self.fn()
