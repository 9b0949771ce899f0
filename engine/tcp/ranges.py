"""A set of byte ranges kept as sorted, disjoint, non-touching [start, end) blocks: the
receiver's out-of-order data and the sender's SACK scoreboard (RFC 2018 blocks).

Two parallel lists of starts and ends, searched with `bisect`: adding a range costs a
logarithmic search plus the blocks it merges, never a walk over the others. Inserting or
deleting in the middle is a list memmove (C speed, a microsecond at ten thousand blocks),
which a balanced tree written in Python would not beat at any window we simulate.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Ranges:
    __slots__ = ("starts", "ends", "total")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.total = 0  # bytes covered

    def __len__(self) -> int:
        return len(self.starts)

    def __bool__(self) -> bool:
        return bool(self.starts)

    def blocks(self) -> list[tuple[int, int]]:
        """The blocks as (start, end) pairs, lowest first."""
        return list(zip(self.starts, self.ends, strict=True))

    def add(self, start: int, end: int, mark: int = 0) -> tuple[int, int]:
        """Cover [start, end), merging it with the blocks it overlaps or touches. Returns
        the index of the block now holding it and how many of the newly covered bytes lie
        below `mark` (the SACK scoreboard's HighRxt; 0 when the caller does not care)."""
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, start)  # the first block ending at or after start
        j = bisect_right(starts, end, i)  # past the last block starting at or before end
        if i == j:  # touches nothing: a block of its own
            starts.insert(i, start)
            ends.insert(i, end)
            self.total += end - start
            return i, _below(start, end, mark)
        old = old_below = 0
        for k in range(i, j):
            s, e = starts[k], ends[k]
            old += e - s
            old_below += _below(s, e, mark)
        new_start = start if start < starts[i] else starts[i]
        new_end = end if end > ends[j - 1] else ends[j - 1]
        if j - i == 1:
            starts[i] = new_start
            ends[i] = new_end
        else:
            starts[i:j] = [new_start]
            ends[i:j] = [new_end]
        self.total += new_end - new_start - old
        return i, _below(new_start, new_end, mark) - old_below

    def discard(self, start: int, end: int) -> int:
        """Uncover [start, end), cutting the blocks it overlaps; returns the bytes it
        uncovered. Costs a search plus the blocks it crosses."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, start)  # the first block ending above start
        j = i
        kept_starts: list[int] = []
        kept_ends: list[int] = []
        removed = 0
        while j < len(starts) and starts[j] < end:
            s, e = starts[j], ends[j]
            removed += (e if e < end else end) - (s if s > start else start)
            if s < start:
                kept_starts.append(s)
                kept_ends.append(start)
            if e > end:
                kept_starts.append(end)
                kept_ends.append(e)
            j += 1
        if j > i:
            starts[i:j] = kept_starts
            ends[i:j] = kept_ends
            self.total -= removed
        return removed

    def containing(self, seq: int) -> int:
        """The index of the block holding byte `seq`, or -1."""
        i = bisect_right(self.starts, seq) - 1
        if i >= 0 and seq < self.ends[i]:
            return i
        return -1

    def covered_between(self, low: int, high: int) -> int:
        """Bytes covered in [low, high); costs the blocks it crosses."""
        starts, ends = self.starts, self.ends
        covered = 0
        k = bisect_right(ends, low)  # the first block ending above low
        while k < len(starts) and starts[k] < high:
            covered += _below(max(starts[k], low), ends[k], high)
            k += 1
        return covered

    def drop_below(self, seq: int, mark: int = 0) -> int:
        """Forget every byte below `seq` (the blocks a cumulative ACK covers, clipping the
        one it enters). Returns how many of the forgotten bytes lay below `mark`."""
        starts, ends = self.starts, self.ends
        k = bisect_right(ends, seq)  # blocks 0..k-1 end at or below seq
        below = 0
        for n in range(k):
            self.total -= ends[n] - starts[n]
            below += _below(starts[n], ends[n], mark)
        if k:
            del starts[:k]
            del ends[:k]
        if starts and starts[0] < seq:
            self.total -= seq - starts[0]
            below += _below(starts[0], seq, mark)
            starts[0] = seq
        return below


def _below(start: int, end: int, mark: int) -> int:
    """How many bytes of [start, end) lie below `mark`."""
    if mark <= start:
        return 0
    return (end if end < mark else mark) - start
