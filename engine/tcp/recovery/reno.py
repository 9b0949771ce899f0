"""Recovery by duplicate ACKs alone, without SACK.

- `TahoeRecovery`: fast retransmit, then slow start from one segment (4.3BSD-Tahoe;
  like NS-2's Agent/TCP, it goes back N to the first unacknowledged segment).
- `RenoRecovery`: RFC 5681 3.2 fast retransmit / fast recovery, which ends on the first
  ACK of new data, so several losses in one window usually end in a timeout.
- `NewRenoRecovery`: RFC 6582: stay in recovery until `recover` is acknowledged,
  retransmitting one segment per partial ACK.

`recover` (RFC 6582 section 3.2 step 1) also guards every variant against a second fast
retransmit for losses of the same window, after a timeout's go-back-N for instance.
Each lets the sender use Limited Transmit (RFC 3042) on the first two duplicate ACKs, as
ns-2 (`singledup_`) and ns-3 (`LimitedTransmit`) do by default.

With `tcp.recovery: prr` (the default) Reno and NewReno do not inflate cwnd by a segment
per duplicate ACK: every ACK in recovery sets cwnd = pipe + PRR's sndcnt (`prr.py`) and
the strategy chooses what is sent (the hole first, then new data), as Linux runs its
"Reno" (SACK-less) recovery. Without SACK, pipe and DeliveredData are estimated as Linux's
tcp_add_reno_sack/tcp_remove_reno_sacks do and as RFC 6937 section 3 says: every duplicate
ACK delivered one segment, and a cumulative ACK delivered what it acknowledges less the
segments its duplicate ACKs already counted (at least one); the first unacknowledged
segment counts as lost until it is resent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from engine.tcp.recovery.base import AckUse, NoRecovery, Sender
from engine.tcp.recovery.prr import Prr
from engine.tcp.state import DUPACK_THRESHOLD, Phase

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.state import TcpState


class TahoeRecovery(NoRecovery):
    name: ClassVar[str] = "tahoe"
    limited_transmit = True  # as ns-2's singledup_ (default on) does for every variant

    def on_dupack(self, snd: Sender) -> None:
        st = snd.st
        # Going back N resends segments the receiver may already hold, and each comes
        # back as a duplicate ACK for exactly `recover`: like ns-2's Agent/TCP
        # (highest_ack_ > recover_), a new fast retransmit needs an ACK beyond it.
        if snd.dupacks != DUPACK_THRESHOLD or st.snd_una <= st.recover:
            return
        snd.begin_fast_retransmit()
        st.cwnd = st.mss
        snd.go_back_n()
        snd.set_phase(Phase.LOSS)


class RenoRecovery(NoRecovery):
    name: ClassVar[str] = "reno"
    limited_transmit = True

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.prr = Prr(spec.mss, spec.prr_bound == "ssrb") if spec.recovery == "prr" else None
        self.paces_recovery = self.prr is not None
        self.sacked = 0  # PRR: bytes the duplicate ACKs say arrived above snd_una
        self.head_lost = False  # PRR: the segment at snd_una awaits its retransmission

    def on_dupack(self, snd: Sender) -> None:
        st = snd.st
        if st.phase == Phase.RECOVERY:
            if self.prr is not None:
                self._count_dupack(st)
                self._prr_window(st, st.mss, safe_ack=False)
                return
            # RFC 5681 3.2 step 4: each further duplicate ACK inflates cwnd by one SMSS,
            # since a segment has left the network.
            st.cwnd += st.mss
            return
        if self.prr is not None:
            self._count_dupack(st)
        if snd.dupacks != DUPACK_THRESHOLD or st.snd_una < st.recover:
            return
        if self.prr is not None:
            recover_fs = st.flight_size
            snd.begin_fast_retransmit()
            snd.set_phase(Phase.RECOVERY)
            self.prr.start(recover_fs, st.ssthresh)
            self.head_lost = True
            self._prr_window(st, st.mss, safe_ack=False)
            return  # transmit() resends the first unacknowledged segment first
        # Steps 2 and 3: ssthresh from FlightSize, retransmit, cwnd = ssthresh + 3*SMSS.
        snd.begin_fast_retransmit()
        snd.retransmit_first_unacked()
        snd.restart_rto()  # as ns-2 and Linux do when the first unacknowledged is resent
        st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss
        snd.set_phase(Phase.RECOVERY)

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        if snd.st.phase != Phase.RECOVERY:
            self.sacked = 0
            return AckUse.GROW
        # Step 6: the first ACK of new data deflates the window and ends recovery.
        self.sacked = 0
        snd.exit_recovery()
        return AckUse.RECOVERY

    # --- PRR without SACK -----------------------------------------------------------------

    def _count_dupack(self, st: TcpState) -> None:
        # At most all but one outstanding segment can have arrived (Linux's
        # tcp_limit_reno_sacked): the first is missing, or there would be no duplicate.
        most = st.snd_max - st.snd_una - st.mss
        self.sacked = min(self.sacked + st.mss, max(most, 0))

    def _pipe(self, st: TcpState) -> int:
        pipe = st.snd_max - st.snd_una - self.sacked
        if self.head_lost:
            pipe -= st.mss
        return pipe if pipe > 0 else 0

    def _prr_window(self, st: TcpState, delivered: int, safe_ack: bool) -> None:
        prr = self.prr
        assert prr is not None  # PRR's window in PRR recovery only
        pipe = self._pipe(st)
        st.cwnd = pipe + prr.sndcnt(delivered, pipe, safe_ack)

    def _partial_ack(self, st: TcpState, acked: int) -> None:
        """PRR on an ACK that advances snd_una short of `recover`: one of the acknowledged
        segments is the resent hole, the others had been counted by duplicate ACKs."""
        delivered = max(acked - self.sacked, st.mss)
        self.sacked = max(self.sacked - max(acked - st.mss, 0), 0)
        self.head_lost = True  # the next hole (RFC 6582's partial ACK retransmission)
        self._prr_window(st, delivered, safe_ack=True)

    def transmit(self, snd: Sender) -> bool:
        """PRR's budget cwnd - pipe: the lost first segment, then new data."""
        st = snd.st
        mss = st.mss
        prr = self.prr
        assert prr is not None
        pipe = self._pipe(st)
        sent = False
        while st.cwnd - pipe >= mss and snd.may_send():
            if self.head_lost:
                self.head_lost = False
                length = min(mss, st.snd_max - st.snd_una)
                if length <= 0:
                    continue
                snd.retransmit_first_unacked()
                if prr.out == 0:
                    snd.restart_rto()  # the fast retransmission, as in classic recovery
            else:
                length = snd.new_data_length()
                if not length:
                    break
                snd.send_new_data(length)
            prr.out += length
            pipe += length
            sent = True
        return sent


