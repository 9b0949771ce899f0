"""RACK-TLP loss detection (RFC 8985), as Linux runs it with SACK (tcp_recovery.c, on by
default since 4.18): losses are found by time, not by counting duplicate ACKs.

RACK ("recent ACK"): every segment sent is remembered with its transmission time, a
retransmission again with its own. On each ACK the most recently sent segment it reports
delivered (here the segment that triggered it, which the ACK echoes, as TCP timestamps
would) advances

    RACK.xmit_ts, RACK.end_seq = its send time and end    (if sent later than before)
    RACK.rtt = now - its send time

and a segment not yet SACKed or acknowledged is lost once

    sent before RACK.xmit_ts (or at the same time, ending lower), and
    its send time + RACK.rtt + RACK.reo_wnd <= now.

RACK.reo_wnd allows for reordering (tcp_rack_reo_wnd): 0 in recovery, or once DupThresh
segments are SACKed, as long as no reordering has been seen (the engine's links deliver
in order); min(min_RTT / 4, SRTT) otherwise, with a timer for what is not yet due
(tcp_rack_reo_timeout). A retransmission is a segment like any other: when a segment sent
after it is delivered, it is found lost again and resent, without the retransmission
timeout RFC 6675 needs (its HighRxt never goes back). Anything marked lost enters
recovery (Linux's tcp_time_to_recover: `if (tp->lost_out) return true`); duplicate ACKs
count for nothing more.

In recovery the pipe is Linux's, packets_out - sacked_out - lost_out + retrans_out: the
bytes outstanding, less those SACKed and those marked lost and not yet resent. The window
is PRR's (or RFC 6675's cwnd = ssthresh with `tcp.recovery: classic`), and each
transmission is the lowest lost segment, else new data (Linux's
tcp_xmit_retransmit_queue, then tcp_write_xmit; no rescue retransmission).

TLP (tail loss probe, tcp_schedule_loss_probe / tcp_send_loss_probe): in the open state,
with data outstanding, a probe timeout of 2 SRTT (+ 200 ms with one segment outstanding,
for the peer's delayed ACK; else + 2 ms) after the last ACK or new segment sends one
segment: new data if the receive window allows (past cwnd), else the last segment again.
Its ACK (or SACK) lets RACK find the tail losses that no later data would reveal. A probe
that was a retransmission and is acknowledged together with data sent after it repaired a
loss, and the window is cut as for one (Linux's CWR on the TLP episode, RFC 8985 7.4; with
no DSACK modelled, a probe whose original also arrived shows as a pure duplicate ACK).

After a retransmission timeout everything outstanding is resent by go-back-N (as Linux's
tcp_enter_loss marks it all lost); RACK resumes once the sender is open again.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, ClassVar

from engine.kernel import Timer
from engine.packet import Kind, Packet
from engine.tcp.ranges import Ranges
from engine.tcp.recovery.base import AckUse, Sender
from engine.tcp.recovery.sack import SackRecovery
from engine.tcp.state import DUPACK_THRESHOLD, Phase

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.state import TcpState

DELACK_ALLOWANCE = 0.2  # TCP_RTO_MIN: a lone segment's ACK may be delayed
PTO_SLACK = 0.002  # TCP_TIMEOUT_MIN, two jiffies
PTO_NO_RTT = 1.0  # TCP_TIMEOUT_INIT, before any RTT sample
INF = float("inf")


class RackRecovery(SackRecovery):
    name: ClassVar[str] = "rack"
    tracks_sends = True
    #: Set by `bind`, once the sender (and its clock) exists.
    reo_timer: Timer
    pto_timer: Timer

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        #: Bytes marked lost and not yet resent (Linux's LOST skbs not SACKED_RETRANS).
        self.lost = Ranges()
        #: Every transmission not yet judged, in time order: (send time, seq, end).
        self.sent: deque[tuple[float, int, int]] = deque()
        #: The latest retransmission time of each segment resent and still outstanding.
        self.resent: dict[int, float] = {}
        self.xmit_ts = -1.0  # RACK.xmit_ts
        self.end_seq = 0  # RACK.end_seq
        self.rtt = 0.0  # RACK.rtt
        self.advanced = False  # RACK.xmit_ts moved since the last detection
        self.last_seq = 0  # the start of the segment ending at snd_max (the probe's)
        self.tlp_high = -1  # TLP's snd_max when a probe was sent, -1 with none out
        self.tlp_retrans = False  # that probe resent data
        self.snd: Sender | None = None

    def bind(self, snd: Sender) -> None:
        self.snd = snd
        self.reo_timer = Timer(snd.env, self._reo_timeout)
        self.pto_timer = Timer(snd.env, self._probe)

    # --- what the sender reports --------------------------------------------------------

    def on_sent(self, seq: int, length: int, now: float, retransmission: bool) -> None:
        self.sent.append((now, seq, seq + length))
        if retransmission:
            self.resent[seq] = now
            return
        self.last_seq = seq
        # tcp_write_xmit schedules the probe after new data; the ACK that released it
        # has just re-armed it, so only a first flight needs it here.
        if self.pto_timer.deadline is None:
            snd = self.snd
            if snd is not None and snd.st.phase == Phase.OPEN:
                self._arm_probe(snd.st)

    def on_sack(self, snd: Sender, pkt: Packet) -> None:
        super().on_sack(snd, pkt)
        lost = self.lost
        if lost:
            lost.drop_below(pkt.ack)
            if pkt.sack:
                for start, end in pkt.sack:
                    lost.discard(start, end)  # delivered after all: not lost
        echo = pkt.echo
        if echo is not None and echo.kind == Kind.DATA:
            # RFC 8985 6.2 step 2, tcp_rack_advance: the most recently sent of what this
            # ACK reports delivered is the segment that triggered it.
            sent, end = echo.sent_at, echo.seq + echo.length
            if sent > self.xmit_ts or (sent == self.xmit_ts and end > self.end_seq):
                self.xmit_ts, self.end_seq = sent, end
            self.rtt = snd.st.now - sent
            self.advanced = True

    def on_timeout(self, snd: Sender) -> None:
        # tcp_enter_loss: every outstanding segment is lost; go-back-N resends them all.
        self.lost = Ranges()
        self.tlp_high = -1
        self.pto_timer.stop()
        self.reo_timer.stop()

    # --- ACKs -------------------------------------------------------------------------------

    def on_dupack(self, snd: Sender) -> None:
        st = snd.st
        self._tlp_ack(st, advanced_una=False)
        self._detect(st)
        if st.phase == Phase.RECOVERY:
            if self.prr is not None:
                self._prr_window(snd, safe_ack=False)
        elif st.phase == Phase.OPEN:
            self._maybe_enter(snd)

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        st = snd.st
        if (
            st.phase == Phase.OPEN
            and self.tlp_high < 0
            and not self.board.sacked
            and not self.resent
            and not self.lost
        ):
            # The common case, in order and nothing lost: nothing for RACK to judge
            # (see _detect), only the transmissions acknowledged to forget.
            sent, una = self.sent, st.snd_una
            while sent and sent[0][2] <= una:
                sent.popleft()
            self.advanced = False
            self._arm_probe(st)
            return AckUse.GROW
        self._tlp_ack(st, advanced_una=True)
        self._detect(st)
        if st.phase == Phase.RECOVERY:
            if st.snd_una >= st.recover:
                snd.exit_recovery()
            elif self.prr is not None:
                self._prr_window(snd, safe_ack=True)
            return AckUse.RECOVERY
        if st.phase == Phase.OPEN:
            if self._maybe_enter(snd):
                return AckUse.RECOVERY
            self._arm_probe(st)
        return AckUse.GROW

    def _maybe_enter(self, snd: Sender) -> bool:
        """tcp_time_to_recover: a segment marked lost starts recovery."""
        if not self.lost:
            return False
        self._enter_recovery(snd)
        self.pto_timer.stop()
        self._first_retransmission(snd, self.lost.starts[0])
        return True

    # --- RACK -------------------------------------------------------------------------------

    def reo_wnd(self, st: TcpState) -> float:
        """tcp_rack_reo_wnd, with no reordering ever seen."""
        if st.phase == Phase.RECOVERY or self.board.sacked.total >= DUPACK_THRESHOLD * st.mss:
            return 0.0
        quarter = st.min_rtt / 4 if st.min_rtt < INF else st.srtt
        return quarter if quarter < st.srtt else st.srtt

    def _detect(self, st: TcpState) -> None:
        """tcp_rack_mark_lost: mark what RACK deems lost; arm the reordering timer for
        the first of the rest that is not yet due."""
        if not self.advanced or st.phase == Phase.LOSS:
            return
        self.advanced = False
        if not self.board.sacked and not self.resent:
            # No hole, nothing resent: whatever was sent before the latest segment
            # delivered (in order, on an in-order path) is cumulatively acknowledged.
            sent, una = self.sent, st.snd_una
            while sent and sent[0][2] <= una:
                sent.popleft()
            return
        remaining = self._mark_lost(st)
        if remaining > 0:
            # Linux has one timer for these: the reordering timeout replaces the probe.
            self.reo_timer.start(remaining)
            self.pto_timer.stop()

    def _mark_lost(self, st: TcpState) -> float:
        """tcp_rack_detect_loss over the transmissions sent before RACK.xmit_ts, oldest
        first; returns how long the first one not yet lost has to go (0: none)."""
        una, now = st.snd_una, st.now
        xmit_ts, end_seq = self.xmit_ts, self.end_seq
        wait = self.rtt + self.reo_wnd(st)
        sent, resent, sacked, lost = self.sent, self.resent, self.board.sacked, self.lost
        while sent:
            t, seq, end = sent[0]
            if end <= una:
                sent.popleft()
                if resent and resent.get(seq) == t:
                    del resent[seq]
                continue
            if t > xmit_ts or (t == xmit_ts and end >= end_seq):
                return 0.0  # sent after the latest delivery: nothing to say yet
            latest = resent.get(seq) if resent else None
            if latest is not None and latest != t:
                sent.popleft()  # superseded by a later transmission
                continue
            if sacked.containing(seq) >= 0:
                sent.popleft()  # delivered
                if latest is not None:
                    del resent[seq]
                continue
            remaining = t + wait - now
            if remaining > 0:
                return remaining  # the later ones are due later still
            sent.popleft()
            lost.add(seq if seq > una else una, end)
        return 0.0

    def _reo_timeout(self) -> None:
        """tcp_rack_reo_timeout: the reordering allowance ran out."""
        snd = self.snd
        assert snd is not None
        st = snd.st
        st.now = snd.env.now
        if st.phase == Phase.LOSS:
            return
        before = self.lost.total
        self.advanced = True
        self._detect(st)
        if self.lost.total > before:
            if st.phase == Phase.OPEN:
                self._maybe_enter(snd)
            snd.try_send()
            snd.sent_by_timer()

    # --- recovery's choices -------------------------------------------------------------------

    def pipe(self, st: TcpState) -> int:
        return st.snd_max - st.snd_una - self.board.sacked.total - self.lost.total

    def next_seg(self, snd: Sender) -> tuple[int, int, bool] | None:
        """The lowest segment marked lost, else new data."""
        st = snd.st
        lost = self.lost
        if lost:
            seq = lost.starts[0]
            return seq, min(st.mss, st.snd_max - seq), False
        length = snd.new_data_length()
        if length:
            return st.snd_max, length, True
        return None

    def _retransmit(self, snd: Sender, seq: int) -> None:
        length = min(snd.st.mss, snd.st.snd_max - seq)
        snd.retransmit(seq, length)
        self.lost.discard(seq, seq + length)
        if self.prr is not None:
            self.prr.out += length

    # --- TLP -----------------------------------------------------------------------------

    def _arm_probe(self, st: TcpState) -> None:
        """tcp_schedule_loss_probe: PTO = 2 SRTT, plus the peer's delayed-ACK allowance
        when a single segment is outstanding."""
        if st.snd_una >= st.snd_max or self.reo_timer.running:
            return
        if st.srtt > 0:
            slack = DELACK_ALLOWANCE if st.snd_max - st.snd_una <= st.mss else PTO_SLACK
            self.pto_timer.start(2 * st.srtt + slack)
        else:
            self.pto_timer.start(PTO_NO_RTT)

    def _probe(self) -> None:
        """tcp_send_loss_probe: one segment, new if the peer's window allows, else the
        last one again; then the retransmission timer is re-armed."""
        snd = self.snd
        assert snd is not None
        st = snd.st
        st.now = snd.env.now
        if st.phase != Phase.OPEN or st.snd_una >= st.snd_max or self.tlp_high >= 0:
            return
        length = snd.new_data_length()
        if length:
            snd.send_new_data(length)
            self.tlp_retrans = False
        else:
            seq = self.last_seq if self.last_seq > st.snd_una else st.snd_una
            snd.retransmit(seq, st.snd_max - seq)
            self.tlp_retrans = True
        self.tlp_high = st.snd_max
        snd.restart_rto()
        snd.sent_by_timer()

    def _tlp_ack(self, st: TcpState, advanced_una: bool) -> None:
        """tcp_process_tlp_ack: the probe's episode ends when the ACK reaches it."""
        high = self.tlp_high
        if high < 0 or st.snd_una < high:
            return
        snd = self.snd
        assert snd is not None
        if not self.tlp_retrans:
            self.tlp_high = -1  # a probe of new data: RACK judges what it reveals
        elif st.snd_una > high:
            # The probe repaired a loss: cut the window as for one (Linux: CWR).
            self.tlp_high = -1
            if st.phase == Phase.OPEN:
                snd.reduce_window()
        elif not advanced_una:
            self.tlp_high = -1  # a pure duplicate: the original arrived too
