"""The advice audited as a skeptical user would, by simulation: every remedy of every
scenario's diagnosis measured (the remedy check), and each line checked against what was
measured and against its own words. Prints figures and flags; asserts nothing (the flags
are for a reader to judge: a flag is a question, the evidence is printed beside it).

    .venv/bin/python bench/advice_audit.py [--only NAME,NAME] [--no-advise] [--no-probes]
        [--jobs 1]

The corpus: every preset of kind scenario, docs/examples/fr-backup.yaml, and five user
scenarios built below (a satellite hop, a shallow 100 Mbit/s queue, a shared bottleneck,
BBR over the policed Frame Relay PVC with and without SACK); then PROBES, four of them with a
setting or two as a user might leave them (SACK off, a 1 s minimum RTO, T1 access ports,
BECN shaping on). With the compiled engine the whole bench takes a few minutes.

Flags, per remedy (the check's verdict is the measurement):

- a: its sentence says it helps and it measured worse; or the recommended remedy did not
  measure better. (a?: it said it helps and measured no change: a question, not a fault.)
- b: a change to what the scenario already has (the value equal to the scenario's, a switch
  already on), or a `was` that is not the scenario's value.
- c: "won't help", and measured more than 5% better: the bounds were wrong.
- d: the recommendation is not the cheapest (by cost class, then by the cost table's price)
  of the remedies measured within 10% of the largest gain.
- e: its number contradicts its own words (a window "to cover the BDP" or a queue "of one
  BDP" that is several; a Be that does not reach the port or the window it names; a CIR
  after which the contract still binds; a link that is not the next product).
- f: the bound it predicted was beaten by the simulation (the bounds promise an optimistic
  figure, never exceeded).
- g: a link upgrade priced otherwise than its own ladder's price difference (docs/advice.md
  "Costs"), in the check's remedies and in the advisor's fixes.

And the advisor on five of them (target: about half the time now): a "cheapest fix" that
does not meet the target, or one dearer than another configuration it measured meeting it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advice_corpus import ADVISE, corpus  # noqa: E402

from engine.advice.check import NEAR_BEST, RemedyCheck
from engine.advice.levers import CostTable, ladder_for, lever_type
from engine.advice.local import drive
from engine.advice.model import COST_ORDER, Change, Remedy
from engine.advice.options import LeverSpec, resolve
from engine.advice.reports import CheckItem
from engine.advice.request import AdviceRequest
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.advice.words import changes as change_words
from engine.protocol import TCP_IP_HEADERS
from engine.scenario import Scenario
from engine.study import get_path

GAIN = 5.0  # per cent: a "won't help" remedy measured this much better is a flag (c)


# --- the checks ------------------------------------------------------------------------------


class _Check(RemedyCheck):
    """The remedy check, keeping the base run's first summary (its diagnosis)."""

    base_summary: dict[str, Any] | None = None

    def observe(self, key: str, seed: int, summary: dict[str, Any] | None) -> None:
        if key == "base" and summary is not None and self.base_summary is None:
            self.base_summary = summary
        super().observe(key, seed, summary)


def price(scenario: Scenario, changes: list[Change]) -> float | None:
    """The cost table's monthly price of a remedy's changes (a shaper counted once), as the
    advisor prices its levers (engine/advice/options.py)."""
    total, shaper = 0.0, False
    table = CostTable()
    for c in changes:
        t = lever_type(c.path)
        if t is None:
            return None
        if t.cost_class == "shaping":
            total += 0.0 if shaper else table.shaping
            shaper = True
        elif t.cost_class in ("endpoint", "queue"):
            total += table.endpoint if t.cost_class == "endpoint" else table.queue
        elif t.searchable:
            total += resolve(scenario, [LeverSpec(paths=[c.path])], table)[0].cost(c.value)
        else:
            return None  # a Bc, a delay, the run's duration: not priced
    return total


def ladder_price(path: str, was: float, value: float) -> float | None:
    """A link's upgrade priced on its own ladder (docs/advice.md: "the next product of its
    ladder: the price difference per link"), None for a rate the ladder does not sell."""
    del path
    ladder = ladder_for(was)
    at = [t.price for t in ladder if math.isclose(t.bps, value, rel_tol=1e-9)]
    now = [t.price for t in ladder if math.isclose(t.bps, was, rel_tol=1e-9)]
    if not at or not now:
        return None
    return max(at[0] - now[0], 0.0)


