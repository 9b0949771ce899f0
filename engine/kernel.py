"""The two scheduling primitives the engine builds on: a bare SimPy event that calls one
function with one value (the hot path: one per packet per hop), and a lazily re-armed timer.

SimPy cannot cancel a scheduled event. A TCP retransmission timer restarted on every ACK
would otherwise leave one dead event per ACK in the heap; `Timer` instead keeps at most
one event outstanding and, when it fires early because the deadline moved later, re-arms
itself once for the new deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simpy import Environment
from simpy.events import NORMAL, Event


class Call(Event):
    """An already-triggered event that calls `fn(value)` after `delay`."""

    __slots__ = ()

    def __init__(self, env: Environment, delay: float, fn: Callable[[Any], None], value: Any):
        self.env = env
        self.callbacks = [_invoke]
        self._ok = True
        self._value = (fn, value)
        env.schedule(self, NORMAL, delay)


def _invoke(event: Event) -> None:
    fn, value = event._value
    fn(value)


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
        if pending is None or pending._value[1] > deadline:
            self._pending = Call(self.env, delay, self._fire, deadline)

    def stop(self) -> None:
        self.deadline = None

    @property
    def running(self) -> bool:
        return self.deadline is not None

    def _fire(self, scheduled_for: float) -> None:
        pending = self._pending
        if pending is None or pending._value[1] != scheduled_for:
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
