"""Loss-recovery strategies: what the sender does on duplicate ACKs and on ACKs that
arrive while it is recovering. The sender calls them at named points; the congestion
strategy supplies the window sizes.

- `NoRecovery`: variant `none` (duplicate ACKs are ignored; only the timer recovers).
- `TahoeRecovery`: fast retransmit, then slow start from one segment (4.3BSD-Tahoe;
  like NS-2's Agent/TCP, it goes back N to the first unacknowledged segment).
- `RenoRecovery`: RFC 5681 3.2 fast retransmit / fast recovery, which ends on the first
  ACK of new data, so several losses in one window usually end in a timeout.
- `NewRenoRecovery`: RFC 6582: stay in recovery until `recover` is acknowledged,
  retransmitting one segment per partial ACK.

`recover` (RFC 6582 section 3.2 step 1) also guards every variant against a second fast
retransmit for losses of the same window, after a timeout's go-back-N for instance.
Every strategy but `none` lets the sender use Limited Transmit (RFC 3042) on the first
two duplicate ACKs, as ns-2 (`singledup_`) and ns-3 (`LimitedTransmit`) do by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.state import Phase

if TYPE_CHECKING:
    from engine.tcp.sender import TcpSender

DUPACK_THRESHOLD = 3  # RFC 5681 3.2: the third duplicate ACK triggers fast retransmit


class NoRecovery:
    name = "none"
    #: True when the strategy keeps a SACK scoreboard the sender must consult.
    scoreboard = False
    #: True when the first two duplicate ACKs may release new data (RFC 3042).
    limited_transmit = False

    def on_sack(self, snd: TcpSender, pkt) -> None:
        """An ACK carrying SACK blocks arrived (before it is processed)."""

    def transmit(self, snd: TcpSender) -> bool:
        """Take over transmission (RFC 6675 pipe); False lets the sender send normally."""
        return False

    def skip_sacked(self, seq: int) -> int:
        """The first byte at or after `seq` that the receiver has not SACKed."""
        return seq

    def on_dupack(self, snd: TcpSender) -> None:
        pass

    def on_new_ack(self, snd: TcpSender, acked: int) -> bool:
        """Returns True when the ACK was consumed by recovery (no window growth)."""
        return False


class TahoeRecovery(NoRecovery):
    name = "tahoe"
    limited_transmit = True  # as ns-2's singledup_ (default on) does for every variant

    def on_dupack(self, snd: TcpSender) -> None:
        st = snd.st
        # Going back N resends segments the receiver may already hold, and each comes
        # back as a duplicate ACK for exactly `recover`: like ns-2's Agent/TCP
        # (highest_ack_ > recover_), a new fast retransmit needs an ACK beyond it.
        if snd.dupacks != DUPACK_THRESHOLD or st.snd_una <= st.recover:
            return
        snd.congestion_event()
        st.cwnd = st.mss
        snd.fast_retransmits += 1
        snd.go_back_n()
        snd.set_phase(Phase.LOSS)


class RenoRecovery(NoRecovery):
    name = "reno"
    limited_transmit = True

    def on_dupack(self, snd: TcpSender) -> None:
        st = snd.st
        if st.phase == Phase.RECOVERY:
            # RFC 5681 3.2 step 4: each further duplicate ACK inflates cwnd by one SMSS,
            # since a segment has left the network.
            st.cwnd += st.mss
            return
        if snd.dupacks != DUPACK_THRESHOLD or st.snd_una < st.recover:
            return
        # Steps 2 and 3: ssthresh from FlightSize, retransmit, cwnd = ssthresh + 3*SMSS.
        snd.congestion_event()
        snd.fast_retransmits += 1
        snd.retransmit_first_unacked()
        snd.restart_rto()  # as ns-2 and Linux do when the first unacknowledged is resent
        st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss
        snd.set_phase(Phase.RECOVERY)

    def on_new_ack(self, snd: TcpSender, acked: int) -> bool:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return False
        # Step 6: the first ACK of new data deflates the window and ends recovery.
        snd.exit_recovery()
        return True


class NewRenoRecovery(RenoRecovery):
    name = "newreno"

    def __init__(self) -> None:
        self.partial_acks = 0

    def on_dupack(self, snd: TcpSender) -> None:
        entering = snd.st.phase != Phase.RECOVERY
        super().on_dupack(snd)
        if entering and snd.st.phase == Phase.RECOVERY:
            self.partial_acks = 0

    def on_new_ack(self, snd: TcpSender, acked: int) -> bool:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return False
        if st.snd_una >= st.recover:
            # RFC 6582 3.2 step 3, full acknowledgment: option (2), cwnd = ssthresh, as
            # ns-3's classic recovery and Linux do. Option (1) would restart a receive-
            # window-limited sender from 2 SMSS after every recovery.
            snd.exit_recovery()
            return True
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
            snd.keep_rto = True
        return True


def recovery_for(spec):
    """The recovery strategy for a TcpSpec: SACK (RFC 6675) when `sack` is on or the
    variant is NS-2's `sack` (Sack1); otherwise the variant's own."""
    variant = spec.variant
    if variant == "none":
        return NoRecovery()
    if spec.sack or variant == "sack":
        from engine.tcp.sack import SackRecovery

        return SackRecovery()
    if variant == "tahoe":
        return TahoeRecovery()
    if variant == "reno":
        return RenoRecovery()
    return NewRenoRecovery()
