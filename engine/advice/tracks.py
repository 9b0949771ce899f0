"""How the advisor searches one lever, or one pair of levers, for the cheapest value that meets
the target: pure functions over what has been measured so far.

Each track is replayed from the start on every call with the measurements known at that
moment (`probe(changes)` returns the measured outcome, or None when that configuration has
not been simulated yet): it walks the same decisions, and stops at the first configuration
it still needs. So a track holds no state of its own, and the advisor restored from its
stored measurements in another process takes exactly the same path.

- `climb`: a lever whose higher values cost more and help more (a window, a CIR, Be, a queue).
  The bounds give the smallest value that could meet the target; below it nothing can, so
  the first probe is there. A miss climbs by GROW until a value meets, then bisection closes
  on the smallest measured value that meets, to the lever's grid or TOLERANCE.
- `ladder`: tiers or listed values, cheapest first, up to the first that meets.
- `choices`: values of equal cost (variants, switches): every one the bounds allow is run,
  and each one that meets is a fix.
- `pair`: when no single lever reaches the target, one lever set (a ladder's tier, a
  numeric lever at its knee) while the other climbs.

A track's answer: `Pending` (configurations to run), `Found` (fixes), `Missed` (nothing
met; the best measured), or `Pruned` (the bounds rule the lever out; optionally the one
configuration worth measuring to show it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.advice.options import Lever
from engine.advice.reports import Measured
from engine.advice.whatif import Bound
from engine.protocol import TCP_IP_HEADERS

GROW = 1.25  # a missed probe's next value, as a factor
TOLERANCE = 0.02  # bisection stops when the bracket is this narrow (relative)
MAX_PROBES = 7  # per climb
KNEE = 0.005  # a bound within this of its best counts as the best

Changes = dict[str, Any]
Probe = Callable[[Changes], Measured | None]


@dataclass
class Pending:
    needs: list[Changes]
    found: list[tuple[Changes, Measured, str]] = field(default_factory=list)  # met so far


@dataclass
class Found:
    fixes: list[tuple[Changes, Measured, str]]  # changes, outcome, note


@dataclass
class Missed:
    best: Measured | None
    tried: list[Measured] = field(default_factory=list)


@dataclass
class Pruned:
    best_bound: float | None  # the target metric the bounds allow at the lever's best
    limit: str | None  # what binds there
    confirm: Changes | None  # the configuration worth measuring to show it


Answer = Pending | Found | Missed | Pruned


class Bounds:
    """The target's optimistic figure for a configuration (engine/advice/whatif.py), and the
    path facts under it of the flow that binds the target."""

    def __init__(
        self,
        value: Callable[[Changes], float | None],
        limit: Callable[[Changes], str | None],
        reaches: Callable[[Changes], bool],
        better: Callable[[float, float], bool],
        detail: Callable[[Changes], Bound],
        saving_helps: Callable[[float], bool | None],
    ):
        self.value = value
        self.limit = limit
        self.reaches = reaches
        self.better = better
        self.detail = detail
        # Whether taking this many seconds off the measured base could meet the target
        # (None while the base is not measured).
        self.saving_helps = saving_helps


def _merge(*parts: Changes) -> Changes:
    out: Changes = {}
    for p in parts:
        out.update(p)
    return out


def knee(lever: Lever, fixed: Changes, b: Bounds, top: float) -> Any:
    """The smallest value on the lever's grid whose bound is within KNEE of the bound at
    `top`: beyond it the bounds say the lever buys nothing (a window past the BDP)."""
    best = b.value(_merge(fixed, lever.changes(lever.grid(top))))
    if best is None:
        return lever.grid(top)

    def good(x: Any) -> bool:
        v = b.value(_merge(fixed, lever.changes(x)))
        if v is None:
            return False
        return abs(v - best) <= KNEE * abs(best) or b.better(v, best)

    return _first(lever, 0.0, top, good)


def _first(lever: Lever, low: float, high: float, ok: Callable[[Any], bool]) -> Any:
    """The smallest grid value in (low, high] for which `ok` holds (ok is monotone), found
    by bisection on the bounds alone: no simulation."""
    lo, hi = low, high
    if not ok(lever.grid(hi)):
        return None
    while True:
        mid = lever.grid((lo + hi) / 2)
        if mid >= lever.grid(hi) or mid <= lo:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return lever.grid(hi)


def climb(lever: Lever, fixed: Changes, top: float, b: Bounds, probe: Probe) -> Answer:
    """The smallest measured value of a numeric lever, in (current, top], that meets."""

    def at(x: Any) -> Changes:
        return _merge(fixed, lever.changes(x))

    first = _first(lever, float(lever.current), top, lambda x: b.reaches(at(x)))
    if first is None:
        return Pruned(b.value(at(lever.grid(top))), b.limit(at(lever.grid(top))), None)
    x, fail, ok = first, None, None
    hint = _start(lever, fixed, b, top)
    if hint is not None and hint > first:
        # The bounds allow less, but a value this size is the one that can work (a queue
        # that holds the BDP): start there and bisect down toward the current value.
        x, fail = hint, lever.current
    tried: list[Measured] = []
    for _ in range(MAX_PROBES):
        m = probe(at(x))
        if m is None:
            so_far: list[tuple[Changes, Measured, str]] = (
                [(at(ok[0]), ok[1], "smaller values were not all tried")] if ok else []
            )
            return Pending([at(x)], so_far)
        tried.append(m)
        if m.meets:
            ok = (x, m)
        else:
            fail = x
        if ok is None:
            if x >= lever.grid(top):
                return Missed(_best(tried, b), tried)
            x = max(lever.grid(min(top, x * GROW)), lever.grid(x + lever.step()))
            continue
        if fail is None:
            return Found([(at(ok[0]), ok[1], "the bounds rule out anything smaller")])
        mid = lever.grid((fail + ok[0]) / 2)
        if mid >= ok[0] or mid <= fail or ok[0] / fail - 1 <= TOLERANCE:
            return Found([(at(ok[0]), ok[1], "the smallest measured value that meets the target")])
        x = mid
    if ok is not None:
        return Found([(at(ok[0]), ok[1], f"bisection stopped after {MAX_PROBES} probes")])
    return Missed(_best(tried, b), tried)


def _shaping(lever: Lever, fixed: Changes, b: Bounds, probe: Probe) -> Answer:
    """A shaper is worth one probe: at the knee of its bound (the contract's rate, below
    which the policer discards nothing), on the grid below it. Shaping slower only slows the
    flow; faster, the policer discards again."""
    k = knee(lever, fixed, b, top(lever, fixed, b))
    rate = math.floor(float(k) / lever.step()) * lever.step() if k is not None else None
    if not rate:
        return Pruned(None, None, None)
    config = _merge(fixed, lever.changes(rate))
    if not b.reaches(config):
        return Pruned(b.value(config), b.limit(config), None)
    m = probe(config)
    if m is None:
        return Pending([config])
    return Found([(config, m, "at the contract's rate")]) if m.meets else Missed(m, [m])


def _start(lever: Lever, fixed: Changes, b: Bounds, top: float) -> Any:
    """Where a lever the bounds cannot judge starts: a queue at one BDP (or the window's
    excess over it), Linux's initial window of 10 segments."""
    label = lever.type.label
    if label == "queue":
        d = b.detail(fixed)
        packets = math.ceil(max(d.bdp_bytes, d.window_bytes - d.bdp_bytes) / lever.mss) + 1
        unit = 1 if lever.type.kind == "packets" else lever.mss + TCP_IP_HEADERS
        return lever.grid(min(top, packets * unit))
    if label == "initial_cwnd":
        return lever.grid(min(top, 10))
    return None