def misprice(scenario: Scenario, changes: list[Change], priced: float | None) -> list[str]:
    """Flag g: a configuration's price against its links' own ladders (the rest as the cost
    table has it)."""
    if priced is None:
        return []
    links = [c for c in changes if c.path.endswith((".rate", ".rate_b_to_a"))]
    if not links or any(c.was is None for c in links):
        return []
    own = [ladder_price(c.path, float(c.was), float(c.value)) for c in links]
    if any(p is None for p in own):
        return []
    rest = price(scenario, [c for c in changes if c not in links]) or 0.0
    want = sum(p for p in own if p is not None) + rest
    if math.isclose(want, priced, abs_tol=0.5):
        return []
    return [f"g: priced {priced:,.0f} units; its links' own ladders say {want:,.0f}"]


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def words_vs_numbers(scenario: Scenario, r: Remedy) -> list[str]:
    """Flag e: the remedy's number against its own sentence."""
    out = []
    data = scenario.model_dump(mode="json")
    f = r.figures
    mss = next((fl.tcp.mss for fl in scenario.flows if hasattr(fl, "tcp")), 1460)
    bdp = _num(f.get("bdp"))
    for c in r.changes:
        v = _num(c.value)
        if v is None:
            continue
        leaf = c.path.rsplit(".", 1)[-1]
        if (
            leaf in ("rcv_buf", "snd_buf")
            and r.action in ("raise_rcv_buf", "raise_snd_buf")
            and bdp
        ) and (v < bdp - 1 or v > bdp + 2 * mss):
            out.append(f"e: {leaf} {v:,.0f} B is not the BDP {bdp:,.0f} B it names")
        bad_packets = bdp and (v * mss > bdp + 2 * mss or v * mss < bdp)
        if leaf == "limit_packets" and bad_packets:
            out.append(f"e: queue {v:,.0f} packets ({v * mss:,.0f} B) is not one BDP {bdp:,.0f} B")
        wire = mss + TCP_IP_HEADERS
        bad_bytes = bdp and (v > bdp * wire / mss + 2 * wire or v < bdp)
        if leaf == "limit_bytes" and bad_bytes:
            out.append(f"e: queue {v:,.0f} B is not one BDP {bdp:,.0f} B")
        if leaf == "be" and r.action == "raise_be":
            pvc = get_path(data, c.path.rsplit(".", 1)[0])
            cir, bc = float(pvc["cir"]), float(pvc["bc"])
            if "window_bits" in f and not (
                float(f["window_bits"]) <= bc + v < float(f["window_bits"]) + 1000
            ):
                out.append(
                    f"e: Bc + Be = {bc + v:,.0f} bit does not just cover the window "
                    f"{float(f['window_bits']):,.0f} bit"
                )
            if "port_bps" in f:
                reach = cir + v * cir / bc
                port = float(f["port_bps"])
                if reach > port * (1 + 1e-9) or reach < port - 1000 * cir / bc - 1e-6:
                    out.append(f"e: CIR + Be/Tc = {reach:,.0f} bit/s is not the port's {port:,.0f}")
        if leaf == "rate" and r.action == "upgrade_link" and c.was is not None:
            above = [t.bps for t in ladder_for(float(c.was)) if t.bps > float(c.was) * (1 + 1e-9)]
            if above and not math.isclose(above[0], v):
                out.append(f"e: {c.path} {v:,.0f} is not the next product after {c.was:,.0f}")
    if r.action == "raise_cir" and r.helps and r.predicted and r.predicted.limit == "pvc":
        out.append("e: 'so that the contract no longer binds', yet the contract binds after it")
    if r.action == "lower_min_rto" and not f.get("timeouts"):
        out.append("e: a minimum RTO lowered for a flow with no timeouts")
    return out


def already(scenario: Scenario, r: Remedy) -> list[str]:
    """Flag b: a change to what the scenario has (its own value read back, not `was`)."""
    data = scenario.model_dump(mode="json")
    out = []
    for c in r.changes:
        now = get_path(data, c.path)
        if (
            c.path.endswith(".variant")
            and now == c.value
            or isinstance(c.value, bool)
            and now is c.value
            or (
                _num(c.value) is not None
                and _num(now) is not None
                and math.isclose(float(c.value), float(now), rel_tol=1e-9)
            )
        ):
            out.append(f"b: {c.path} is already {now}")
        if (
            _num(c.was) is not None
            and _num(now) is not None
            and not math.isclose(float(c.was), float(now), rel_tol=1e-9)
        ):
            out.append(f"b: {c.path} was {c.was}, the scenario has {now}")
        if c.path.endswith(".sack") and c.value is True:
            flow = get_path(data, c.path.rsplit(".", 1)[0])
            if flow.get("variant") == "sack":
                out.append("b: SACK proposed to the ns-2 sack variant")
    return out


