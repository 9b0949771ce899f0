"""Where each TCP flow's time went: its life, from the SYN (or its first segment) to the
last byte delivered (or the end of the run, or `stop`), split into states that add up
exactly to its duration, and its round trip split into propagation, serialisation and
queueing at each hop.

The states follow Linux's chrono accounting (net/ipv4/tcp_output.c: `tcp_chrono_start`
and `tcp_chrono_stop` at each `tcp_write_xmit`, read out as `tcpi_busy_time`,
`tcpi_rwnd_limited` and `tcpi_sndbuf_limited`): the sender knows at each send attempt why
it stopped, and a state lasts until an attempt stops for another reason. Linux's busy
chrono (data queued to send) is split further here:

- **handshake**: SYN sent, SYN-ACK not yet back;
- **busy**: the flow's bottleneck was transmitting while the flow had data outstanding:
  the pipe was full, with the flow's packets or anyone else's. The bottleneck is the pipe
  of the data path with the least payload capacity: a port, a PVC's contract (busy for
  the time its admitted frame bits take at CIR + Be/Tc), or a stage that spaces packets
  at a rate of its own and offers itself as a pipe (`bottleneck_of`);
- otherwise, while the bottleneck was idle, the reason the sender was not sending more:
  **receive_window**, **send_buffer** (the smaller of the two windows was full),
  **slow_start** / **congestion_avoidance** (cwnd was, by the congestion phase),
  **recovery** (fast recovery, or after a timeout until what was outstanding then is
  acknowledged), **application** (nothing outstanding and nothing to send), and
  **ack_clock** before the windows: on a path whose way back clocks the flow slower than
  its bottleneck carries (ADSL's uplink; `ack_clock_of`), the window waited on ACKs that
  the way back's port held queued for longer than a segment takes at the bottleneck;
- **timeout**: from the moment the retransmission timer was last armed until it
  expired, for every expiry the sender acted on (SYNs included): what each RTO cost.

Cost: each send attempt classifies the sender in a few comparisons and calls into the
books only when the state changes (`FlowClock.change`: O(1)); when the retransmission timer
was re-armed (`Timer.started`, every arming is followed by a send attempt at the same
instant) the attempt notes the time and the bottleneck's busy-time counter. The busy part of
each state's stretch is the bottleneck's busy-time difference across it (`Egress.busy_time`,
exact), read at the changes only. A timeout re-books [armed, expiry] as `timeout`: the
stretch since the arming is cut at the arming time with the reading taken then, and when
states changed after the arming the books go back to a snapshot taken, once, at the first
change after it.

Queueing per hop: every queue that holds a packet charges the wait to the packet's
receiving endpoint (`path[-1].waits[index of the hop]`): `Egress` does it inline for the
packets it transmits; any other stage that holds packets (a PVC's shaper) calls
`charge_wait`. Per hop the mean is over the flow's packets that left it (sent less those
dropped at or before it), so each is exact.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

from engine.framerelay import PvcDirection
from engine.net import Egress
from engine.packet import Packet
from engine.result import FlowTime, RttHop, RttSplit
from engine.tcp.state import Phase
from engine.trace import Trace

if TYPE_CHECKING:
    from engine.packet import Path
    from engine.tcp.state import TcpState


class Pipe(Protocol):
    """What the books read of a flow's bottleneck: seconds of transmission booked so far
    (the scheduled future included) and when the booked transmissions end."""

    @property
    def busy_total(self) -> float: ...

    @property
    def busy_until(self) -> float: ...


class State(IntEnum):
    """A flow's state, as `flow.<id>.state` numbers it and FlowTime names it."""

    HANDSHAKE = 0
    BUSY = 1
    RECEIVE_WINDOW = 2
    SEND_BUFFER = 3
    SLOW_START = 4
    CONGESTION_AVOIDANCE = 5
    RECOVERY = 6
    APPLICATION = 7
    TIMEOUT = 8
    ACK_CLOCK = 9


