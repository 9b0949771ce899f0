"""Applications and their endpoint pairs: `tcp_bulk` (an FTP-like transfer of a file, or
unlimited data until `stop`) and `udp_cbr` (constant bit rate datagrams).

A flow object is what a packet names as its owner; links tell it about drops, the
endpoints about deliveries, so per-flow counters need no lookup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from engine.accounting import ack_clock_of, rtt_split
from engine.kernel import Kernel, Later, stream
from engine.packet import Kind, Owner, Packet, Path
from engine.protocol import IP_HEADER, UDP_HEADER
from engine.recorder import DelayStats, TcpProbe
from engine.result import RttSplit, TcpFlowSummary, UdpFlowSummary
from engine.tcp.cc import congestion_ops
from engine.tcp.receiver import TcpReceiver, advertised_window
from engine.tcp.recovery import recovery_for
from engine.tcp.sender import TcpSender

if TYPE_CHECKING:
    from simpy.events import Event

    from engine.scenario import TcpBulkFlow, UdpCbrFlow


class Flow(Owner):
    """Common bookkeeping: start/stop times, completion, delays, drops."""

    __slots__ = (
        "env",
        "spec",
        "start",
        "stop_at",
        "on_done",
        "done_at",
        "delays",
        "data_dropped",
        "other_dropped",
        "arrived",
    )

    def __init__(
        self,
        env: Kernel,
        spec: TcpBulkFlow | UdpCbrFlow,
        seed: int,
        on_done: Callable[[Flow], None],
    ):
        super().__init__(spec.id)
        self.env = env
        self.spec = spec
        self.start = float(spec.start)
        self.stop_at = float(spec.stop) if spec.stop is not None else None
        self.on_done = on_done
        self.done_at: float | None = None
        self.delays = DelayStats(seed, f"flow:{spec.id}:delays")
        self.data_dropped = 0
        self.other_dropped = 0
        self.arrived = 0

    @property
    def finite(self) -> bool:
        return self.stop_at is not None

    def finish(self) -> None:
        if self.done_at is None:
            self.done_at = self.env.now
            self.on_done(self)

    def dropped(self, pkt: Packet) -> None:
        if pkt.carries_data:
            self.data_dropped += 1
        else:
            self.other_dropped += 1

    def active_time(self, end: float) -> float:
        last = self.done_at if self.done_at is not None else end
        if self.stop_at is not None:
            last = min(last, self.stop_at)
        return max(last - self.start, 0.0)


class TcpFlow(Flow):
    __slots__ = (
        "total",
        "delivered_bytes",
        "rtt_n",
        "rtt_sum",
        "rtt_min",
        "rtt_max",
        "sender",
        "receiver",
        "probe",
        "lost_data",
        "lost_acks",
    )
    spec: TcpBulkFlow  # narrowed from Flow's

    def __init__(
        self,
        env: Kernel,
        spec: TcpBulkFlow,
        seed: int,
        fwd: Path,
        rev: Path,
        on_done: Callable[[Flow], None],
    ):
        super().__init__(env, spec, seed, on_done)
        tcp = spec.tcp
        self.total = spec.bytes
        self.delivered_bytes = 0
        self.rtt_n = 0
        self.rtt_sum = 0.0
        self.rtt_min = math.inf
        self.rtt_max = 0.0
        limit = self.total if self.total is not None else math.inf
        cc = congestion_ops(tcp)
        if cc.randomized:
            cc.random = stream(seed, f"flow:{spec.id}:cc").random
        self.sender = TcpSender(
            env, self, tcp, limit, fwd, cc, recovery_for(tcp, type(cc)), advertised_window(tcp)
        )
        self.receiver = TcpReceiver(env, self, tcp, rev + (self.sender,))
        per_ack = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
        clocked = ack_clock_of(fwd, rev, tcp.payload, tcp.headers, per_ack)
        if clocked is not None:
            self.sender.clock.ack_port, self.sender.clock.ack_hold = clocked
        # The last element of each path is the peer endpoint.
        self.sender.path = fwd + (self.receiver,)
        # Queueing per hop of each direction, charged to its receiving end, and the
        # packets lost at each hop (engine/accounting.py's round-trip split).
        self.receiver.waits = [0.0] * len(fwd)
        self.sender.waits = [0.0] * len(rev)
        self.lost_data = [0] * len(fwd)
        self.lost_acks = [0] * len(rev)
        self.probe = TcpProbe(spec.id)
        self.sender.probe = self.probe

    @property
    def finite(self) -> bool:
        return self.total is not None or self.stop_at is not None

    def schedule(self) -> None:
        Later(self.env, self.start, self._open, None)
        if self.stop_at is not None:
            Later(self.env, self.stop_at, self._stop, None)

    def _open(self, _: None) -> None:
        self.probe.start(self.sender)
        self.sender.open()

    def _stop(self, _: None) -> None:
        self.sender.stop()
        self.finish()

    def finish(self) -> None:
        if self.done_at is None:
            self.sender.clock.finish(self.env.now)
        super().finish()

    def dropped(self, pkt: Packet) -> None:
        super().dropped(pkt)
        lost = self.lost_data if pkt.path is self.sender.path else self.lost_acks
        lost[pkt.hop] += 1

    # --- notifications from endpoints and links ------------------------------------

    def data_received(self, pkt: Packet) -> None:
        now = self.env.now
        self.arrived += 1
        delay = now - pkt.sent_at
        self.delays.add(delay)
        self.probe.delay.sample(now, delay)

    def delivered(self, rcv_nxt: int) -> None:
        self.delivered_bytes = rcv_nxt
        if self.total is not None and rcv_nxt >= self.total:
            self.finish()

    def rtt_sample(self, r: float) -> None:
        self.rtt_n += 1
        self.rtt_sum += r
        if r < self.rtt_min:
            self.rtt_min = r
        if r > self.rtt_max:
            self.rtt_max = r

    # --- summary ---------------------------------------------------------------------

    def summary(self, end: float) -> TcpFlowSummary:
        s = self.sender
        completed = self.total is not None and self.delivered_bytes >= self.total
        done_at = self.done_at if completed else None
        active = self.active_time(end)
        lost = self.data_dropped
        arrived = self.arrived
        ratio_base = arrived + lost
        out = {
            "kind": "tcp",
            "completed": completed,
            "completion_time": done_at - self.start if done_at is not None else None,
            "bytes_delivered": self.delivered_bytes,
            "goodput_bps": self.delivered_bytes * 8 / active if active > 0 else 0.0,
            "throughput_pps": arrived / active if active > 0 else 0.0,
            "segments_sent": s.segments_sent,
            "retransmissions": s.retransmissions,
            "timeouts": s.timeouts,
            "fast_retransmits": s.fast_retransmits,
            "dup_acks": s.dup_acks_total,
            "packets_dropped": lost + self.other_dropped,
            "pdr": arrived / ratio_base if ratio_base else None,
            "plr": lost / ratio_base if ratio_base else None,
            "packets_received": arrived,
            "delivery_ratio": arrived / s.segments_sent if s.segments_sent else None,
            "rtt_mean": self.rtt_sum / self.rtt_n if self.rtt_n else None,
            "rtt_min": self.rtt_min if self.rtt_n else None,
            "rtt_max": self.rtt_max if self.rtt_n else None,
        }
        out.update(self.delays.summary())
        out["cwnd_max"] = self.probe.cwnd_max
        out["cwnd_mean"] = self.probe.cwnd_mean(done_at if done_at is not None else end)
        clock = s.clock
        last = end if self.stop_at is None else min(end, self.stop_at)
        clock.finish(max(last, self.start))
        out["time"] = clock.record()
        out["rtt_split"] = self._rtt_split()
        return TcpFlowSummary.model_validate(out)

    def _rtt_split(self) -> RttSplit | None:
        s = self.sender
        if s.clock.started is None:
            return None
        syns = s.syn_retries + 1 if self.spec.tcp.handshake else 0
        return rtt_split(
            s.path,
            s.segments_sent + syns,
            self.lost_data,
            self.receiver.path,
            self.receiver.sent,
            self.lost_acks,
            self.spec.tcp.payload,
            self.spec.tcp.headers,
        )


class UdpFlow(Flow):
    __slots__ = (
        "path",
        "size",
        "payload",
        "interval",
        "sent",
        "received_bytes",
        "sending_done",
        "waits",
    )

    def __init__(
        self,
        env: Kernel,
        spec: UdpCbrFlow,
        seed: int,
        fwd: Path,
        on_done: Callable[[Flow], None],
    ):
        super().__init__(env, spec, seed, on_done)
        self.path = fwd + (self,)
        self.size = int(spec.packet_size) + UDP_HEADER + IP_HEADER
        self.payload = int(spec.packet_size)
        self.interval = spec.packet_size * 8 / spec.rate
        self.sent = 0
        self.received_bytes = 0
        self.sending_done = False
        self.waits = [0.0] * len(fwd)  # queueing per hop (the flow is its path's endpoint)

    def schedule(self) -> None:
        self.env.process(self._run())

    def _run(self) -> Generator[Event, Any, None]:
        env = self.env
        yield env.timeout(self.start)
        stop = self.stop_at if self.stop_at is not None else math.inf
        n = 0
        while True:
            # Send times are computed from the start, not accumulated, so they do not drift.
            t = self.start + n * self.interval
            if t >= stop:
                break
            if t > env.now:
                yield env.timeout(t - env.now)
            pkt = Packet(self, Kind.UDP, self.size, self.path, env.now)
            pkt.seq = n
            pkt.length = self.payload
            self.sent += 1
            self.path[0].accept(pkt)
            n += 1
        self.sending_done = True
        self._settle()

    def _settle(self) -> None:
        """Done once the last datagram sent is accounted for, delivered or dropped."""
        if self.sending_done and self.arrived + self.data_dropped >= self.sent:
            self.finish()

    def accept(self, pkt: Packet) -> None:
        """The datagram reaches the destination host."""
        self.arrived += 1
        self.received_bytes += pkt.length
        self.delays.add(self.env.now - pkt.sent_at)
        if self.sending_done:
            self._settle()

    def dropped(self, pkt: Packet) -> None:
        super().dropped(pkt)
        if self.sending_done:
            self._settle()

    def summary(self, end: float) -> UdpFlowSummary:
        active = self.active_time(end)
        lost = self.data_dropped
        base = self.arrived + lost
        d = self.delays.summary()
        return UdpFlowSummary.model_validate(
            {
                "kind": "udp",
                "packets_sent": self.sent,
                "packets_received": self.arrived,
                "packets_dropped": lost,
                "pdr": self.arrived / base if base else None,
                "plr": lost / base if base else None,
                "throughput_bps": self.received_bytes * 8 / active if active > 0 else 0.0,
                "delay_mean": d["delay_mean"],
                "delay_p50": d["delay_p50"],
                "delay_p95": d["delay_p95"],
                "delay_p99": d["delay_p99"],
                "jitter": d["jitter"],
            }
        )
