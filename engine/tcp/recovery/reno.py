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
"""

from __future__ import annotations

from engine.tcp.recovery.base import DUPACK_THRESHOLD, AckUse, NoRecovery, Sender
from engine.tcp.state import Phase


class TahoeRecovery(NoRecovery):
    name = "tahoe"
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
    name = "reno"
    limited_transmit = True

    def on_dupack(self, snd: Sender) -> None:
        st = snd.st
        if st.phase == Phase.RECOVERY:
            # RFC 5681 3.2 step 4: each further duplicate ACK inflates cwnd by one SMSS,
            # since a segment has left the network.
            st.cwnd += st.mss
            return
        if snd.dupacks != DUPACK_THRESHOLD or st.snd_una < st.recover:
            return
        # Steps 2 and 3: ssthresh from FlightSize, retransmit, cwnd = ssthresh + 3*SMSS.
        snd.begin_fast_retransmit()
        snd.retransmit_first_unacked()
        snd.restart_rto()  # as ns-2 and Linux do when the first unacknowledged is resent
        st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss
        snd.set_phase(Phase.RECOVERY)

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        if snd.st.phase != Phase.RECOVERY:
            return AckUse.GROW
        # Step 6: the first ACK of new data deflates the window and ends recovery.
        snd.exit_recovery()
        return AckUse.RECOVERY


class NewRenoRecovery(RenoRecovery):
    name = "newreno"

    def __init__(self, spec) -> None:
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
            snd.exit_recovery()
            return AckUse.RECOVERY
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
