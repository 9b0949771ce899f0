"""The congestion-control state record shared by the sender and its strategies.

Like ns-3's TcpSocketState: plain data, no behaviour. Windows are in bytes.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class Phase(IntEnum):
    """The sender's congestion phase (Linux's tcp_ca_state, RFC 5681's vocabulary)."""

    OPEN = 0  # no loss detected: slow start or congestion avoidance (duplicate ACKs
    # below the fast-retransmit threshold too: Linux's Disorder is not told apart here)
    RECOVERY = 2  # fast recovery after fast retransmit (RFC 5681 3.2, RFC 6582, RFC 6675)
    LOSS = 3  # after a retransmission timeout, until snd_una passes `recover`


INFINITE_WINDOW = 1 << 62
#: RFC 5681 3.2 (and RFC 6675 DupThresh): the third duplicate ACK starts recovery. Here
#: beside the phases it moves, for the recovery strategies and their SACK scoreboard alike.
DUPACK_THRESHOLD: Final = 3


class TcpState:
    __slots__ = (
        "mss",
        "cwnd",
        "ssthresh",
        "phase",
        "initial_cwnd",
        "snd_una",
        "snd_nxt",
        "snd_max",
        "recover",
        "limited_sent",
        "srtt",
        "min_rtt",
        "now",
    )

    def __init__(self, mss: int, initial_cwnd_segments: int):
        self.mss = mss
        self.initial_cwnd = initial_cwnd_segments * mss
        self.cwnd = self.initial_cwnd
        # RFC 5681 3.1: the initial ssthresh SHOULD be set arbitrarily high.
        self.ssthresh = INFINITE_WINDOW
        self.phase = Phase.OPEN
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_max = 0
        self.recover = -1  # RFC 6582: the initial send sequence number, before byte 0
        self.limited_sent = 0  # bytes sent by Limited Transmit since the last new ACK
        self.srtt = 0.0
        self.min_rtt = float("inf")
        self.now = 0.0

    @property
    def flight_size(self) -> int:
        """RFC 5681 FlightSize: data sent but not yet cumulatively acknowledged, less what
        Limited Transmit sent (3.2 step 2: it MUST NOT count when ssthresh is set)."""
        return self.snd_max - self.snd_una - self.limited_sent