#: FlowTime's field for each state, in State's order.
FIELDS = tuple(s.name.lower() for s in State)
_BUSY: Final = int(State.BUSY)
_TIMEOUT: Final = int(State.TIMEOUT)
_RECEIVE_WINDOW: Final = int(State.RECEIVE_WINDOW)
_SEND_BUFFER: Final = int(State.SEND_BUFFER)
_SLOW_START: Final = int(State.SLOW_START)
_AVOIDANCE: Final = int(State.CONGESTION_AVOIDANCE)
_RECOVERY: Final = int(State.RECOVERY)
_APPLICATION: Final = int(State.APPLICATION)
_ACK_CLOCK: Final = int(State.ACK_CLOCK)
# The phases as the sender sets them (members, compared by identity: an Enum attribute
# lookup per send attempt costs more than the rest of the classification).
_OPEN: Final = Phase.OPEN
# The states whose stretches give the bottleneck's busy time to `busy`: those with data
# outstanding. The handshake, an idle application and a timer's wait keep their whole time.
_OVERLAID = frozenset(
    {
        State.RECEIVE_WINDOW,
        State.SEND_BUFFER,
        State.SLOW_START,
        State.CONGESTION_AVOIDANCE,
        State.RECOVERY,
        State.ACK_CLOCK,
    }
)


class ContractPipe:
    """A PVC's traffic contract seen as a pipe: busy for as long as the frame bits its
    policer admitted take at the contract's long-run rate (CIR + Be/Tc). The policer
    queues nothing, so nothing is booked ahead (`busy_until`)."""

    __slots__ = ("direction", "busy_until")

    def __init__(self, direction: PvcDirection) -> None:
        self.direction = direction
        self.busy_until = -math.inf

    @property
    def busy_total(self) -> float:
        return self.direction.admitted_bits / self.direction.long_run_rate


def bottleneck_of(path: Path, mss: int, headers: int) -> Pipe:
    """The pipe of `path` with the least payload capacity for a full segment (the first of
    equals): a port, a PVC's contract, or any stage that spaces packets at a rate of its
    own and says so with `pipe_rate(ip_size)` (frame bits per second less framing, as a
    port's) beside `busy_total` and `busy_until`. `mss` is a full segment's payload and
    `headers` its IP and TCP headers, options included."""
    return _narrowest(path, mss, headers)[0]


def ack_clock_of(
    fwd: Path, rev: Path, mss: int, headers: int, per_ack: int
) -> tuple[Egress, float] | None:
    """The port of the ACKs' way back that clocks the flow, when it clocks it slower than
    its data bottleneck carries (the diagnosis' `ack_clock_bps`, without its margin): the
    port of `rev` with the fewest bare ACKs (`headers` bytes) a second, each worth `per_ack` segments; and
    the time one full segment takes at the data bottleneck (a backlog of ACKs longer than
    that at the port holds the window back). None when the way back is the faster."""
    _, rate = _narrowest(fwd, mss, headers)
    port: Egress | None = None
    acks = math.inf
    for hop in rev:
        if isinstance(hop, Egress) and hop.rate / (hop.wire(headers) * 8) < acks:
            port, acks = hop, hop.rate / (hop.wire(headers) * 8)
    if port is None or acks * per_ack * mss * 8 >= rate:
        return None
    return port, mss * 8 / rate


def _narrowest(path: Path, mss: int, headers: int) -> tuple[Pipe, float]:
    """bottleneck_of's pipe, and its payload rate (bit/s)."""
    size = mss + headers
    best: Pipe | None = None
    best_rate = math.inf
    for hop in path:
        pipe: Pipe
        if hasattr(hop, "pipe_rate"):
            pipe, rate = hop, hop.pipe_rate(size) * mss / size
        elif isinstance(hop, Egress):
            pipe, rate = hop, hop.rate * mss / hop.wire(size)
        elif isinstance(hop, PvcDirection) and hop.first_port is not None:
            wire = hop.first_port.wire(size)
            pipe, rate = ContractPipe(hop), hop.long_run_rate * mss / wire
        else:
            continue
        if rate < best_rate:
            best, best_rate = pipe, rate
    assert best is not None  # a route has at least one port
    return best, best_rate


def _busy(pipe: Pipe, now: float) -> float:
    """Seconds the pipe spent transmitting up to `now` (`Egress.busy_time` of any pipe)."""
    until = pipe.busy_until
    return pipe.busy_total - (until - now if until > now else 0.0)


