"""Policing a PVC's traffic contract (ITU-T I.370 / Q.922: CIR, Bc, Be, Tc = Bc / CIR) at the
network's ingress: each frame is committed, passed marked DE, or discarded.

CIR, Bc and Be count *frame bits*: the frame as serialised on the first link the PVC
carries (`port.wire(size) * 8`; on a `frame_relay` link the IP datagram plus 8 bytes of
flags, Q.922 address, control, NLPID and FCS-16). A frame within the committed allowance
passes; else one within the excess allowance passes marked DE; else it is discarded. Two
disciplines count the allowances (`Pvc.policing`), both arithmetic at each arrival, no
timer: `token_bucket` (default), two continuous buckets (`TokenBucket`), and `interval`,
fixed consecutive Tc windows (`IntervalPolicer`). They agree in the long run only when Bc
and Be are whole numbers of frames; see their docstrings.

A frame larger than Bc (Bc + Be) can never be committed (sent at all): no debt is allowed
in the buckets.
"""

from __future__ import annotations

TOKEN_SLACK = 1e-6  # bits: absorbs rounding of refill * rate == frame bits

COMMITTED, EXCESS, DISCARD = 0, 1, 2  # a policer's verdict on one frame


class _Counts:
    """What both disciplines do with a frame once their counts are current: committed bits
    first, then excess (DE), else a discard."""

    __slots__ = ("committed", "excess")

    def __init__(self, committed: float, excess: float):
        self.committed, self.excess = committed, excess  # bits left of Bc and of Be

    def _take(self, bits: int) -> int:
        if self.committed + TOKEN_SLACK >= bits:
            self.committed -= bits
            return COMMITTED
        if self.excess + TOKEN_SLACK >= bits:
            self.excess -= bits
            return EXCESS
        return DISCARD


class TokenBucket(_Counts):
    """Policing by two continuous token buckets (`policing: token_bucket`): a committed
    bucket of depth Bc refilled at CIR and an excess bucket of depth Be refilled at Be / Tc,
    computed arithmetically at each frame's arrival. Over any interval T it admits at most
    Bc + CIR*T committed and Be + (Be/Tc)*T excess bits: I.370's "Bc (Be) per Tc" as a
    sliding window. Tokens left over by a frame carry to the next, so the long-run rate is
    CIR + Be/Tc whatever the frame size."""

    __slots__ = ("cir", "bc", "be", "excess_rate", "refilled_at")

    def __init__(self, cir: float, bc: float, be: float):
        self.cir, self.bc, self.be = cir, bc, be
        self.excess_rate = be * cir / bc  # Be per Tc, Tc = Bc / CIR
        super().__init__(bc, be)  # both buckets start full
        self.refilled_at = 0.0

    def police(self, bits: int, now: float) -> int:
        elapsed = now - self.refilled_at
        if elapsed > 0:
            self.refilled_at = now
            c = self.committed + elapsed * self.cir
            self.committed = c if c < self.bc else self.bc
            e = self.excess + elapsed * self.excess_rate
            self.excess = e if e < self.be else self.be
        return self._take(bits)

    def tokens(self, now: float) -> float:
        """Frame bits the buckets would admit at once at `now` (read-only)."""
        elapsed = max(0.0, now - self.refilled_at)
        return min(self.bc, self.committed + elapsed * self.cir) + min(
            self.be, self.excess + elapsed * self.excess_rate
        )

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        """Most frame bits admitted in [t0, t1] with `tokens0` at t0."""
        return tokens0 + (t1 - t0) * (self.cir + self.excess_rate) + 2 * TOKEN_SLACK


class IntervalPolicer(_Counts):
    """Policing by fixed, consecutive measurement intervals Tc = Bc / CIR from t = 0
    (`policing: interval`), as ITU-T I.370 states the contract: within each interval the
    first Bc bits of frames pass, the next Be bits pass marked DE, the rest is discarded;
    counts start afresh at each interval. A frame is admitted only whole, so what a frame
    leaves unused of Bc (or Be) in an interval is lost: the long-run rate is
    (floor(Bc / F) + floor(Be / F)) * F / Tc for frames of F bits, the token bucket's
    CIR + Be/Tc only when Bc and Be are whole numbers of frames."""

    __slots__ = ("bc", "be", "tc", "index")

    def __init__(self, cir: float, bc: float, be: float):
        self.bc, self.be = bc, be
        self.tc = bc / cir
        self.index = 0  # the interval the counts belong to
        super().__init__(bc, be)  # what is left of Bc and Be in it

    def _roll(self, now: float) -> None:
        index = int(now / self.tc)
        if index != self.index:
            self.index = index
            self.committed, self.excess = self.bc, self.be

    def police(self, bits: int, now: float) -> int:
        self._roll(now)
        return self._take(bits)

    def tokens(self, now: float) -> float:
        if int(now / self.tc) != self.index:
            return self.bc + self.be
        return self.committed + self.excess

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        """What is left of the interval holding t0, then Bc + Be per interval begun."""
        begun = int(t1 / self.tc) - int(t0 / self.tc)
        return tokens0 + begun * (self.bc + self.be) + 2 * TOKEN_SLACK
