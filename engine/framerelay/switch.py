"""A Frame Relay switch port's queue discipline (`FrQueue`): DE-first discard and FECN/BECN
marking around the configured discipline (DropTail or RED), with the congestion measure it
judges (`CycleAverage`).

Ports leaving an `fr_switch` node, and both directions of every `frame_relay` link, get an
`FrQueue`. The queue's fill is measured when a frame arrives: packets waiting (the one
being serialised excluded) / `limit_packets`, or queued bytes / `limit_bytes`. At or above
`de_discard_threshold` a DE frame is discarded before the configured discipline is asked
(`de_dropped`). Congestion marking judges, by default, the queue length averaged over
regeneration cycles as ANSI T1.618 Annex A describes it (`CycleAverage`;
`congestion_measure: instantaneous` judges the fill above instead): a frame the discipline
admits while that fill is at or above `congestion_threshold` is marked FECN, and a frame
of a PVC leaving a node where the port carrying the *opposite* direction of that PVC is at
or above it at that moment is marked BECN. Each frame is counted once per mark however
many switches mark it.

Frames not carried by a PVC cross Frame Relay ports unmarked and are never dropped as DE.
A DE frame discarded before RED does not update RED's average.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from engine.net import Discipline, Egress
from engine.packet import Packet
from engine.scenario import FrSwitchSpec

if TYPE_CHECKING:
    from engine.framerelay.pvc import PvcDirection


class CycleAverage:
    """A port's queue length averaged over regeneration cycles, as ANSI T1.618 Annex A
    has a frame relay switch judge incipient congestion (the algorithm DECbit introduced):
    a cycle begins when the outgoing circuit goes from idle to busy and runs through the
    busy period and the idle period after it; at any moment the average is the area under
    the queue length (frames or bytes in the port, the one being sent included) over the
    previous cycle and the current one so far, divided by their duration. Averaging over
    whole cycles ignores a burst that the port is about to clear. (The standard's text is
    not public; the algorithm is as Stallings, "Data and Computer Communications", ch.
    "Congestion Control", figure "A Frame Relay Algorithm", and Jain & Ramakrishnan's
    DECbit papers describe it.)

    O(1) per frame: the area of the frames still in the port is booked in full when they
    are admitted (each stays from its arrival to the end of its transmission, which the
    port's arithmetic fixes then) and the part after `now` is subtracted with running sums
    of their end times.
    """

    __slots__ = (
        "by_bytes",
        "prev_start",
        "prev_area",
        "start",
        "booked",
        "ends",
        "weights",
        "end_sum",
        "weight_sum",
    )

    def __init__(self, by_bytes: bool):
        self.by_bytes = by_bytes
        self.prev_start = self.start = 0.0
        self.prev_area = 0.0
        self.booked = 0.0  # sum of weight * (end - arrival) over the current cycle's frames
        self.ends: deque[float] = deque()  # end of transmission of each frame in the port
        self.weights: deque[int] = deque()  # their bytes (by_bytes only; else each weighs 1)
        self.end_sum = 0.0  # sum of weight * end over `ends`
        self.weight_sum = 0  # sum of weight over `ends`: the queue length

    def _trim(self, now: float) -> None:
        """Forget the frames sent by `now` (callers test `ends[0] <= now` first)."""
        ends = self.ends
        if self.by_bytes:
            weights = self.weights
            while ends and ends[0] <= now:
                weight = weights.popleft()
                self.end_sum -= weight * ends.popleft()
                self.weight_sum -= weight
        else:
            while ends and ends[0] <= now:
                self.end_sum -= ends.popleft()
            self.weight_sum = len(ends)
        if not ends:
            self.end_sum = 0.0  # no rounding left behind when idle

    def arrival(self, now: float) -> None:
        """A frame arrives: an idle port starts a new cycle here."""
        ends = self.ends
        if ends and ends[0] <= now:
            self._trim(now)
        if not ends and now > self.start and self.booked > 0:
            self.prev_start, self.prev_area = self.start, self.booked
            self.start, self.booked = now, 0.0

    def add(self, now: float, end: float, wire: int) -> None:
        """A frame admitted at `now` stays in the port until `end`."""
        self.ends.append(end)
        if self.by_bytes:
            self.weights.append(wire)
            self.booked += wire * (end - now)
            self.end_sum += wire * end
            self.weight_sum += wire
        else:
            self.booked += end - now
            self.end_sum += end
            self.weight_sum += 1

    def average(self, now: float) -> float:
        ends = self.ends
        if ends and ends[0] <= now:
            self._trim(now)
        span = now - self.prev_start
        if span <= 0:
            return self.weight_sum
        future = self.end_sum - now * self.weight_sum
        return (self.prev_area + self.booked - future) / span


class FrQueue:
    """A Frame Relay port's discipline: DE-first discard and FECN/BECN around `inner`."""

    __slots__ = (
        "inner",
        "port",
        "node",
        "congestion",
        "de_discard",
        "limit_packets",
        "limit_bytes",
        "limit",
        "cycle",
    )

    def __init__(self, inner: Discipline, port: Egress, switch: FrSwitchSpec):
        self.inner = inner
        self.port = port
        self.node = port.src
        self.congestion = switch.congestion_threshold
        self.de_discard = switch.de_discard_threshold
        self.limit_packets = inner.limit_packets
        self.limit_bytes = inner.limit_bytes
        limit = inner.limit_packets if inner.limit_packets is not None else inner.limit_bytes
        assert limit is not None  # the queue model requires one of the two limits
        self.limit: int = limit  # packets, or bytes when the queue counts bytes
        self.cycle: CycleAverage | None = None
        if switch.congestion_measure == "cycle_average":
            self.cycle = CycleAverage(by_bytes=inner.limit_packets is None)

    def fill(self, waiting: int) -> float:
        """Fraction of the queue's limit in use (the frame being serialised excluded)."""
        if self.limit_packets is not None:
            return waiting / self.limit_packets
        return self.port.queued_bytes / self.limit

    def congested(self, now: float) -> bool:
        cycle = self.cycle
        if cycle is not None:
            return cycle.average(now) >= self.congestion * self.limit
        return self.fill(self.port.waiting(now)) >= self.congestion

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool:
        cycle = self.cycle
        if cycle is not None:
            cycle.arrival(now)
        direction = pkt.pvc
        if direction is None:
            admitted = self.inner.admit(port, waiting, wire, now, pkt)
        else:
            admitted = self._admit_pvc(port, waiting, wire, now, pkt, direction)
        if admitted and cycle is not None:
            start = port.busy_until if port.busy_until > now else now
            cycle.add(now, start + wire * 8 / port.rate, wire)
        return admitted

    def _admit_pvc(
        self,
        port: Egress,
        waiting: int,
        wire: int,
        now: float,
        pkt: Packet,
        direction: PvcDirection,
    ) -> bool:
        circuit = direction.circuit
        limit = self.limit_packets
        fill = waiting / limit if limit is not None else port.queued_bytes / self.limit
        if pkt.de and fill >= self.de_discard:
            circuit.de_dropped += 1
            return False
        if not self.inner.admit(port, waiting, wire, now, pkt):
            return False
        if not pkt.fecn:
            cycle = self.cycle
            if cycle is not None:
                fill = cycle.average(now) / self.limit
            if fill >= self.congestion:
                pkt.fecn = True
                circuit.fecn_marked += 1
        if not pkt.becn:
            opposite = direction.opposite
            assert opposite is not None
            partner = opposite.egress_at.get(self.node)
            if partner is not None and partner.congested(now):
                pkt.becn = True
                circuit.becn_marked += 1
        return True