def ladder(lever: Lever, fixed: Changes, b: Bounds, probe: Probe) -> Answer:
    """The cheapest tier (or listed value) that meets."""
    values = [v for v in lever.ordered() if b.reaches(_merge(fixed, lever.changes(v)))]
    if not values:
        top = lever.ordered()[-1:] or [lever.current]
        at = _merge(fixed, lever.changes(top[0]))
        return Pruned(b.value(at), b.limit(at), None)
    tried = []
    for v in values:
        m = probe(_merge(fixed, lever.changes(v)))
        if m is None:
            return Pending([_merge(fixed, lever.changes(v))])
        tried.append(m)
        if m.meets:
            note = (
                "the cheapest that meets the target"
                if v == values[0]
                else ("the cheaper ones the bounds allow did not meet it")
            )
            return Found([(_merge(fixed, lever.changes(v)), m, note)])
    return Missed(_best(tried, b), tried)


def choices(lever: Lever, fixed: Changes, b: Bounds, probe: Probe) -> Answer:
    """Every value the bounds allow, run together; each that meets is a fix."""
    values = [v for v in lever.choices() if b.reaches(_merge(fixed, lever.changes(v)))]
    if not values:
        at = _merge(fixed, lever.changes(lever.choices()[0])) if lever.choices() else fixed
        return Pruned(b.value(at), b.limit(at), None)
    configs = [_merge(fixed, lever.changes(v)) for v in values]
    measured = [probe(c) for c in configs]
    waiting = [c for c, m in zip(configs, measured, strict=True) if m is None]
    if waiting:
        return Pending(waiting)
    done = [(c, m) for c, m in zip(configs, measured, strict=True) if m is not None]
    fixes = [(c, m, "") for c, m in done if m.meets]
    if fixes:
        return Found(fixes)
    tried = [m for _, m in done]
    return Missed(_best(tried, b), tried)


def _best(tried: list[Measured], b: Bounds) -> Measured | None:
    best = None
    for m in tried:
        if m.mean is not None and (
            best is None or best.mean is None or b.better(m.mean, best.mean)
        ):
            best = m
    return best


