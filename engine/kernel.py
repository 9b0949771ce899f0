"""The scheduling primitives the engine builds on: a bare SimPy event that calls one
function with one value, a line of such deliveries that fall due in order (a link's
packets: one event per packet per hop, one queue entry per link), a second heap for the
events due well ahead (timers, flow starts and stops), and a lazily re-armed timer.

SimPy cannot cancel a scheduled event. A TCP retransmission timer restarted on every ACK
would otherwise leave one dead event per ACK in the heap; `Timer` instead keeps at most
one event outstanding and, when it fires early because the deadline moved later, re-arms
itself once for the new deadline.

And the run's randomness: one independent stream per component, derived from the run seed
and the component's id (adding a flow does not change another's losses).
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final, cast

from simpy import Environment, events
from simpy.core import StopSimulation
from simpy.events import Event, EventPriority, Process, Timeout

if TYPE_CHECKING:
    from engine.packet import Packet

#: A run advances in this many slices of its duration (simulate() reports progress and
#: checks for cancellation between two), one extra event each: the cost estimate counts them.
SLICES = 100

# Final, so that compiled code holds each in a C static: a plain module global is a look-up
# in the module's dict at every use, and these are used on every event.
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop
NORMAL: Final = events.NORMAL
URGENT: Final = events.URGENT


class Call:
    """An already-triggered event that calls `fn(value)` after `delay`.

    It is not a simpy Event but has what `Environment.step` reads of one (`callbacks`,
    `_ok`): a slotted object is cheaper to build, and this is built once per packet per
    hop. SimPy swaps an event's callbacks out before running them and never mutates the
    list, so every Call shares one; scheduling is `Environment.schedule` inlined.
    """

    __slots__ = ("callbacks", "fn", "value")
    _ok = True

    def __init__(self, env: Kernel, delay: float, fn: Callable[[Any], None], value: Any):
        # SimPy sets it to None while it runs them: mypyc checks the declared type.
        self.callbacks: list[Callable[[Call], None]] | None = _CALLBACKS
        self.fn = fn
        self.value = value
        queue: list[Any] = env._queue  # simpy's heap, holding a Call as if it were an Event
        heappush(queue, (env._now + delay, NORMAL, env.next_eid(), self))


def _invoke(event: Call) -> None:
    event.fn(event.value)


_CALLBACKS: Final[list[Callable[[Call], None]]] = [_invoke]


class Line:
    """The packets propagating on one link, delivered to their next hop in the order they
    were added: only the first is in the event queue.

    A link carrying a large window has thousands of packets propagating at once; as one
    event each they would fill the heap that every event of the run pays to pop. Each
    packet keeps the (time, priority, id) key it would have had as a `Call`, taken when
    it is added, and goes into the queue with that key once the one before it is out: the
    run processes exactly the same events in exactly the same order. The key waits in the
    packet (`due`, `eid`) rather than in an entry of its own: with a thousand flows every
    entry is cold when it is delivered, and freeing one touched two more cold objects (its
    neighbours in the collector's list) and its memory pool's header.
    """

    __slots__ = ("callbacks", "env", "_packets")
    _ok = True

    def __init__(self, env: Kernel):
        self.env = env
        self.callbacks: list[Callable[[Line], None]] | None = None
        self._packets: deque[Packet] = deque()  # in time order

    def add(self, delay: float, pkt: Packet) -> None:
        """Deliver `pkt` to the hop it has reached, `pkt.path[pkt.hop]`, after `delay`."""
        env = self.env
        at = env._now + delay
        packets = self._packets
        if packets and at < packets[-1].due:
            # Out of order (a rounding of the arithmetic): an event of its own.
            Call(env, delay, pkt.path[pkt.hop].accept, pkt)
            return
        eid = env.next_eid()
        if not packets:
            self.callbacks = _LINE_CALLBACKS
            queue: list[Any] = env._queue
            heappush(queue, (at, NORMAL, eid, self))
        pkt.due = at
        pkt.eid = eid
        packets.append(pkt)


def _deliver(line: Line) -> None:
    packets = line._packets
    pkt = packets.popleft()
    if packets:
        head = packets[0]
        line.callbacks = _LINE_CALLBACKS
        queue: list[Any] = line.env._queue
        heappush(queue, (head.due, NORMAL, head.eid, line))
    pkt.path[pkt.hop].accept(pkt)


_LINE_CALLBACKS: Final[list[Callable[[Line], None]]] = [_deliver]


class Kernel:
    """SimPy's environment, as a class of the engine's own, with a second heap, `later`,
    for events that are scheduled far ahead of when they fall due and are mostly
    superseded or few: retransmission and delayed-ACK timers, flow starts and stops.

    Not a subclass of SimPy's `Environment`: compiled, a subclass of an interpreted class
    keeps its fields in a dict, and every packet's event read the clock, the heap and the
    id counter by name (about 240 instructions a field). Here they are native fields. It
    has the fields and methods SimPy's events use (`schedule`, `_now`, `_active_proc`...),
    and runs `run()` and `step()` as SimPy's own code.

    Each flow keeps two or three `later` events pending for the whole run, so with a
    thousand flows they would be nearly all of SimPy's heap, and every packet's event would
    pay log2(3,000) tuple comparisons to pop where it pays log2(10) with one flow. Instead
    they wait in `later`, and SimPy's heap holds only the earliest of them (and any that
    were the earliest when scheduled). Every event keeps the (time, priority, id) key it
    would have had in SimPy's heap alone, so the run processes exactly the same events in
    exactly the same order.
    """

    def __init__(self, initial_time: float = 0.0) -> None:
        self._now = float(initial_time)
        self._queue: list[Any] = []  # (time, priority, id, event), as SimPy's
        self._eids = 0  # the next event's id: SimPy's `_eid` counter, as a native int
        self._active_proc: Process | None = None
        self.later: list[tuple[float, int, int, Later]] = []

    def next_eid(self) -> int:
        """Take the next event id (SimPy's `next(env._eid)`: compiled, that is a call
        through the builtins by name)."""
        eid = self._eids
        self._eids = eid + 1
        return eid

    def process(self, generator: Generator[Event, Any, Any]) -> Process:
        return Process(self._simpy, generator)

    def timeout(self, delay: float = 0, value: Any = None) -> Timeout:
        return Timeout(self._simpy, delay, value)

    def event(self) -> Event:
        return Event(self._simpy)

    def schedule(self, event: Any, priority: EventPriority = NORMAL, delay: float = 0) -> None:
        heappush(self._queue, (self._now + delay, priority, self.next_eid(), event))

    def step(self) -> None:
        Environment.step(self._simpy)

    def run(self, until: float | Event | None = None) -> Any:
        return Environment.run(self._simpy, until)

    @property
    def _simpy(self) -> Environment:
        """Itself, as SimPy's events and methods take it (they use only what it has)."""
        return cast(Environment, self)

    @property
    def now(self) -> float:
        """The current simulated time: SimPy's property, compiled. The engine reads it
        about once per event, and SimPy's own is an interpreted call each time."""
        return self._now

    def advance(self, until: float) -> None:
        """Process every event due before `until`, then stand at `until`: SimPy's
        `run(until)` and `step()` in one loop, which compiled calls a packet's `Line`, a
        `Call` or a `Later` directly rather than through the event protocol (its callbacks
        list, `_ok`, an interpreted frame per event). Other events (the sampler's process,
        the run's `done`) go through that protocol as in `step()`.

        The same events run in the same order and take the same ids: SimPy's `until` is an
        URGENT event at `until` that takes an id when scheduled, so an event due then runs
        first only if it is URGENT with a smaller id; a `StopSimulation` (from `until`
        itself, or the run's `done`) puts its event back with priority -1, as `step()` does,
        which takes an id too (the event put back has no callbacks left: it does nothing).
        """
        if until <= self._now:
            raise ValueError(f"until ({until}) must be after the current time ({self._now})")
        queue: list[Any] = self._queue
        stop_eid: int = self.next_eid()
        while queue:
            head = queue[0]
            due: float = head[0]
            if due > until or (due == until and (head[1], head[2]) > (URGENT, stop_eid)):
                break
            heappop(queue)
            self._now = due
            event = head[3]
            kind = type(event)
            if kind is Line:
                _deliver(event)
            elif kind is Call:
                call: Call = event
                call.fn(call.value)
            elif kind is Later:
                _invoke_later(event)
            elif kind is Periodic:
                _tick(event)
            elif self._step(event):
                return
        self._now = until
        # SimPy's `until` stops the run by a StopSimulation from its own callback, which
        # step() answers by scheduling it again (empty, priority -1): one more id.
        self.next_eid()

    def _step(self, event: Any) -> bool:
        """`Environment.step()` after its pop: run `event`'s callbacks; True when one
        stopped the simulation."""
        callbacks = event.callbacks
        event.callbacks = None
        for i, callback in enumerate(callbacks):
            try:
                callback(event)
            except StopSimulation:
                event.callbacks = callbacks[i + 1 :]
                self.schedule(event, EventPriority(-1))
                return True
        if not event._ok and not hasattr(event, "_defused"):
            raise type(event._value)(*event._value.args) from event._value
        return False


