"""The RFC 6675 scoreboard (engine.tcp.recovery.scoreboard): IsLost, SetPipe and NextSeg on
scripted SACK patterns worked by hand, then a property test that the incrementally kept
scoreboard always answers as a plain recomputation from the same SACK history does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tcp.ranges import Ranges
from engine.tcp.recovery.scoreboard import Scoreboard

pytestmark = pytest.mark.unit

MSS = 1000
S = MSS  # one segment; segment n is [n*S, (n+1)*S)


def board(una: int, *blocks: tuple[int, int], limit: float = float("inf")) -> Scoreboard:
    """A scoreboard after one ACK of `una` (in segments) carrying SACK `blocks` (segments)."""
    b = Scoreboard(MSS)
    b.update(una * S, tuple((s * S, e * S) for s, e in blocks), limit)
    return b


# --- hand-worked cases -----------------------------------------------------------------
# Ten segments 0..9 sent (HighData = 10 S) unless said otherwise.


def test_two_holes_both_lost_then_the_pipe_refills_with_retransmissions():
    # Segments 2 and 5 lost; 3-4 and 6-9 SACKed; 0-1 cumulatively ACKed.
    b = board(2, (3, 5), (6, 10))
    # IsLost(2): two blocks above, 6 S SACKed above > 2 S. IsLost(5): 4 S above > 2 S.
    assert b.is_lost(2 * S) and b.is_lost(5 * S)
    # SetPipe: the unSACKed 2 and 5 are both lost and not retransmitted: nothing in flight.
    assert b.pipe(2 * S, 10 * S) == 0
    # NextSeg rule 1 offers 2, then (HighRxt past it) 5, then nothing below HighData.
    assert b.first_hole(2 * S) == 2 * S
    b.high_rxt = 2 * S  # RFC 6675 5 step 4: HighRxt = HighACK on entering recovery
    b.retransmitted(2 * S, S)
    assert b.pipe(2 * S, 10 * S) == S  # (b): 2 is below HighRxt, counted once
    assert b.first_hole(2 * S) == 5 * S
    b.retransmitted(5 * S, S)
    assert b.pipe(2 * S, 10 * S) == 2 * S
    assert b.first_hole(2 * S) is None  # above 6 everything up to HighData is SACKed


def test_a_hole_with_two_segments_sacked_above_is_not_lost():
    # 4 lost, 5-6 SACKed: exactly (DupThresh - 1) * SMSS above it, and one block.
    b = board(4, (5, 7))
    assert not b.is_lost(4 * S)
    # In flight: 4 (not lost) and 7-9 (nothing SACKed above them).
    assert b.pipe(4 * S, 10 * S) == 4 * S
    # NextSeg: rule 1 finds nothing lost; the hole 4 is what rule 3 would offer.
    assert b.first_hole(4 * S) == 4 * S


def test_three_discontiguous_blocks_make_a_hole_lost_whatever_their_size():
    # 1, 3, 5 SACKed one segment each: three blocks above 0, only 3 S SACKed.
    b = board(0, (1, 2), (3, 4), (5, 6))
    assert b.is_lost(0)
    assert not b.is_lost(2 * S)  # two blocks, 2 S above: neither criterion
    assert not b.is_lost(4 * S)
    # Lost: only 0. In flight: 2, 4, 6, 7, 8, 9.
    assert b.pipe(0, 10 * S) == 6 * S


def test_a_cumulative_ack_retires_blocks_and_their_counts():
    b = board(2, (3, 5), (6, 10))
    b.high_rxt = 2 * S
    b.retransmitted(2 * S, S)
    b.retransmitted(5 * S, S)  # HighRxt = 6 S, with 3-4 SACKed below it
    # The retransmission of 2 arrives: the ACK covers 0-4 and still SACKs 6-9.
    b.update(5 * S, ((6 * S, 10 * S),), float("inf"))
    assert b.sacked.blocks() == [(6 * S, 10 * S)]
    # 5 is deemed lost (4 S SACKed above), so only its retransmission is in flight.
    assert b.pipe(5 * S, 10 * S) == S
    assert b.first_hole(5 * S) is None


def test_sack_blocks_merge_when_they_touch_and_are_clipped_at_snd_una():
    b = board(0, (2, 4), (6, 7))
    b.update(3 * S, ((4 * S, 6 * S), (1 * S, 2 * S)), float("inf"))
    assert b.sacked.blocks() == [(3 * S, 7 * S)]
    assert b.sacked.total == 4 * S
    assert b.skip_sacked(3 * S) == 7 * S and b.skip_sacked(7 * S) == 7 * S


def test_a_window_below_one_segment_counts_segment_by_segment():
    # A 600-byte window: segments of 600 bytes, holes that are not multiples of SMSS.
    b = Scoreboard(MSS)
    b.update(0, ((600, 1200), (1800, 2400), (3000, 3600)), float("inf"))
    assert b.walk
    assert b.pipe(0, 3600) == b.pipe_by_walk(0, 3600)


# --- the property: incremental == recomputed ------------------------------------------


class Recomputed:
    """The scoreboard as a list of blocks, every answer recomputed by walking it (the
    engine's SACK recovery before the scoreboard was kept incrementally)."""

    def __init__(self, mss: int) -> None:
        self.mss = mss
        self.blocks: list[list[int]] = []
        self.high_rxt = 0

    def update(self, una: int, sack: tuple) -> None:
        for start, end in sack:
            if end > una:
                self.blocks.append([max(start, una), end])
        merged: list[list[int]] = []
        for b in sorted(self.blocks):
            if merged and b[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b[1])
            else:
                merged.append(list(b))
        self.blocks = [b for b in merged if b[1] > una]
        if self.blocks and self.blocks[0][0] < una:
            self.blocks[0][0] = una

    def skip_sacked(self, seq: int) -> int:
        for start, end in self.blocks:
            if start <= seq < end:
                return end
        return seq

    def is_lost(self, seq: int) -> bool:
        above = [b for b in self.blocks if b[1] > seq]
        if len(above) >= 3:
            return True
        return sum(end - max(start, seq) for start, end in above) > 2 * self.mss

    def pipe(self, una: int, snd_max: int) -> int:
        pipe, seq = 0, una
        while seq < snd_max:
            nxt = self.skip_sacked(seq)
            if nxt != seq:
                seq = nxt
                continue
            end = min(seq + self.mss, snd_max)
            pipe += (end - seq) * ((not self.is_lost(seq)) + (seq < self.high_rxt))
            seq = end
        return pipe

    def next_seg(self, una: int, snd_max: int, new: int):
        highest = self.blocks[-1][1] if self.blocks else una
        seq, rescue = max(una, self.high_rxt), None
        while seq < highest:
            nxt = self.skip_sacked(seq)
            if nxt != seq:
                seq = nxt
                continue
            if self.is_lost(seq):
                return seq, min(self.mss, snd_max - seq), False
            rescue = seq if rescue is None else rescue
            seq += self.mss
        if new:
            return snd_max, new, True
        if rescue is not None:
            return rescue, min(self.mss, snd_max - rescue), False
        return None


def next_seg(b: Scoreboard, una: int, snd_max: int, new: int):
    """NextSeg as SackRecovery.next_seg composes it from the scoreboard."""
    hole = b.first_hole(una)
    if hole is not None and b.is_lost(hole):
        return hole, min(b.mss, snd_max - hole), False
    if new:
        return snd_max, new, True
    if hole is not None:
        return hole, min(b.mss, snd_max - hole), False
    return None


SMALL_MSS = 10


@st.composite
def histories(draw):
    """A sender's life in events: data sent, ACKs with up to four SACK blocks, recoveries
    starting, retransmissions. Edges are on segment boundaries, or (when `ragged`) anywhere,
    as with a window smaller than one segment."""
    ragged = draw(st.booleans())
    unit = 1 if ragged else SMALL_MSS
    n = draw(st.integers(min_value=1, max_value=40))
    events = []
    for _ in range(n):
        kind = draw(st.sampled_from(["send", "ack", "ack", "ack", "recover", "retransmit"]))
        if kind == "send":
            events.append(("send", draw(st.integers(1, 8)) * (unit if ragged else SMALL_MSS)))
        elif kind == "ack":
            advance = draw(st.integers(0, 3)) * unit * draw(st.sampled_from([0, 1, 3]))
            blocks = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(1, 4)), max_size=4))
            events.append(("ack", advance, [(s * unit, (s + w) * unit) for s, w in blocks]))
        else:
            events.append((kind,))
    return events