def search(lever: Lever, fixed: Changes, b: Bounds, probe: Probe) -> Answer:
    """One lever's track, by its shape."""
    if lever.shape == "numeric" and lever.type.label == "queue":
        d = b.detail(fixed)
        holds = math.ceil(d.window_bytes / lever.mss) + 1
        unit = 1 if lever.type.kind == "packets" else lever.mss + TCP_IP_HEADERS
        if float(lever.current) >= holds * unit:
            # The queue already holds the whole window: a larger one never fills.
            return Pruned(b.value(fixed), "queue_holds_window", None)
    if lever.shape == "numeric" and lever.type.label in ("rcv_buf", "snd_buf"):
        k = knee(lever, fixed, b, min(lever.highest(), SEARCH_CEILING))
        if k is not None and float(lever.current) >= k:
            # The window already covers the BDP: a larger one only fills the queue.
            return Pruned(b.value(fixed), "window_covers_bdp", None)
    if lever.shape == "numeric" and lever.type.label == "initial_cwnd" and not fixed:
        # Slow start from a larger initial window saves at most the round trips it takes
        # to grow from the current one (x1.5 per round trip with delayed ACKs).
        d = b.detail(fixed)
        rounds = math.log(max(top(lever, fixed, b), 1.0) / float(lever.current)) / math.log(1.5)
        if b.saving_helps(rounds * d.rtt) is False:
            return Pruned(b.value(fixed), "slow_start_saves_too_little", None)
    if lever.type.label == "shaping":
        return _shaping(lever, fixed, b, probe)
    if lever.shape == "numeric":
        return climb(lever, fixed, top(lever, fixed, b), b, probe)
    if lever.shape == "ordered":
        return ladder(lever, fixed, b, probe)
    return choices(lever, fixed, b, probe)


SEARCH_CEILING = 1e12  # bisection's upper end for a lever with no limit of its own


def top(lever: Lever, fixed: Changes, b: Bounds) -> float:
    """The highest value worth trying. A window: the knee of its bound (the BDP) plus the
    bottleneck's queue, beyond which the extra flight only overflows the queue. A queue:
    the flight the window allows (a queue beyond it never fills). An initial window: the
    whole window. A CIR, Be: the knee, where the contract stops binding."""
    hi = min(lever.highest(), SEARCH_CEILING)
    label = lever.type.label
    d = b.detail(fixed)
    if label in ("rcv_buf", "snd_buf"):
        k = knee(lever, fixed, b, hi)
        if k is None:
            return hi
        queue = b.detail(_merge(fixed, lever.changes(k))).queue_bytes or 0.0
        return float(min(hi, lever.grid(k + queue)))
    if label == "queue":
        packets = math.ceil(max(d.window_bytes, d.bdp_bytes) / lever.mss) + 1
        unit = 1 if lever.type.kind == "packets" else lever.mss + TCP_IP_HEADERS
        return float(min(hi, max(2 * float(lever.current), packets * unit)))
    if label == "initial_cwnd":
        return float(min(hi, max(1, math.ceil(d.window_bytes / lever.mss))))
    k = knee(lever, fixed, b, hi)
    return float(hi if k is None else k)


def confirmation(lever: Lever, b: Bounds, base: float | None) -> Changes | None:
    """For a lever the bounds rule out: the one configuration worth measuring to show it,
    when the lever moves the bound at all (a faster link for a window-limited flow: the
    next tier; a window: its knee, the best this path can do; a shaper that caps the flow:
    on). None when the lever leaves the bound where it is (a variant, a queue)."""
    if lever.shape == "numeric":
        x = knee(lever, {}, b, top(lever, {}, b))
        config = lever.changes(x) if x is not None and x != lever.current else None
    elif lever.shape == "ordered":
        values = lever.ordered()
        config = lever.changes(values[0]) if values else None
    else:
        values = lever.choices()
        config = lever.changes(values[0]) if len(values) == 1 else None
    if config is None or base is None:
        return None
    v = b.value(config)
    if v is None or abs(v - base) <= 0.05 * abs(base):
        return None
    return config


def pair_values(a: Lever, b: Lever, bnd: Bounds) -> list[Any]:
    """The values of `a`, cheapest first (at most 3), with which `b` at its best reaches the
    target by the bounds; a numeric `a` is set at its knee."""
    if a.shape == "numeric":
        k = knee(a, {}, bnd, top(a, {}, bnd))
        values = [] if k is None else [k]
    elif a.shape == "ordered":
        values = a.ordered()[:4]
    else:
        values = a.choices()[:4]
    out = []
    for v in values:
        fixed = a.changes(v)
        if bnd.reaches(_merge(fixed, b.changes(b.grid(top(b, fixed, bnd))))):
            out.append(v)
    return out[:3]


def pair(a: Lever, b: Lever, bnd: Bounds, probe: Probe) -> Answer:
    """`a` set to each of its values in turn, `b` climbed with it; the first that meets."""
    tried: list[Measured] = []
    for v in pair_values(a, b, bnd):
        fixed = a.changes(v)
        answer = climb(b, fixed, top(b, fixed, bnd), bnd, probe)
        if isinstance(answer, Pending | Found):
            return answer
        if isinstance(answer, Missed):
            tried += answer.tried
    return Missed(_best(tried, bnd), tried)
