"""The rule every findings table is graded by (`grading.md`): a finding's verdict is computed
from the tests its check runs, never written by hand.

A finding is tested on what its paper's sentence states, each part as its own test:

- an **ordering** (this is faster than that, a curve falls, four values are equal): exact,
  on the means of the runs;
- a **size** (a number the paper gives): within ±15 % of it; a relative **change**: the same
  sign and within 1.5x of the paper's change in size;
- a **shape** (levels off, flat, smooth): with the tolerance its test states;
- the **statistic**: not modelled (the paper measures something the engine does not), or
  our reading of a statistic the paper does not define.

reproduced: every test holds. partly: the orderings hold but a number, a shape or the
statistic does not (a claim with no ordering: only our reading of its statistic misses).
not: an ordering fails, the statistic is not modelled, or a claim that is only a number or a
shape misses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["reproduced", "partly", "not"]
Kind = Literal["ordering", "size", "shape", "reading", "unmodelled"]

#: a number the paper gives: ours within ±15 % of it
TOLERANCE = 0.15
#: a relative change the paper gives: ours of the same sign and within 1.5x of it in size
FACTOR = 1.5


@dataclass(frozen=True)
class Test:
    """One part of a finding's claim, tested on our runs."""

    kind: Kind
    what: str
    holds: bool

    def render(self) -> str:
        return f"{'✓' if self.holds else '✗'} {self.kind}: {self.what}"


def ordering(what: str, holds: bool) -> Test:
    return Test("ordering", what, bool(holds))


def shape(what: str, holds: bool) -> Test:
    return Test("shape", what, bool(holds))


def within(ours: float, paper: float, tolerance: float = TOLERANCE) -> bool:
    return paper != 0 and abs(ours / paper - 1) <= tolerance


def size(what: str, ours: float, paper: float, *, unit: str = "", digits: int = 0) -> Test:
    """Ours within ±15 % of the paper's number."""
    text = (
        f"{what} {ours:,.{digits}f}{unit} vs {paper:,.{digits}f}{unit} "
        f"({(ours / paper - 1) * 100:+.0f} %, ±{TOLERANCE * 100:.0f} %)"
    )
    return Test("size", text, within(ours, paper))


def sizes(what: str, ours: Iterable[float], paper: Iterable[float], *, unit: str = "") -> Test:
    """Every number of a series within ±15 % of the paper's."""
    pairs = list(zip(ours, paper, strict=True))
    off = [(o / p - 1) * 100 for o, p in pairs]
    text = f"{what} " + " / ".join(f"{x:+.0f}" for x in off) + f" % (±{TOLERANCE * 100:.0f} %)"
    return Test("size", text, all(within(o, p) for o, p in pairs))


def same_change(ours: float, paper: float, factor: float = FACTOR) -> bool:
    return ours * paper > 0 and 1 / factor <= ours / paper <= factor


def change(what: str, ours: float, paper: float) -> Test:
    """A relative change (a fraction, −0.15 for −15 %): same sign, within 1.5x in size."""
    text = f"{what} {ours * 100:+.0f} % vs {paper * 100:+.0f} % (same sign, within {FACTOR}x)"
    return Test("size", text, same_change(ours, paper))


def reading(what: str) -> Test:
    """The paper's statistic is undefined and we read it: at best partly."""
    return Test("reading", what, False)


def unmodelled(what: str) -> Test:
    """The paper's statistic is not modelled: not."""
    return Test("unmodelled", what, False)


def grade(tests: Iterable[Test]) -> Verdict:
    tests = list(tests)
    if not tests or any(t.kind == "unmodelled" for t in tests):
        return "not"
    orderings = [t for t in tests if t.kind == "ordering"]
    if not all(t.holds for t in orderings):
        return "not"
    if all(t.holds for t in tests):
        return "reproduced"
    misses = [t for t in tests if not t.holds]
    return "partly" if orderings or all(t.kind == "reading" for t in misses) else "not"


__all__ = [
    "FACTOR",
    "TOLERANCE",
    "Test",
    "Verdict",
    "change",
    "grade",
    "ordering",
    "reading",
    "same_change",
    "shape",
    "size",
    "sizes",
    "unmodelled",
    "within",
]