class FlowClock:
    """The books of one TCP flow: seconds per state, the current state and when it began."""

    __slots__ = (
        "pipe",
        "windowed",
        "totals",
        "state",
        "since",
        "busy0",
        "armed_at",
        "armed_busy",
        "undo",
        "undo_at",
        "trace",
        "started",
        "ended",
        "ack_port",
        "ack_hold",
    )

    def __init__(self, pipe: Pipe, windowed: bool) -> None:
        self.pipe = pipe
        self.windowed = windowed  # the congestion control limits the window (not `none`)
        self.totals = [0.0] * len(State)
        self.state = int(State.HANDSHAKE)
        self.since = 0.0
        self.busy0 = 0.0  # the pipe's busy time at `since`
        # The retransmission timer's last arming and the pipe's busy time then.
        self.armed_at = -math.inf
        self.armed_busy = 0.0
        # The totals as they were at `undo_at` (an arming that states changed after).
        self.undo: list[float] = []
        self.undo_at = math.nan
        self.trace = Trace("state")
        self.started: float | None = None
        self.ended: float | None = None
        # The ACKs' way back, where it clocks the flow slower than its bottleneck carries
        # (`ack_clock_of`): a window held while its backlog exceeds `ack_hold` seconds is
        # `ack_clock`'s time.
        self.ack_port: Egress | None = None
        self.ack_hold = math.inf

    # --- what the sender tells -------------------------------------------------------------

    def start(self, now: float, handshake: bool) -> None:
        """The flow opens: it sends its SYN, or (without a handshake) its first segments,
        which the send attempt right after classifies."""
        self.started = self.since = now
        self.busy0 = _busy(self.pipe, now)
        self.state = int(State.HANDSHAKE if handshake else State.APPLICATION)

    def attempt(
        self, st: TcpState, limit: float, rwnd: int, buf: int, armed: float, now: float
    ) -> None:
        """A send attempt ended: why the sender is not sending more now, from its state,
        the application's `limit`, the peer's window, its send buffer, when its timer was
        last armed and the time (values, not the sender: it imports this module). Every
        arming of the retransmission timer is followed by an attempt at the same instant
        (an ACK's, a transmission's, a timeout's): the arming is noted here, with the
        bottleneck's busy time then, for a timeout that would re-book everything since."""
        if st.phase is not _OPEN:
            code = _RECOVERY  # fast recovery, or go-back-N after a timeout
        elif st.snd_nxt >= limit and st.snd_una >= st.snd_max:
            code = _APPLICATION  # nothing outstanding, nothing to send
        else:
            # The smallest window binds (the receiver's or the send buffer's before cwnd
            # when equal: cwnd that reaches them stops growing; the send buffer before the
            # receiver's, as a window set by both needs snd_buf raised too). A sender with
            # data left but none outstanding (the last flight) waits on it too.
            cwnd = st.cwnd
            ack = self.ack_port
            if ack is not None and ack.busy_until - now > self.ack_hold:
                code = _ACK_CLOCK  # the window waits on ACKs queued on the way back
            elif self.windowed and cwnd < rwnd and cwnd < buf:
                code = _SLOW_START if cwnd < st.ssthresh else _AVOIDANCE
            else:
                code = _SEND_BUFFER if buf <= rwnd else _RECEIVE_WINDOW
        if armed != self.armed_at:
            self.armed_at = armed
            pipe = self.pipe  # its busy time at the arming: _busy(), inlined
            until = pipe.busy_until
            self.armed_busy = pipe.busy_total - (until - armed if until > armed else 0.0)
        if code != self.state:
            self.change(code, now)

    def change(self, code: int, now: float) -> None:
        """The state becomes `code` at `now`."""
        if self.ended is not None:
            return
        self._close(now)
        self.state = code

    def timeout(self, now: float, armed: float) -> None:
        """The retransmission timer, armed at `armed`, expired and the sender acts on it:
        [armed, now] was the wait for it, whatever the books said meanwhile."""
        if self.ended is not None:
            return
        if armed != self.armed_at:
            # An arming no send attempt followed (a SYN's): in a state without busy time.
            assert self.state not in _OVERLAID, "every data arming is followed by an attempt"
            self.armed_at, self.armed_busy = armed, self.busy0
        if armed >= self.since:
            self._close(armed, self.armed_busy)
        else:
            # States changed after the arming: the books as they were at the arming.
            assert self.undo_at == armed, "a change after an arming snapshots the books"
            self.totals[:] = self.undo
            self.trace.rewind(armed)
        self.totals[_TIMEOUT] += now - armed
        self.trace.add(armed, _TIMEOUT)
        self.since = now
        self.busy0 = _busy(self.pipe, now)

    def finish(self, now: float) -> None:
        """The flow's life ends (last byte delivered, `stop`, or the end of the run)."""
        if self.ended is not None or self.started is None:
            return
        self._close(now)
        self.ended = now

    # --- the books ---------------------------------------------------------------------------

    def _close(self, now: float, busy_now: float | None = None) -> None:
        """Book [since, now] to the current state, its busy part to `busy`."""
        since = self.since
        armed = self.armed_at
        if armed >= since and self.undo_at != armed:
            # The first change after an arming: keep the books as they were at it, for a
            # timeout that would re-book everything since.
            self.undo = self._split(self.totals.copy(), armed, self.armed_busy)
            self.undo_at = armed
        if busy_now is None:
            busy_now = _busy(self.pipe, now)
        state = self.state
        before = self.totals[state]
        self._split(self.totals, now, busy_now)
        if now > since:
            # The stretch's label in the series: `busy` when the pipe was busy for most of it.
            label = state
            if state in _OVERLAID and self.totals[state] - before < (now - since) / 2:
                label = _BUSY
            self.trace.add(since, label)
        self.since = now
        self.busy0 = busy_now

    def _split(self, totals: list[float], now: float, busy_now: float) -> list[float]:
        """`totals` with [since, now] booked: to the state, less the pipe's busy time across
        it for the states with data outstanding."""
        span = now - self.since
        if span <= 0:
            return totals
        state = self.state
        if state in _OVERLAID:
            busy = busy_now - self.busy0
            # Within a nanosecond a second of the whole stretch or of none of it (the
            # counters' rounding), it is: no 1e-15 s states.
            if busy < span * 1e-9:
                busy = 0.0
            elif busy > span * (1 - 1e-9):
                busy = span
            totals[_BUSY] += busy
            totals[state] += span - busy
        else:
            totals[state] += span
        return totals

    def record(self) -> FlowTime:
        started, ended = self.started, self.ended
        duration = ended - started if ended is not None and started is not None else 0.0
        values = dict(zip(FIELDS, self.totals, strict=True))
        return FlowTime(duration=duration, **values)