class Later:
    """A `Call` scheduled through the kernel's `later` heap: for events due well ahead."""

    __slots__ = ("callbacks", "fn", "value", "queued", "kernel")
    _ok = True

    def __init__(self, kernel: Kernel, delay: float, fn: Callable[[Any], None], value: Any):
        self.callbacks: list[Callable[[Later], None]] | None = _LATER_CALLBACKS
        self.fn = fn
        self.value = value
        self.kernel = kernel
        entry = (kernel._now + delay, NORMAL, kernel.next_eid(), self)
        later = kernel.later
        # SimPy's heap always holds the earliest entry of `later` (so it pops everything
        # in key order); a new entry joins it only when it becomes that earliest.
        if not later or entry < later[0]:
            self.queued = True
            queue: list[Any] = kernel._queue
            heappush(queue, entry)
        else:
            self.queued = False
        heappush(later, entry)


def _invoke_later(event: Later) -> None:
    # SimPy popped the earliest of all its entries; as the earliest of `later` is among
    # them, this is that one.
    kernel = event.kernel
    later = kernel.later
    heappop(later)
    if later:
        head = later[0]
        following = head[3]
        if not following.queued:
            following.queued = True
            queue: list[Any] = kernel._queue
            heappush(queue, head)
    event.fn(event.value)


