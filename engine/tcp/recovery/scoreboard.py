"""The RFC 6675 scoreboard: what the receiver has SACKed above snd_una (RFC 2018 blocks),
HighRxt, and the three questions recovery asks on every ACK, each answered in constant
or logarithmic time whatever the window:

- IsLost(SeqNum) (RFC 6675 section 4): DupThresh discontiguous SACKed blocks, or more
  than (DupThresh - 1) * SMSS SACKed bytes, above SeqNum. Only the top DupThresh blocks can
  decide it, so it reads those.
- SetPipe (section 4): the bytes believed in flight. Like Linux's tcp_packets_in_flight
  (packets_out - sacked_out - lost_out + retrans_out) and ns-3's TcpTxBuffer::BytesInFlight,
  it is kept as counts rather than recounted: pipe = unSACKed - lost + retransmitted, where
  `sacked` and the SACKed bytes below HighRxt follow every block added or acknowledged, the
  lost bytes are every hole below the highest lost one (IsLost only grows toward snd_una,
  and is the same for every byte of a hole, so it is decided by the top blocks again), and
  the retransmitted bytes are the unSACKed ones below HighRxt (everything there was resent
  in this recovery, as HighRxt only advances over what NextSeg resent).
- NextSeg (section 4): IsLost only grows toward snd_una, so the first unSACKed byte at or
  above max(HighACK, HighRxt) is the one to test for rule (1) and to offer for rule (3).

SetPipe counts segments of SMSS from snd_una and from each SACKed block's end, as the RFC
suggests implementations do, and that equals the byte count above whenever those holes are
whole segments: sequence numbers, ACKs and SACK edges on multiples of SMSS, or at the end
of the data. A sender cut to a window below one SMSS breaks that; the scoreboard then
counts segment by segment (`pipe_by_walk`, which is also the tests' reference).
"""

from __future__ import annotations

from engine.packet import SackBlocks
from engine.tcp.ranges import Ranges
from engine.tcp.state import DUPACK_THRESHOLD


class Scoreboard:
    __slots__ = ("mss", "lost_bytes_over", "sacked", "_high_rxt", "_rxt_sacked", "_limit", "walk")

    def __init__(self, mss: int) -> None:
        self.mss = mss
        self.lost_bytes_over = (DUPACK_THRESHOLD - 1) * mss  # IsLost's byte criterion
        self.sacked = Ranges()
        self._high_rxt = 0  # RFC 6675 HighRxt: highest byte retransmitted in this recovery
        self._rxt_sacked = 0  # SACKed bytes below HighRxt
        self._limit: float = float("inf")  # the end of the application's data, if known
        self.walk = False  # holes not whole segments: SetPipe counts segment by segment

    # --- keeping it up to date -----------------------------------------------------------

    def update(self, una: int, blocks: SackBlocks | None, limit: float) -> None:
        """An ACK arrived: add its SACK blocks (RFC 2018), then forget what the cumulative
        ACK `una` covers."""
        self._limit = limit
        sacked = self.sacked
        if blocks:
            for start, end in blocks:
                if end > una:
                    if start < una:
                        start = una
                    self._check_edge(start)
                    self._check_edge(end)
                    self._rxt_sacked += sacked.add(start, end, self._high_rxt)[1]
        self._check_edge(una)
        self._rxt_sacked -= sacked.drop_below(una, self._high_rxt)

    @property
    def high_rxt(self) -> int:
        return self._high_rxt

    @high_rxt.setter
    def high_rxt(self, value: int) -> None:
        """RFC 6675 5 step 4: HighRxt starts at HighACK; it then advances over each
        retransmission. Either way the SACKed bytes below it follow."""
        old = self._high_rxt
        if value > old:
            self._rxt_sacked += self.sacked.covered_between(old, value)
        elif value < old:
            self._rxt_sacked -= self.sacked.covered_between(value, old)
        self._high_rxt = value
        self._check_edge(value)

    def retransmitted(self, seq: int, length: int) -> None:
        """`length` bytes at `seq` were resent: HighRxt covers them."""
        if seq + length > self._high_rxt:
            self.high_rxt = seq + length

    def _check_edge(self, seq: int) -> None:
        if seq % self.mss and seq < self._limit:
            self.walk = True  # a hole may now be a fraction of a segment

    # --- the RFC 6675 section 4 routines -------------------------------------------------

    def skip_sacked(self, seq: int) -> int:
        """The first byte at or after `seq` that the receiver has not SACKed."""
        i = self.sacked.containing(seq)
        return seq if i < 0 else self.sacked.ends[i]

    def is_lost(self, seq: int) -> bool:
        """IsLost(seq): DupThresh blocks, or more than (DupThresh - 1) * SMSS bytes, SACKed
        above `seq`."""
        starts, ends = self.sacked.starts, self.sacked.ends
        n = len(ends)
        if n >= DUPACK_THRESHOLD and ends[n - DUPACK_THRESHOLD] > seq:
            return True  # the top DupThresh blocks all end above seq
        above = 0
        for k in range(max(n - DUPACK_THRESHOLD + 1, 0), n):
            if ends[k] > seq:
                above += ends[k] - (starts[k] if starts[k] > seq else seq)
        return above > self.lost_bytes_over

    def pipe(self, una: int, snd_max: int) -> int:
        """SetPipe: unSACKed bytes not deemed lost, plus those retransmitted (below HighRxt)."""
        if self.walk:
            return self.pipe_by_walk(una, snd_max)
        sacked = self.sacked.total
        pipe = snd_max - una - sacked - self._lost_bytes(una)
        if self._high_rxt > una:
            pipe += self._high_rxt - una - self._rxt_sacked
        return pipe

    def _lost_bytes(self, una: int) -> int:
        """The unSACKed bytes IsLost holds: every hole up to the highest lost one. The hole
        below block k has n - k blocks and at least the bytes of blocks k.. above it."""
        starts, ends = self.sacked.starts, self.sacked.ends
        n = len(starts)
        above = 0
        for k in range(n - 1, max(n - DUPACK_THRESHOLD, -1), -1):  # the bytes criterion
            above += ends[k] - starts[k]
            if above > self.lost_bytes_over:
                break
        else:
            k = n - DUPACK_THRESHOLD  # the blocks criterion: DupThresh blocks above
            if k < 0:
                return 0
            above += ends[k] - starts[k]
        # Holes below block k = the span from una to its start, less the blocks below it.
        return starts[k] - una - (self.sacked.total - above)

    def first_hole(self, una: int) -> int | None:
        """NextSeg's candidate for rules (1) and (3): the first unSACKed byte at or above
        max(HighACK, HighRxt), if it lies below the highest SACKed byte."""
        ends = self.sacked.ends
        if not ends:
            return None
        seq = self.skip_sacked(una if una > self._high_rxt else self._high_rxt)
        return seq if seq < ends[-1] else None

    def pipe_by_walk(self, una: int, snd_max: int) -> int:
        """SetPipe segment by segment: from snd_una and from the end of each SACKed block,
        SMSS at a time (RFC 6675 section 4, "for each octet ..." taken a segment at once)."""
        mss = self.mss
        pipe = 0
        seq = una
        while seq < snd_max:
            nxt = self.skip_sacked(seq)
            if nxt != seq:
                seq = nxt
                continue
            end = min(seq + mss, snd_max)
            length = end - seq
            if not self.is_lost(seq):
                pipe += length
            if seq < self._high_rxt:
                pipe += length
            seq = end
        return pipe
