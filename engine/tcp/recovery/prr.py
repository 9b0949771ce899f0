"""Proportional Rate Reduction (RFC 6937, standardised as RFC 9937): how much a sender in
fast recovery may send on each ACK, so that the data in flight falls smoothly from the
window before the loss to ssthresh over one round trip, instead of RFC 5681's half a round
trip of silence followed by a burst (or RFC 6675's burst when losses took pipe far below
ssthresh).

    On entering recovery: RecoverFS = FlightSize, prr_delivered = prr_out = 0.
    On every ACK in recovery, DeliveredData = change in snd_una + change in SACKed bytes:
        prr_delivered += DeliveredData
        if pipe > ssthresh:      # proportional part
            sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
        else:                    # a reduction bound
            CRB:  limit = prr_delivered - prr_out
            SSRB: limit = MAX(prr_delivered - prr_out, DeliveredData) + SMSS, the SMSS only
                  on an ACK that advances snd_una ("SafeACK", RFC 9937; Linux's
                  tcp_cwnd_reduction adds its packet under the same condition)
            sndcnt = MIN(ssthresh - pipe, limit)
        the first ACK of a recovery sends at least the fast retransmission (Linux)
        cwnd = pipe + sndcnt
    On every transmission in recovery: prr_out += bytes sent.

RecoverFS is the FlightSize ssthresh was computed from (Limited Transmit's segments left
out, RFC 5681 3.2 step 2), so that prr_out reaches ssthresh as prr_delivered reaches
RecoverFS whatever the congestion control's reduction factor (Linux uses prior_cwnd, the
same value for a cwnd-limited sender). Like Linux, which counts packets, the proportional
part is rounded up to whole segments. RFC 6937's original SSRB adds the SMSS on every ACK;
`safe_ack=True` on every call reproduces it (its worked example in section 3.1 is a unit
test).
"""

from __future__ import annotations


class Prr:
    """The PRR counters of one sender, in bytes."""

    __slots__ = ("mss", "ssrb", "recover_fs", "ssthresh", "delivered", "out", "bound")

    def __init__(self, mss: int, ssrb: bool = True) -> None:
        self.mss = mss
        self.ssrb = ssrb  # slow-start reduction bound; False: conservative (CRB)
        self.recover_fs = 1
        self.ssthresh = 0
        self.delivered = 0  # prr_delivered
        self.out = 0  # prr_out
        #: which expression set the last sndcnt: "p" proportional, "s" ssthresh - pipe,
        #: "b" banked (prr_delivered - prr_out [+ SMSS]), "d" DeliveredData + SMSS.
        self.bound = ""

    def start(self, recover_fs: int, ssthresh: int) -> None:
        """Recovery begins: RecoverFS and the target, counters to zero."""
        self.recover_fs = max(recover_fs, 1)
        self.ssthresh = ssthresh
        self.delivered = 0
        self.out = 0

    def sndcnt(self, delivered: int, pipe: int, safe_ack: bool) -> int:
        """Bytes this ACK allows to be sent, given the bytes it reports delivered and the
        pipe after it."""
        self.delivered += delivered
        ssthresh = self.ssthresh
        mss = self.mss
        if pipe > ssthresh:
            share = -(-self.delivered * ssthresh // (self.recover_fs * mss)) * mss
            count = share - self.out
            self.bound = "p"
        else:
            banked = self.delivered - self.out
            limit = banked
            self.bound = "b"
            if self.ssrb:
                if delivered > banked:
                    limit = delivered
                    self.bound = "d"
                elif delivered == banked:
                    self.bound = "bd"  # both expressions give the same limit
                if safe_ack:
                    limit += mss
            if ssthresh - pipe <= limit:
                count = ssthresh - pipe
                self.bound = "s"
            else:
                count = limit
        if self.out == 0 and count < mss:
            count = mss  # the fast retransmission itself
        return count if count > 0 else 0
