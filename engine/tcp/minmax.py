"""Kathleen Nichols' windowed max filter, as Linux's lib/win_minmax.c keeps it: the best,
second and third best samples of a sliding window, so an update is constant time. BBR's
BtlBw is the max of its delivery-rate samples over 10 round trips."""

from __future__ import annotations


class WindowedMax:
    """Kathleen Nichols' windowed max (Linux lib/win_minmax.c): the best, second and third
    best samples of a sliding window, so an update is constant time."""

    __slots__ = ("s",)

    def __init__(self) -> None:
        self.s = [(0, 0.0)] * 3  # (time, value), best first

    def get(self) -> float:
        return self.s[0][1]

    def reset(self, t: int, v: float) -> None:
        self.s = [(t, v)] * 3

    def update(self, win: int, t: int, v: float) -> None:
        """minmax_running_max: add the sample `v` taken at `t`; the window is `win`."""
        s = self.s
        if v >= s[0][1] or t - s[2][0] > win:
            self.reset(t, v)  # a new best, or nothing left in the window
            return
        if v >= s[1][1]:
            s[2] = s[1] = (t, v)
        elif v >= s[2][1]:
            s[2] = (t, v)
        dt = t - s[0][0]
        if dt > win:
            # The best has left the window: the others move up, the new sample is third.
            s[0], s[1], s[2] = s[1], s[2], (t, v)
            if t - s[0][0] > win:
                s[0], s[1], s[2] = s[1], s[2], (t, v)
        elif s[1][0] == s[0][0] and dt > win / 4:
            s[2] = s[1] = (t, v)  # a quarter of the window passed: take a second choice
        elif s[2][0] == s[1][0] and dt > win / 2:
            s[2] = (t, v)  # half of it passed: take a third choice
