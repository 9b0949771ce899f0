"""Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation, Linux's
tcp_rate.c, ns-3's TcpRateLinux): a rate sample per ACK, for congestion control that
models the path (BBR).

The connection counts `delivered`, the bytes the receiver is known to hold, and stamps
`delivered_time` when it grows. Each data segment carries, from its transmission, a
snapshot of (delivered, delivered_time, first_tx_time, app-limited, sent time); when an
ACK delivers data, the snapshot of the segment that triggered it (the ACK echoes it, as
RFC 7323's TSecr echoes a timestamp) gives the sample:

    delivered over max(send_elapsed, ack_elapsed)
    send_elapsed = P.sent_time - P.first_tx_time,  ack_elapsed = now - P.delivered_time

The segment that triggers an ACK is the one Linux picks among those the ACK newly
delivers: the most recently sent (the second of a delayed-ACK pair, an out-of-order
arrival, the retransmission that fills a hole). A snapshot serves one sample only.

Without SACK, Linux counts each duplicate ACK as one segment delivered out of order
(tcp_add_reno_sack) and takes those segments back from the next cumulative ACK
(tcp_remove_reno_sacks); that accounting, in bytes, serves both cases here, since the
receiver sends one duplicate ACK per segment it holds above a hole.
"""

from __future__ import annotations

from engine.packet import Packet


class RateSample:
    """One ACK's sample (Linux's struct rate_sample); `delivered` < 0 means no sample."""

    __slots__ = (
        "delivered",
        "interval",
        "prior_delivered",
        "app_limited",
        "acked_sacked",
        "losses",
        "prior_in_flight",
        "rtt",
    )

    def __init__(self) -> None:
        self.delivered = -1  # bytes delivered over `interval`
        self.interval = -1.0
        self.prior_delivered = 0  # `delivered` when the sampled segment was sent
        self.app_limited = False
        self.acked_sacked = 0  # bytes newly delivered by this ACK
        self.losses = 0  # bytes newly deemed lost (retransmitted) since the previous ACK
        self.prior_in_flight = 0
        self.rtt = -1.0  # the sampled segment's round trip, if it was not a retransmission

    @property
    def rate(self) -> float:
        """Bytes per second, or 0 for no sample."""
        return self.delivered / self.interval if self.delivered > 0 and self.interval > 0 else 0.0


class DeliveryRate:
    """The connection's delivery counters (Linux: tp->delivered, delivered_mstamp,
    first_tx_mstamp, app_limited, and sacked_out for a sender without SACK)."""

    __slots__ = (
        "delivered",
        "delivered_time",
        "first_tx_time",
        "app_limited",
        "dup_bytes",
        "lost",
        "lost_seen",
        "min_rtt",
        "sample",
    )

    def __init__(self) -> None:
        self.delivered = 0
        self.delivered_time = 0.0
        self.first_tx_time = 0.0
        self.app_limited = 0  # 0, or `delivered` + in flight when the application ran dry
        self.dup_bytes = 0  # bytes counted delivered by duplicate ACKs, above snd_una
        self.lost = 0  # bytes resent by fast recovery so far (each deemed lost)
        self.lost_seen = 0
        self.min_rtt = float("inf")  # of the samples' round trips (Linux's tcp_min_rtt)
        self.sample = RateSample()

    def on_send(self, pkt: Packet, now: float, idle: bool, retrans: bool, lost: bool) -> None:
        """tcp_rate_skb_sent: snapshot the counters into the segment. `idle`: nothing was
        in flight, so the sampling interval starts now; `lost`: the segment is resent
        because a loss was just detected (the next sample reports it in `losses`)."""
        if idle:
            self.first_tx_time = now
            self.delivered_time = now
        if lost:
            self.lost += pkt.length
        pkt.tx = (
            self.delivered,
            self.delivered_time,
            self.first_tx_time,
            self.app_limited != 0,
            now,
            retrans,
        )

    def on_ack(
        self,
        ack: Packet,
        now: float,
        acked: int,
        dupack: bool,
        mss: int,
        outstanding: int,
        prior_in_flight: int,
    ) -> RateSample:
        """tcp_rate_gen for an ACK that advanced snd_una by `acked` bytes (or is a
        duplicate), `outstanding` the bytes above the new snd_una."""
        rs = self.sample
        delivered = 0
        if acked > 0:
            # tcp_remove_reno_sacks: all but one segment's worth may have been counted by
            # duplicate ACKs already.
            credited = min(self.dup_bytes, max(acked - mss, 0))
            self.dup_bytes -= credited
            delivered = acked - credited
        elif dupack and self.dup_bytes + mss < outstanding:
            # tcp_add_reno_sack, at most the outstanding data less the hole.
            self.dup_bytes += mss
            delivered = mss
        if outstanding <= 0 or self.dup_bytes > outstanding:
            self.dup_bytes = max(min(self.dup_bytes, outstanding), 0)
        if self.app_limited and self.delivered > self.app_limited:
            self.app_limited = 0  # the bubble is acknowledged and gone
        if delivered:
            self.delivered += delivered
            self.delivered_time = now
        rs.acked_sacked = delivered
        rs.losses = self.lost - self.lost_seen
        self.lost_seen = self.lost
        rs.prior_in_flight = prior_in_flight
        rs.delivered = -1
        rs.interval = -1.0
        rs.rtt = -1.0
        echo = ack.echo
        if echo is None or not delivered:
            return rs
        tx = echo.tx
        if tx is None:
            return rs
        echo.tx = None  # one sample per segment (Linux clears a SACKed skb's stamp)
        p_delivered, p_time, p_first_tx, p_app_limited, sent, retrans = tx
        rs.prior_delivered = p_delivered
        rs.app_limited = p_app_limited
        self.first_tx_time = sent
        if not retrans:
            rs.rtt = rtt = now - sent
            if rtt < self.min_rtt:
                self.min_rtt = rtt
        send_elapsed = sent - p_first_tx
        ack_elapsed = now - p_time
        interval = send_elapsed if send_elapsed > ack_elapsed else ack_elapsed
        if interval < self.min_rtt:
            return rs  # shorter than a round trip: a spurious retransmission's, not a rate
        rs.delivered = self.delivered - p_delivered
        rs.interval = interval
        return rs

    def on_timeout(self, outstanding: int) -> None:
        """A retransmission timeout deemed the `outstanding` bytes lost (tcp_enter_loss).
        They count in `lost` (BBR's policer detection reads it) but in no ACK's sample:
        Linux's rs->losses are the losses an ACK marked."""
        self.lost += outstanding
        self.lost_seen += outstanding

    def mark_app_limited(self, in_flight: int) -> None:
        """tcp_rate_check_app_limited: the application has nothing more to send."""
        self.app_limited = (self.delivered + in_flight) or 1
