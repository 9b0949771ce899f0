"""The loss-recovery strategy interface, and the small protocol through which a strategy
talks to the TCP sender (ns-3 separates TcpRecoveryOps from the socket the same way).

A strategy reads the sender's `TcpState` and asks the sender, by name, for the few things
recovery does: start a fast retransmit, resend a segment, send new data, move the phase,
restart the timer. It never reaches into the sender's own fields; what it wants done with
an ACK it returns (`AckUse`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, ClassVar, Protocol

from engine.packet import Packet
from engine.tcp.state import Phase, TcpState

if TYPE_CHECKING:
    from engine.kernel import Kernel
    from engine.scenario import TcpSpec
    from engine.tcp.recovery.scoreboard import Scoreboard


class Sender(Protocol):
    """What a recovery strategy may read from and ask of the sender."""

    env: Kernel
    st: TcpState
    #: Duplicate ACKs in a row (reset by an ACK of new data).
    dupacks: int
    #: The end of the application's data (infinite for an unlimited transfer).
    limit: float

    def begin_fast_retransmit(self) -> None:
        """A loss is detected by duplicate ACKs: count it, let congestion control record
        it, set ssthresh and the recovery point (RFC 5681 3.2 step 2, RFC 6582 `recover`)."""

    def set_phase(self, phase: Phase) -> None: ...

    def reduce_window(self) -> None:
        """A loss repaired outside recovery (a tail loss probe's, RFC 8985 7.4): ssthresh
        as for any loss, cwnd down to it (Linux's CWR)."""

    def sent_by_timer(self) -> None:
        """A strategy's own timer sent a segment (for the recorder)."""

    def try_send(self) -> None:
        """Send what the window (or, recovering, the strategy) allows now."""

    def exit_recovery(self) -> None:
        """cwnd = ssthresh and back to open (RFC 5681 3.2 step 6, RFC 6582, RFC 6675)."""

    def restart_rto(self) -> None: ...

    def go_back_n(self) -> None:
        """Resume sending from snd_una (Tahoe, timeouts)."""

    def retransmit(self, seq: int, length: int) -> None: ...

    def retransmit_first_unacked(self) -> None: ...

    def send_new_data(self, length: int) -> None:
        """Send `length` new bytes at snd_max."""

    def may_send(self) -> bool:
        """Pacing lets a segment leave now (else the sender's pacing timer is armed)."""

    def new_data_length(self) -> int:
        """The next new segment's length that the application and the peer's window
        allow now, or 0 (RFC 6675 NextSeg rule 2)."""


class AckUse(IntEnum):
    """What an ACK of new data is to the sender, as the recovery strategy decides."""

    GROW = 0  # not recovery's: congestion control may grow the window
    RECOVERY = 1  # consumed by recovery: no window growth
    RECOVERY_KEEP_TIMER = 2  # consumed, and the retransmission timer is not restarted


class NoRecovery:
    """Variant `none`: duplicate ACKs are ignored; only the timer recovers."""

    name: ClassVar[str] = "none"
    #: True when the strategy keeps a SACK scoreboard that every ACK must update.
    scoreboard = False
    #: True when, in fast recovery, the strategy chooses every segment sent (RFC 6675).
    paces_recovery = False
    #: True when the first two duplicate ACKs may release new data (RFC 3042).
    limited_transmit = False
    #: True when the sender must report every data segment it sends (`on_sent`).
    tracks_sends = False
    #: The SACK scoreboard, set by (and only by) strategies with `scoreboard` true; the
    #: sender reads it only then. Declared, not assigned: other strategies have none.
    board: Scoreboard

    def __init__(self, spec: TcpSpec) -> None:
        """`spec` is the flow's TcpSpec; `limited_transmit: false` turns RFC 3042 off."""
        if not spec.limited_transmit:
            self.limited_transmit = False

    def bind(self, snd: Sender) -> None:
        """The sender this strategy serves, once it exists (for timers of its own)."""

    def on_sent(self, seq: int, length: int, now: float, retransmission: bool) -> None:
        """Only when `tracks_sends`: a data segment left the sender."""

    def on_timeout(self, snd: Sender) -> None:
        """The retransmission timer expired: go-back-N takes over until `recover`."""

    def on_sack(self, snd: Sender, pkt: Packet) -> None:
        """An ACK arrived, carrying SACK blocks or not (before it is processed)."""

    def transmit(self, snd: Sender) -> bool:
        """Send what recovery allows now (only when `paces_recovery`, in fast recovery);
        True when something was sent."""
        return False

    def pipe(self, st: TcpState) -> int:
        """Only with `scoreboard`, in recovery: the bytes believed in flight."""
        return st.snd_max - st.snd_una

    def skip_sacked(self, seq: int) -> int:
        """The first byte at or after `seq` that the receiver has not SACKed."""
        return seq

    def on_dupack(self, snd: Sender) -> None:
        """A duplicate ACK (RFC 5681 section 2); `snd.dupacks` counts them."""

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        """An ACK of `acked` new bytes, snd_una already advanced."""
        return AckUse.GROW