#: How closely a flow's states must add up to its duration (relative; the issue's 1e-9).
BOOKS_TOLERANCE = 1e-9


def unbalanced(t: FlowTime) -> str | None:
    """Why the books `t` do not balance, or None: no state negative, and the states add
    up to the duration within BOOKS_TOLERANCE (relative, or 1e-12 s for a flow of none)."""
    negative = [name for name in FIELDS if getattr(t, name) < 0]
    if negative:
        return f"negative states {negative}"
    total = math.fsum(getattr(t, name) for name in FIELDS)
    if abs(total - t.duration) > max(BOOKS_TOLERANCE * t.duration, 1e-12):
        return f"states add up to {total!r} s, the duration is {t.duration!r} s"
    return None


def spent(t: FlowTime) -> list[tuple[str, float]]:
    """The states the flow spent time in, the costliest first (FlowTime's order on ties)."""
    states = [(name, getattr(t, name)) for name in FIELDS]
    return sorted((s for s in states if s[1] > 0), key=lambda s: -s[1])


def charge_wait(pkt: Packet, hop: int, wait: float) -> None:
    """A stage that held `pkt` for `wait` seconds (at `hop`, its index in the packet's
    path) charges it to the flow's books for that hop (Egress inlines this)."""
    pkt.path[-1].waits[hop] += wait


def rtt_split(
    data_path: Path,
    data_sent: int,
    data_lost: list[int],
    ack_path: Path,
    ack_sent: int,
    ack_lost: list[int],
    mss: int,
    headers: int,
) -> RttSplit:
    """The mean round trip of the flow's packets, hop by hop: each port's propagation
    delay and serialisation (of a full segment forward, a bare ACK back) and the mean wait
    at every hop that held them."""
    hops = _hops(data_path, data_sent, data_lost, "data", mss + headers)
    hops += _hops(ack_path, ack_sent, ack_lost, "ack", headers)
    return RttSplit(
        propagation=sum(h.propagation for h in hops),
        serialisation=sum(h.serialisation for h in hops),
        queueing=sum(h.queueing for h in hops),
        hops=hops,
    )


def _hops(path: Path, sent: int, lost: list[int], direction: Any, size: int) -> list[RttHop]:
    waits: list[float] = path[-1].waits
    out = []
    left = sent
    for i, hop in enumerate(path[:-1]):
        left -= lost[i]
        wait = waits[i] / left if left > 0 else 0.0
        if isinstance(hop, Egress):
            name = hop.key
            prop, ser = hop.delay, hop.wire(size) * 8 / hop.rate
        elif waits[i] > 0:
            name = _stage_name(hop)
            prop = ser = 0.0
        else:
            continue
        out.append(
            RttHop(
                hop=name,
                direction=direction,
                propagation=prop,
                serialisation=ser,
                queueing=wait,
                packets=max(left, 0),
            )
        )
    return out


def _stage_name(hop: Any) -> str:
    """A stage other than a port that held packets: a PVC direction's shaper, by its PVC."""
    circuit = getattr(hop, "circuit", None)
    if circuit is not None:
        return f"pvc:{circuit.id}"
    return type(hop).__name__