_LATER_CALLBACKS: Final[list[Callable[[Later], None]]] = [_invoke_later]


class Periodic:
    """`fn(now)` every `interval`, from `interval` on, for the rest of the run: SimPy's
    process `while True: yield env.timeout(interval); fn(env.now)` as one slotted event,
    which the kernel calls directly (the process cost an interpreted generator, a Timeout
    and SimPy's `_resume` per beat: 17k instructions, 11% of a one-flow run of 200 s).

    The same entries, taking the same ids: the process's start (an URGENT event due now,
    its id taken here), then at each beat `fn` and the next beat's timeout (NORMAL, due
    `interval` after this one, its id taken after `fn`'s)."""

    __slots__ = ("callbacks", "kernel", "interval", "fn", "started")
    _ok = True

    def __init__(self, kernel: Kernel, interval: float, fn: Callable[[float], None]):
        self.kernel = kernel
        self.interval = interval
        self.fn = fn
        self.started = False
        self.callbacks: list[Callable[[Periodic], None]] | None = _PERIODIC_CALLBACKS
        queue: list[Any] = kernel._queue
        heappush(queue, (kernel._now, URGENT, kernel.next_eid(), self))


def _tick(event: Periodic) -> None:
    kernel = event.kernel
    if event.started:
        event.fn(kernel._now)
    else:
        event.started = True
    event.callbacks = _PERIODIC_CALLBACKS
    queue: list[Any] = kernel._queue
    heappush(queue, (kernel._now + event.interval, NORMAL, kernel.next_eid(), event))


_PERIODIC_CALLBACKS: Final[list[Callable[[Periodic], None]]] = [_tick]


class Timer:
    """A one-shot timer with a movable deadline and at most one pending event."""

    __slots__ = ("env", "fn", "deadline", "_due", "started")

    def __init__(self, env: Kernel, fn: Callable[[], None]):
        self.env = env
        self.fn = fn
        self.deadline: float | None = None
        self._due: float | None = None  # when the pending event fires, if there is one
        # When it was last armed: a retransmission timer's expiry cost the flow the time
        # since (engine/accounting.py).
        self.started = -1.0

    def start(self, delay: float) -> None:
        """Arm (or re-arm) the timer to fire `delay` seconds from now."""
        now = self.env.now
        self.started = now
        deadline = now + delay
        self.deadline = deadline
        due = self._due
        # A pending event earlier than the new deadline will re-arm itself when it fires;
        # only a deadline earlier than the pending event needs an event of its own.
        if due is None or due > deadline:
            self._due = deadline
            Later(self.env, delay, self._fire, deadline)

    def stop(self) -> None:
        self.deadline = None

    @property
    def running(self) -> bool:
        return self.deadline is not None

    def _fire(self, scheduled_for: float) -> None:
        if self._due != scheduled_for:
            return  # superseded by an earlier-scheduled event
        self._due = None
        deadline = self.deadline
        if deadline is None:
            return
        now = self.env.now
        if deadline > now:
            self._due = deadline
            Later(self.env, deadline - now, self._fire, deadline)
            return
        self.deadline = None
        self.fn()


def stream(seed: int, component: str) -> random.Random:
    """An independent random stream for one component, derived from the run seed."""
    digest = hashlib.sha256(f"{seed}/{component}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "little"))
