"""BBR v1's long-term bandwidth estimate (Linux's lt_bw, tcp_bbr.c's bbr_lt_bw_sampling):
how BBR notices a token-bucket policer and paces at the policed rate.

A policer (a Frame Relay PVC's CIR with Be = 0, a carrier's rate limit) lets a burst
through while it has tokens, then drops what exceeds the token rate. BtlBw, the max of
recent delivery rates, keeps seeing the bursts and stays above the policed rate, so BBR
keeps sending into the drops. Linux watches for it:

    sampling starts at the first loss (the tokens are then spent);
    an interval lasts 4 to 16 round trips and ends on a loss;
    if lost / delivered over the interval >= 20% (bbr_lt_loss_thresh = 50/256), its
    delivery rate is a sample;
    two samples within 1/8 of each other (or 4 kbit/s) say "policed":
        lt_bw = their mean, lt_use_bw = 1, pacing_gain = 1
    BBR then uses lt_bw as its bandwidth (bbr_bw) for 48 round trips of PROBE_BW, with a
    pacing gain of 1 (no probing), then starts over;
    an application-limited sample, or an interval past 16 round trips, resets sampling.

Rates here are bytes per second and counts bytes (Linux counts packets per microsecond,
ms-stamped): the ratios are the same. ns-3's TcpBbr has no such estimate (`bbr_lt_bw:
false`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.tcp.rate import DeliveryRate

LT_INTVL_MIN_RTTS = 4  # bbr_lt_intvl_min_rtts
LT_LOSS_THRESH = 50 / 256  # bbr_lt_loss_thresh: lost/delivered of a lossy interval
LT_BW_RATIO = 1 / 8  # bbr_lt_bw_ratio: two samples this close are "consistent"
LT_BW_DIFF = 4000 / 8  # bbr_lt_bw_diff, bytes/s: or this close
LT_BW_MAX_RTTS = 48  # bbr_lt_bw_max_rtts: round trips on lt_bw before sampling again
PACING_MARGIN = 0.01  # bbr_rate_bytes_per_sec takes it off the difference too


class LongTermBw:
    """The lt_* fields of Linux's struct bbr and the functions that keep them."""

    __slots__ = ("bw", "use", "sampling", "rtt_cnt", "last_stamp", "last_delivered", "last_lost")

    def __init__(self) -> None:
        self.bw = 0.0  # lt_bw, bytes/s
        self.use = False  # lt_use_bw: BBR's bandwidth is `bw`
        self.sampling = False  # lt_is_sampling
        self.rtt_cnt = 0  # round trips in this interval (or, in use, on lt_bw)
        self.last_stamp = 0.0  # the interval's start: delivered_time,
        self.last_delivered = 0  # delivered,
        self.last_lost = 0  # and lost

    def reset(self, rate: DeliveryRate) -> None:
        """bbr_reset_lt_bw_sampling: forget everything, start a new interval."""
        self.bw = 0.0
        self.use = False
        self.sampling = False
        self._new_interval(rate)

    def _new_interval(self, rate: DeliveryRate) -> None:
        """bbr_reset_lt_bw_sampling_interval."""
        self.last_stamp = rate.delivered_time
        self.last_delivered = rate.delivered
        self.last_lost = rate.lost
        self.rtt_cnt = 0

    def sample(
        self,
        rate: DeliveryRate,
        losses: int,
        app_limited: bool,
        round_start: bool,
        probing_bw: bool,
    ) -> bool:
        """bbr_lt_bw_sampling, on an ACK (or a timeout, with `losses`): True when BBR has
        used lt_bw for LT_BW_MAX_RTTS round trips of PROBE_BW (`probing_bw`) and must
        restart its gain cycling (bbr_reset_probe_bw_mode)."""
        if self.use:
            if probing_bw and round_start:
                self.rtt_cnt += 1
                if self.rtt_cnt >= LT_BW_MAX_RTTS:
                    self.reset(rate)
                    return True
            return False
        # Wait for the first loss: the policer's tokens are spent, bursts no longer count.
        if not self.sampling:
            if not losses:
                return False
            self._new_interval(rate)
            self.sampling = True
        if app_limited:
            self.reset(rate)  # a sample the application limited would under-estimate
            return False
        if round_start:
            self.rtt_cnt += 1
        if self.rtt_cnt < LT_INTVL_MIN_RTTS:
            return False
        if self.rtt_cnt > 4 * LT_INTVL_MIN_RTTS:
            self.reset(rate)  # too long to be a policer's cycle
            return False
        # End the interval on a loss: the tokens ran out, the rate is the policer's.
        if not losses:
            return False
        lost = rate.lost - self.last_lost
        delivered = rate.delivered - self.last_delivered
        if not delivered or lost < LT_LOSS_THRESH * delivered:
            return False
        elapsed = rate.delivered_time - self.last_stamp
        if elapsed < 0.001:
            return False  # Linux's ms stamps: an interval under 1 ms waits
        self._interval_done(delivered / elapsed, rate)
        return False

    def _interval_done(self, bw: float, rate: DeliveryRate) -> None:
        """bbr_lt_bw_interval_done: two consistent lossy intervals mean a policer."""
        if self.bw:
            diff = abs(bw - self.bw)
            if diff <= LT_BW_RATIO * self.bw or diff * (1 - PACING_MARGIN) <= LT_BW_DIFF:
                self.bw = (bw + self.bw) / 2
                self.use = True
                self.rtt_cnt = 0
                return
        self.bw = bw
        self._new_interval(rate)