def bound_beaten(item: CheckItem, metric: str) -> list[str]:
    """Flag f: the simulation did better than the bound the remedy predicted."""
    e, m = item.remedy.predicted, item.after
    if e is None or m is None or m.mean is None:
        return []
    if metric == "completion_time" and e.completion_time and m.mean < e.completion_time * 0.99:
        return [f"f: measured {m.mean:,.1f} s, under the bound's {e.completion_time:,.1f} s"]
    if metric == "goodput_bps" and e.goodput_bps and m.mean > e.goodput_bps * 1.01:
        return [f"f: measured {m.mean:,.0f} bit/s, above the bound's {e.goodput_bps:,.0f}"]
    return []


def pick(items: list[CheckItem], prices: dict[str, float | None]) -> CheckItem | None:
    """The audit's own recommendation: of those measured better, the ones within NEAR_BEST of
    the largest gain, the cheapest by cost class, then by price."""
    better = [i for i in items if i.verdict == "better" and i.pct is not None]
    if not better:
        return None
    top = max(abs(i.pct or 0.0) for i in better)
    near = [i for i in better if abs(i.pct or 0.0) >= NEAR_BEST * top]

    def key(i: CheckItem) -> tuple[int, float]:
        p = prices.get(i.key)
        return COST_ORDER.get(i.remedy.cost_class or "run", 9), math.inf if p is None else p

    return min(near, key=key)


def check(name: str, scenario: Scenario, jobs: int) -> tuple[list[str], Any, float]:
    wf = _Check(scenario, {})
    t0 = time.perf_counter()
    done = drive(scenario, wf, jobs=jobs)
    wall = time.perf_counter() - t0
    rep = done.report
    flags: list[str] = []
    diag = ((wf.base_summary or {}).get("diagnosis") or {}).get(rep.flow or "", {})
    limit = diag.get("limit")
    print(
        f"\n== {name}: flow {rep.flow}, limit {limit}, {done.runs} runs on "
        f"{len(rep.seeds)} seed(s), wall {wall:.0f} s"
    )
    print(f"   base: {rep.text[0]}")
    remedies = [Remedy.model_validate(r) for r in diag.get("remedies") or []]
    unchecked = [r for r in remedies if not r.changes]
    prices = {i.key: price(scenario, i.remedy.changes) for i in rep.items}
    for item in rep.items:
        r = item.remedy
        mine = item_flags(scenario, item, rep.metric, prices[item.key])
        tag = "helps" if r.helps else f"won't ({r.why_not})"
        p = prices[item.key]
        cost = "?" if p is None else f"{p:,.0f}"
        pct = "n/a" if item.pct is None else f"{item.pct:+.1f}%"
        print(f"   [{r.cost_class}/{cost}u {tag}] {item.text}  => {item.verdict} {pct}")
        print(f"       said: {r.text}")
        for fl in mine:
            print(f"       FLAG {fl}")
        flags += [f"{name}: {change_words(r.changes)}: {fl}" for fl in mine]
    for r in unchecked:
        print(f"   [no change] {r.text}")
    last = rep.text[-1] if rep.text else ""
    print(f"   {last}")
    return flags + recommendation_flags(name, rep.items, last, prices), rep, wall


def item_flags(scenario: Scenario, item: CheckItem, metric: str, priced: float | None) -> list[str]:
    """What is wrong with one measured remedy (flags a, b, c, e, f, g)."""
    r = item.remedy
    mine: list[str] = []
    if r.helps and item.verdict == "worse":
        mine.append("a: said to help, measured worse")
    mine += already(scenario, r)
    if not r.helps and item.verdict == "better" and abs(item.pct or 0.0) > GAIN:
        mine.append(f"c: 'won't help' ({r.why_not}) measured {item.pct:+.0f}%")
    mine += words_vs_numbers(scenario, r)
    mine += bound_beaten(item, metric)
    mine += misprice(scenario, r.changes, priced)
    if r.helps and item.verdict == "no change":
        mine.append("a?: said to help (the bounds left room), measured no change")
    return mine