class NewRenoRecovery(RenoRecovery):
    name: ClassVar[str] = "newreno"

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.partial_acks = 0

    def on_dupack(self, snd: Sender) -> None:
        entering = snd.st.phase != Phase.RECOVERY
        super().on_dupack(snd)
        if entering and snd.st.phase == Phase.RECOVERY:
            self.partial_acks = 0

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return AckUse.GROW
        if st.snd_una >= st.recover:
            # RFC 6582 3.2 step 3, full acknowledgment: option (2), cwnd = ssthresh, as
            # ns-3's classic recovery and Linux do. Option (1) would restart a receive-
            # window-limited sender from 2 SMSS after every recovery.
            self.sacked = 0
            snd.exit_recovery()
            return AckUse.RECOVERY
        if self.prr is not None:
            self._partial_ack(st, acked)
        else:
            # Partial acknowledgment: retransmit the first unacknowledged segment, deflate
            # cwnd by the amount acknowledged, add back one SMSS if that was at least SMSS.
            snd.retransmit_first_unacked()
            st.cwnd = max(st.cwnd - acked, st.mss)
            if acked >= st.mss:
                st.cwnd += st.mss
        self.partial_acks += 1
        if self.partial_acks > 1:
            # RFC 6582 3.2 step 3 ("Impatient", as ns-3): the sender restarts the timer on
            # the first partial ACK only, so a long recovery ends in a timeout.
            return AckUse.RECOVERY_KEEP_TIMER
        return AckUse.RECOVERY
