"""The TCP sender's state machine, shared by every variant: sequence space, the three-way
handshake, the send window, ACK processing, the retransmission timer (RFC 6298) and the
points where the congestion-control and recovery strategies are called.

Sequence numbers count payload bytes from 0; the SYN is outside that space. The
application (a bulk transfer) has `limit` bytes to send, or unlimited until it stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.accounting import FlowClock, bottleneck_of
from engine.kernel import Timer
from engine.packet import Kind, Owner, Packet, Path
from engine.tcp.flight import cong_control, in_flight
from engine.tcp.handshake import on_synack, send_syn, syn_timeout
from engine.tcp.pacing import Pacer
from engine.tcp.rate import DeliveryRate
from engine.tcp.recovery.base import AckUse
from engine.tcp.rto import data_timeout
from engine.tcp.rtt import RttEstimator
from engine.tcp.state import DUPACK_THRESHOLD, INFINITE_WINDOW, Phase, TcpState

if TYPE_CHECKING:  # the recorder's probe, attached by the flow
    from engine.host import SmallQueue
    from engine.kernel import Kernel
    from engine.recorder import TcpProbe
    from engine.scenario import TcpSpec
    from engine.tcp.cc import CongestionOps
    from engine.tcp.recovery import NoRecovery


class TcpSender:
    # Slotted like the packet: one sender per flow is touched on every ACK, and a
    # thousand flows' state stays compact in the CPU caches.
    __slots__ = (
        "env",
        "flow",
        "spec",
        "path",
        "cc",
        "recovery",
        "st",
        "limit",
        "snd_buf",
        "rwnd",
        "rtt",
        "timer",
        "established",
        "syn_sent_at",
        "syn_retries",
        "dupacks",
        "rto_una",
        "timed_seq",
        "timed_at",
        "timestamps",
        "headers",
        "probe",
        "segments_sent",
        "retransmissions",
        "timeouts",
        "fast_retransmits",
        "dup_acks_total",
        "rate",
        "pacing",
        "pacer",
        "ss_samples",
        "local",
        "clock",
        "waits",
    )

    def __init__(
        self,
        env: Kernel,
        flow: Owner,
        spec: TcpSpec,
        limit: float,
        path: Path,
        cc: CongestionOps,
        recovery: NoRecovery,
        rwnd: int,
    ):
        self.env = env
        self.flow = flow
        self.spec = spec
        self.path = path
        self.cc = cc
        self.recovery = recovery
        # With timestamps every segment carries 12 bytes of options: a full segment holds
        # that much less payload (Linux's mss_cache), and cwnd counts such segments.
        self.st = st = TcpState(spec.payload, spec.initial_cwnd)
        self.timestamps = spec.timestamps
        self.headers = spec.headers
        cc.init(st)
        # HyStart / HyStart++ want every ACK's RTT sample in slow start.
        self.ss_samples = cc.slow_start.samples
        self.limit = limit  # bytes the application wants sent (inf: unlimited)
        self.snd_buf = spec.snd_buf if spec.snd_buf is not None else INFINITE_WINDOW
        self.rwnd = rwnd  # the peer's advertised window; learned from the SYN-ACK
        self.rtt = RttEstimator(
            spec.initial_rto, spec.min_rto, spec.max_rto, spec.timer_granularity
        )
        # Where the flow's time goes (engine/accounting.py): told at each send attempt.
        self.clock = FlowClock(bottleneck_of(path, spec.payload, self.headers), cc.limits_window)
        self.timer = Timer(env, self.on_timeout)
        self.waits: list[float] = []  # queueing of this flow's ACKs per hop, set by the flow
        self.established = not spec.handshake
        self.syn_sent_at: float | None = None
        self.syn_retries = 0
        self.dupacks = 0
        self.rto_una: int | None = None  # snd_una at the last timeout
        # One segment timed at a time (Karn's rule); -1 for none: a plain int, which the
        # compiled class holds unboxed (an optional one pointed to an object read per ACK).
        self.timed_seq = -1
        self.timed_at = 0.0
        self.probe: TcpProbe | None = None
        # counters read by the recorder
        self.segments_sent = 0
        self.retransmissions = 0
        self.timeouts = 0
        self.fast_retransmits = 0
        self.dup_acks_total = 0  # every duplicate ACK of the run (dupacks: the current run of them)
        # Delivery-rate samples for congestion control that models the path (BBR).
        self.rate = DeliveryRate() if cc.rate_based else None
        self.pacing = bool(spec.pacing) or cc.always_paces
        self.pacer = Pacer(env, self.try_send) if self.pacing else None
        recovery.bind(self)
        # This sender's share of its host's interface when the host pushes back
        # (engine/host.py, `egress: backpressure`); None when it drops like a router.
        self.local: SmallQueue | None = None

    # --- application side -------------------------------------------------------------

    def open(self) -> None:
        """The application starts the transfer: SYN, or data at once without a handshake."""
        self.clock.start(self.env.now, self.spec.handshake)
        if self.spec.handshake:
            send_syn(self)
        else:
            self.try_send()

    def stop(self) -> None:
        """The application stops producing data: nothing beyond what was already sent."""
        self.limit = min(self.limit, self.st.snd_max)

    # --- sending ----------------------------------------------------------------------

    def window(self, extra: int = 0) -> int:
        """The send window: min(cwnd + extra, rwnd, snd_buf); `extra` is Limited
        Transmit's allowance beyond cwnd."""
        w = self.rwnd if self.rwnd < self.snd_buf else self.snd_buf
        if self.cc.limits_window:
            cwnd = self.st.cwnd + extra
            if cwnd < w:
                return cwnd
        return w

    def try_send(self, extra: int = 0) -> None:
        """Send what the window and the application allow, or, in an RFC 6675 recovery,
        what the recovery strategy chooses."""
        if not self.established:
            return
        pacer = self.pacer
        if pacer is not None and pacer.holds():
            self.attempted()
            return
        recovery = self.recovery
        if recovery.paces_recovery and self.st.phase == Phase.RECOVERY:
            sent = recovery.transmit(self)
        else:
            sent = self._send_window(extra)
        if sent and self.probe is not None:
            self.probe.on_send(self.env.now, self.retransmissions)
        rate = self.rate
        if rate is not None and not rate.app_limited and self.st.snd_max >= self.limit:
            rate.mark_app_limited(self.in_flight())  # the application has no more data
        self.attempted()

    def attempted(self) -> None:
        """A send attempt ends: the flow's clock notes why (engine/accounting.py)."""
        self.clock.attempt(
            self.st, self.limit, self.rwnd, self.snd_buf, self.timer.started, self.env._now
        )

    def show_state(self) -> None:
        """The probe sees the state after an ACK or a timeout; its cwnd is the window the
        sender obeys (rwnd and snd_buf for a variant without a cwnd)."""
        probe = self.probe
        if probe is not None:
            cwnd = self.st.cwnd if self.cc.limits_window else self.window()
            probe.on_state(self.env.now, cwnd, self.rwnd, self.retransmissions)

    def may_send(self) -> bool:
        """Whether pacing lets a segment leave now; if not, the pacing timer is armed to
        call `try_send` when it may. Linux checks pacing before each retransmission too
        (tcp_xmit_retransmit_queue's tcp_pacing_check): recovery sends no burst."""
        pacer = self.pacer
        return pacer is None or not pacer.holds()

    def _send_window(self, extra: int) -> bool:
        """Send every segment the window and the application allow (RFC 1122 SWS rules)."""
        st = self.st
        mss = st.mss
        limit = self.limit
        window = self.window(extra)
        sent = False
        while st.snd_nxt < limit:
            # A float throughout (the limit may be inf): mypyc keeps a float variable
            # unboxed and will not assign it an int.
            length: float = limit - st.snd_nxt
            if length > mss:
                length = float(mss)
            usable = st.snd_una + window - st.snd_nxt
            if usable < length:
                # Sender-side silly-window avoidance: a short segment only when nothing
                # is outstanding (otherwise wait for the window to open by a full one).
                if usable <= 0 or st.snd_nxt != st.snd_una:
                    break
                length = float(usable)
            if st.snd_nxt < st.snd_max:
                # Resending after go-back-N: skip what the receiver has SACKed.
                skipped = self.recovery.skip_sacked(st.snd_nxt)
                if skipped != st.snd_nxt:
                    st.snd_nxt = min(skipped, st.snd_max)
                    continue
            pacer = self.pacer
            if pacer is not None and pacer.holds():
                break
            local = self.local
            if local is not None and not local.room(int(length)):
                break  # the data waits in the socket: the host's interface wakes us
            self._send_data(st.snd_nxt, int(length))
            st.snd_nxt += int(length)
            if st.snd_nxt > st.snd_max:
                st.snd_max = st.snd_nxt
            sent = True
        return sent

    def _send_data(self, seq: int, length: int) -> None:
        env = self.env
        now = env.now
        pkt = Packet(self.flow, Kind.DATA, length + self.headers, self.path, now)
        pkt.seq = seq
        pkt.length = length
        self.segments_sent += 1
        if seq < self.st.snd_max:
            self.retransmissions += 1
            # Karn: no sample across a retransmission (the ACK would be ambiguous or
            # would include the recovery's delay), as BSD clears t_rtt.
            self.timed_seq = -1
        elif self.timed_seq < 0:
            self.timed_seq = seq
            self.timed_at = now
        if not self.timer.running:
            self.timer.start(self.rtt.rto)  # RFC 6298 5.1
        if self.rate is not None:
            st = self.st
            retrans = seq < st.snd_max
            # A fast-recovery retransmission is a loss newly found; after a timeout every
            # segment outstanding was deemed lost at once (Linux's tcp_enter_loss), so the
            # go-back-N resends are not new losses.
            self.rate.on_send(
                pkt, now, st.snd_una == st.snd_max, retrans, retrans and st.phase != Phase.LOSS
            )
        pacer = self.pacer
        if pacer is not None:
            pacer.sent(length, self.cc.pacing_rate(self.st), self.segments_sent, now)
        if self.recovery.tracks_sends:
            self.recovery.on_sent(seq, length, now, seq < self.st.snd_max)
        self.path[0].accept(pkt)
        local = self.local
        if local is not None:
            local.sent(pkt.size)

    def in_flight(self) -> int:
        return in_flight(self.st, self.recovery, self.rate)  # engine.tcp.flight

    # --- what recovery strategies ask for (engine.tcp.recovery.base.Sender) ---------------

    def retransmit(self, seq: int, length: int) -> None:
        self._send_data(seq, length)

    def send_new_data(self, length: int) -> None:
        st = self.st
        seq = st.snd_max
        self._send_data(seq, length)
        st.snd_nxt = st.snd_max = seq + length

    def new_data_length(self) -> int:
        st = self.st
        if st.snd_max >= self.limit:
            return 0
        length = int(min(st.mss, self.limit - st.snd_max))
        window = self.rwnd if self.rwnd < self.snd_buf else self.snd_buf
        if st.snd_max + length > st.snd_una + window:
            return 0
        local = self.local
        if local is not None and not local.room(length):
            return 0  # new data waits in the socket in recovery too (engine/host.py)
        return length

    def begin_fast_retransmit(self) -> None:
        self.fast_retransmits += 1
        self.congestion_event()

    def retransmit_first_unacked(self) -> None:
        """Resend the segment at snd_una (fast retransmit, partial ACKs); the caller
        decides whether the retransmission timer restarts."""
        st = self.st
        length = min(st.mss, st.snd_max - st.snd_una)
        if length > 0:
            self._send_data(st.snd_una, length)

    def go_back_n(self) -> None:
        """Resume sending from the first unacknowledged byte (timeouts; Tahoe)."""
        st = self.st
        st.snd_nxt = st.snd_una
        self.timed_seq = -1
        self.timer.stop()

    def congestion_event(self) -> None:
        """A loss was detected: let the strategy record it, then set ssthresh and the
        recovery point (RFC 5681 eq. 4, RFC 6582 `recover`)."""
        st = self.st
        self.cc.on_congestion_event(st)
        self.cc.slow_start.on_congestion(st)
        st.ssthresh = self.cc.ssthresh_after_loss(st)
        st.limited_sent = 0
        st.recover = st.snd_max

    def sent_by_timer(self) -> None:
        """A recovery timer (a tail loss probe, RACK's reordering timer) sent, and may have
        re-armed the retransmission timer: the recorder sees it, and the time accounting
        notes why the sender stops here, as after every other arming."""
        if self.probe is not None:
            self.probe.on_send(self.env.now, self.retransmissions)
        self.attempted()

    def reduce_window(self) -> None:
        self.congestion_event()
        self.st.cwnd = min(self.st.cwnd, self.st.ssthresh)

    def exit_recovery(self) -> None:
        """Fast recovery is over: deflate cwnd to ssthresh and reopen (RFC 5681 3.2 step 6,
        RFC 6582 full ACK option 2, RFC 6675 on reaching RecoveryPoint)."""
        st = self.st
        st.cwnd = st.ssthresh
        self.set_phase(Phase.OPEN)
        self.cc.on_recovery_exit(st)

    def restart_rto(self) -> None:
        self.timer.start(self.rtt.rto)

    def set_phase(self, phase: Phase) -> None:
        self.st.phase = phase
        self.cc.on_state_change(self.st, phase)

    # --- receiving ACKs ---------------------------------------------------------------

    def accept(self, pkt: Packet) -> None:
        """An ACK (or SYN-ACK) from the receiver reaches the sender."""
        if pkt.kind == Kind.SYNACK:
            on_synack(self, pkt)
        elif self.established:
            self._on_ack(pkt)

    def _on_ack(self, pkt: Packet) -> None:
        st = self.st
        ack = pkt.ack
        if ack > st.snd_max:
            return  # acknowledges data never sent: ignore (RFC 793)
        st.now = self.env.now
        rate = self.rate
        una, dup_acks = st.snd_una, self.dup_acks_total
        prior_in_flight = self.in_flight() if rate is not None else 0
        if pkt.sack is not None or self.recovery.scoreboard:
            self.recovery.on_sack(self, pkt)
        if ack > st.snd_una:
            acked = ack - st.snd_una
            if self.timestamps:
                # RFC 7323 4.1 (RTTM): every ACK that advances snd_una is a sample, from the
                # timestamp it echoes, which after a retransmission is the retransmission's
                # own (4.3): no ambiguity, so Karn's rule does not apply, and the sample
                # collapses a backed-off RTO (RFC 6298 5's closing note; Linux's
                # tcp_ack_update_rtt: "only reset backoff on valid RTT measurement").
                self._rtt_sample(st.now - pkt.tsecr)
            elif self.timed_seq >= 0 and ack > self.timed_seq:
                self._rtt_sample(st.now - self.timed_at)
                self.timed_seq = -1
            if self.cc.ack_samples:
                self.cc.on_ack_rtt(st, st.now - pkt.echo_at)
            st.snd_una = ack
            if st.snd_nxt < ack:
                st.snd_nxt = ack
            self.rwnd = pkt.wnd
            self.dupacks = 0
            st.limited_sent = 0
            if st.phase == Phase.LOSS and ack >= st.recover:
                self.set_phase(Phase.OPEN)
            use = self.recovery.on_new_ack(self, acked)
            if use == AckUse.GROW:
                if st.cwnd < st.ssthresh and self.ss_samples and st.phase == Phase.OPEN:
                    self.cc.slow_start.on_sample(st, st.now - pkt.echo_at)
                self.cc.on_ack(st, acked, st.cwnd < min(self.rwnd, self.snd_buf))
            # RFC 6298 5.2/5.3: stop the timer when all is acknowledged, else restart it.
            if st.snd_una >= st.snd_max:
                self.timer.stop()
            elif use != AckUse.RECOVERY_KEEP_TIMER:
                self.timer.start(self.rtt.rto)
        elif ack == st.snd_una and st.snd_max > st.snd_una and pkt.wnd == self.rwnd:
            # RFC 5681 section 2: a duplicate ACK (no data, same ACK, same window,
            # data outstanding).
            self.dupacks += 1
            self.dup_acks_total += 1
            self.recovery.on_dupack(self)
            if (
                self.dupacks < DUPACK_THRESHOLD
                and st.phase == Phase.OPEN
                and self.recovery.limited_transmit
            ):
                self._limited_transmit()
        else:
            self.rwnd = pkt.wnd
        if rate is not None:
            moved = st.snd_una - una
            dupack = self.dup_acks_total != dup_acks
            cong_control(st, self.cc, self.recovery, rate, pkt, moved, dupack, prior_in_flight)
        self.try_send()
        self.show_state()

    def _limited_transmit(self) -> None:
        """RFC 3042 / RFC 5681 3.2: on the first and second duplicate ACKs send new data
        while FlightSize stays within cwnd + 2 SMSS and rwnd allows; cwnd is unchanged."""
        st = self.st
        before = st.snd_max
        if st.snd_nxt == before:  # new data only, never a go-back-N resend
            self.try_send(self.dupacks * st.mss)
            st.limited_sent += st.snd_max - before

    def _rtt_sample(self, r: float) -> None:
        self.rtt.sample(r)
        st = self.st
        st.srtt = self.rtt.srtt or 0.0
        if r < st.min_rtt:
            st.min_rtt = r
        self.cc.on_rtt_sample(st, r)
        self.flow.rtt_sample(r)

    # --- the retransmission timer -------------------------------------------------------

    def on_timeout(self) -> None:
        """The retransmission timer expired: the SYN's (engine/tcp/handshake.py) or the
        data's (engine/tcp/rto.py)."""
        if self.established:
            data_timeout(self)
        else:
            syn_timeout(self)