def recommendation_flags(
    name: str, items: list[CheckItem], last: str, prices: dict[str, float | None]
) -> list[str]:
    """What is wrong with the check's conclusion `last` (flags a and d)."""
    flags: list[str] = []
    want = pick(items, prices)
    named = [i for i in items if last.startswith(f"Recommended: {change_words(i.remedy.changes)}")]
    rec = max(named, key=lambda i: len(change_words(i.remedy.changes)), default=None)
    if rec is not None and rec.verdict != "better":
        flags.append(
            f"{name}: a: recommended {change_words(rec.remedy.changes)} measured {rec.verdict}"
        )
    if want is not None and rec is not None and want.key != rec.key:
        fl = (
            f"d: recommended {change_words(rec.remedy.changes)} ({rec.pct:+.0f}%, "
            f"{prices.get(rec.key)}u); the cheapest within {1 - NEAR_BEST:.0%} of the largest "
            f"gain is {change_words(want.remedy.changes)} ({want.pct:+.0f}%, "
            f"{prices.get(want.key)}u)"
        )
        print(f"       FLAG {fl}")
        flags.append(f"{name}: {fl}")
    if want is not None and rec is None:
        flags.append(
            f"{name}: d: nothing recommended, {change_words(want.remedy.changes)} measured better"
        )
    return flags


def advise(name: str, scenario: Scenario, target: str, jobs: int) -> tuple[list[str], float]:
    advisor = Advisor(scenario, AdviceRequest(target=Target.parse(target)))
    t0 = time.perf_counter()
    done = drive(scenario, advisor, jobs=jobs)
    wall = time.perf_counter() - t0
    rep = done.report
    print(f"\n== advise {name} {target}: {done.runs} runs, wall {wall:.0f} s")
    for line in rep.text:
        print(f"   {line}")
    flags = []
    t = rep.target
    data = scenario.model_dump(mode="json")
    met = []
    for changes in advisor.tried():
        m = advisor.measured(changes)
        if (
            m is not None
            and changes
            and m.mean is not None
            and t.meets(m.mean)
            and m.n == len(m.seeds)
        ):
            met.append((advisor.cost(changes), changes, m.mean))
    for fix in rep.fixes:
        if not t.meets(fix.measured.mean):
            flags.append(
                f"advise {name}: fix {change_words(fix.changes)} measured "
                f"{fix.measured.mean} does not meet {target}"
            )
    if rep.fixes:
        first = rep.fixes[0]
        cheaper = [m for m in met if m[0] < first.cost - 1e-9]
        for cost, changes, mean in cheaper:
            flags.append(
                f"advise {name}: cheapest fix costs {first.cost:,.0f}, yet {changes} "
                f"cost {cost:,.0f} and measured {mean:,.1f} (meets)"
            )
    elif met:
        flags.append(
            f"advise {name}: no fix reported, yet {len(met)} measured configurations meet it"
        )
    for fix in rep.fixes:
        listed = [
            Change(path=p, value=v, was=get_path(data, p))
            for p, v in {c.path: c.value for c in fix.changes}.items()
        ]
        for fl in misprice(scenario, listed, fix.cost):
            flags.append(f"advise {name}: fix {change_words(fix.changes)}: {fl}")
    for fl in flags:
        print(f"       FLAG {fl}")
    return flags, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-advise", action="store_true")
    ap.add_argument("--no-probes", action="store_true", help="the corpus alone (PROBES aside)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    scenarios = corpus(probes=not args.no_probes)
    if args.only:
        scenarios = {k: v for k, v in scenarios.items() if k in args.only.split(",")}
    flags: list[str] = []
    bases: dict[str, Any] = {}
    walls: dict[str, float] = {}
    for name, scenario in scenarios.items():
        found, rep, walls[name] = check(name, scenario, args.jobs)
        flags += found
        bases[name] = rep
    if not args.no_advise:
        for name, target in ADVISE.items():
            if name not in scenarios:
                continue
            rep = bases[name]
            if target is None:
                if rep.base is None or rep.base.mean is None or rep.metric != "completion_time":
                    continue
                target = f"{rep.flow}.completion_time<={rep.base.mean / 2:.0f}s"
            found, walls[f"advise {name}"] = advise(name, scenarios[name], target, args.jobs)
            flags += found
    print("\n== flags")
    for fl in flags:
        print(f"   {fl}")
    if not flags:
        print("   none")
    print("\n== wall times")
    for k, w in walls.items():
        print(f"   {k}: {w:.0f} s")
    print(f"   total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