@settings(max_examples=400, deadline=None)
@given(histories(), st.integers(0, 2))
def test_incremental_scoreboard_equals_recomputation(events, new_segments) -> None:
    mss = SMALL_MSS
    fast, slow = Scoreboard(mss), Recomputed(mss)
    una = snd_max = 0
    for event in events:
        if event[0] == "send":
            snd_max += event[1]
        elif event[0] == "ack":
            una = min(una + event[1], snd_max)
            # The receiver SACKs only data above una that was sent.
            sack = tuple(
                (s + una, min(e + una, snd_max))
                for s, e in event[2]
                if s + una < min(e + una, snd_max)
            )
            fast.update(una, sack, float("inf"))
            slow.update(una, sack)
        elif event[0] == "recover":
            fast.high_rxt = slow.high_rxt = una
        else:
            seg = slow.next_seg(una, snd_max, 0)
            if seg is not None:
                seq, length, _ = seg
                fast.retransmitted(seq, length)
                slow.high_rxt = max(slow.high_rxt, seq + length)
        assert fast.sacked.blocks() == [tuple(b) for b in slow.blocks]
        assert fast.sacked.total == sum(e - s for s, e in slow.blocks)
        assert fast.pipe(una, snd_max) == slow.pipe(una, snd_max)
        assert fast.pipe_by_walk(una, snd_max) == slow.pipe(una, snd_max)
        new = new_segments * mss
        assert next_seg(fast, una, snd_max, new) == slow.next_seg(una, snd_max, new)
        for seq in range(una, snd_max + 1, max(1, mss // 3)):
            assert fast.is_lost(seq) == slow.is_lost(seq)
            assert fast.skip_sacked(seq) == slow.skip_sacked(seq)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "drop"]), st.integers(0, 80), st.integers(1, 15)),
        max_size=30,
    ),
    st.integers(0, 100),
)
def test_ranges_equal_a_set_of_bytes(ops, mark) -> None:
    ranges, covered = Ranges(), set()
    for op, start, width in ops:
        if op == "add":
            new = set(range(start, start + width)) - covered
            _, below = ranges.add(start, start + width, mark)
            assert below == len([x for x in new if x < mark])
            covered |= new
        else:
            gone = {x for x in covered if x < start}
            assert ranges.drop_below(start, mark) == len([x for x in gone if x < mark])
            covered -= gone
        # Sorted, disjoint, not touching, and exactly the covered bytes.
        blocks = ranges.blocks()
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(blocks, blocks[1:], strict=False))
        assert {x for s, e in blocks for x in range(s, e)} == covered
        assert ranges.total == len(covered)
        assert ranges.covered_between(10, mark) == len([x for x in covered if 10 <= x < mark])
