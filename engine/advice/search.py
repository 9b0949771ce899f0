"""The advisor (issue 23 scope 3): the cheapest changes that make a flow meet a target,
found by packet-level simulation within a run budget. A `Workflow` (engine/workflow.py).

Round 0 runs the scenario itself, and, when its bounds already say it misses the target,
the first probe of every lever beside it. Then, round by round (engine/advice/tracks.py):

1. every lever alone: the bounds rule out the levers that cannot reach the target (a faster
   link cannot lift a window's bound much; a window past BDP plus queue buys nothing); the
   others are bisected (numbers), climbed (tiers) or tried (variants);
2. when no lever alone meets it, pairs: one lever set (the next tier, a window at its
   knee) while the other is bisected;
3. a lever the bounds rule out gets, budget allowing, one run that shows it (the T3 upgrade
   of a window-limited flow, measured), so the report gives the measured reason.

With randomness in the scenario (loss models, RED, BBR's cycle), every configuration runs
on `replications` seeds (3 unless the request says) and reports a 95% interval; without,
one seed. The state is the measurements alone: every decision is replayed from them, so
`Advisor(scenario, request, state)` proposes exactly what the original would have.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Literal

from engine.advice import tracks
from engine.advice.model import COST_ORDER, Change, CostClass
from engine.advice.observed import readings, record
from engine.advice.options import Lever, default_levers, resolve
from engine.advice.reach import TargetBounds
from engine.advice.reports import (
    AdviceReport,
    Fix,
    Measured,
    Rejection,
    advice_text,
    fix_text,
    in_domain,
    rejection_text,
)
from engine.advice.request import AdviceRequest, is_random, key_of, replications
from engine.advice.target import Target
from engine.scenario import Scenario, TcpBulkFlow
from engine.stats import estimate
from engine.study import get_path
from engine.workflow import Candidate

MAX_PAIRS = 3


class _Plan:
    def __init__(self) -> None:
        self.base: Measured | None = None
        self.high: list[dict[str, Any]] = []  # what the tracks need next
        self.low: list[dict[str, Any]] = []  # runs that show why a lever was ruled out
        self.singles: dict[str, tracks.Answer] = {}
        self.pairs: dict[str, tracks.Answer] = {}
        self.confirm: dict[str, dict[str, Any]] = {}
        self.dominated: set[str] = set()  # levers whose next run costs more than a fix
        self.met = False
        self.pending = 0  # tracks still waiting


class Advisor:
    """The advisor's workflow over one scenario and request."""

    def __init__(
        self,
        scenario: Scenario,
        request: AdviceRequest | dict[str, Any],
        state: dict[str, Any] | None = None,
    ):
        self.scenario = scenario
        self.request = AdviceRequest.model_validate(request)
        self.target = self.request.target
        self.tcp_flows = [f.id for f in scenario.flows if isinstance(f, TcpBulkFlow)]
        flows = self.target.flows(self.tcp_flows)
        unknown = [f for f in flows if f not in self.tcp_flows]
        if unknown or not flows:
            raise ValueError(
                f"target: {unknown or self.target.flow!r} is not a TCP flow of "
                f"the scenario (flows: {self.tcp_flows})"
            )
        specs = self.request.levers or default_levers(scenario, flows)
        self.levers: list[Lever] = resolve(scenario, specs, self.request.costs)
        self.paths = TargetBounds(scenario, self.target, flows)
        n = replications(scenario, self.request.replications)
        if self.request.assurance == "interval" and is_random(scenario) and n < 2:
            raise ValueError(
                "assurance: 'interval' needs an interval, at least 2 seeds per configuration "
                "of a scenario with randomness; replications is 1"
            )
        self.seeds = [scenario.seed + i for i in range(n)]
        state = state or {}
        self._round: int = int(state.get("round", 0))
        self._proposed: dict[str, dict[str, Any]] = dict(state.get("proposed", {}))
        self._observed: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in state.get("observed", {}).items()
        }
        self.bounds = tracks.Bounds(
            self.paths.value,
            self.paths.limit,
            self.paths.reaches,
            self.target.better,
            self.paths.detail,
            self._saving_helps,
        )

    # --- the Workflow contract ---------------------------------------------------------------

    def propose(self) -> list[Candidate]:
        if self._outstanding():
            return []
        plan = self._plan()
        remaining = self.request.budget - self.runs
        per = len(self.seeds)
        chosen: list[dict[str, Any]] = []
        # When the budget cannot run them all, the cheapest levers' probes go first.
        for changes in sorted(_unique(plan.high), key=self.cost):
            if key_of(changes) not in self._proposed and remaining >= per:
                chosen.append(changes)
                remaining -= per
        reserve = per * plan.pending
        for changes in _unique(plan.low):
            if key_of(changes) not in self._proposed and remaining - reserve >= per:
                chosen.append(changes)
                remaining -= per
        out = []
        for changes in chosen:
            key = key_of(changes)
            self._proposed[key] = {"changes": changes, "round": self._round}
            out += [
                Candidate(key=key, changes=changes, seed=s, round=self._round) for s in self.seeds
            ]
        if out:
            self._round += 1
        return out

    def observe(self, key: str, seed: int, summary: dict[str, Any] | None) -> None:
        if key not in self._proposed:
            return
        kept = None
        if summary is not None:
            kept = {
                **record(self.target, summary, self.tcp_flows),
                "limit": self._limit_of(summary),
            }
        self._observed.setdefault(key, {})[str(seed)] = kept

    def finished(self) -> bool:
        if self._outstanding():
            return False
        plan = self._plan()
        return not self._untried(plan) or self.request.budget - self.runs < len(self.seeds)

    def _untried(self, plan: _Plan) -> list[dict[str, Any]]:
        """The configurations the plan wants that have not been proposed."""
        return [c for c in _unique(plan.high + plan.low) if key_of(c) not in self._proposed]

    def state(self) -> dict[str, Any]:
        return {"round": self._round, "proposed": self._proposed, "observed": self._observed}

    def report(self) -> AdviceReport:
        plan = self._plan()
        done = self.finished()
        fixes = sorted(self._fixes(plan), key=lambda f: (f.cost, self._rank(f.measured)))
        rejected = self._rejections(plan, done)
        best = None
        if not fixes:
            best = self._best()
        # Ended by the budget with configurations still wanted: whether any meets is unknown.
        cut_short = done and bool(self._untried(plan))
        reachable = True if fixes else (False if done and not plan.met and not cut_short else None)
        report = AdviceReport(
            target=self.target,
            base=plan.base,
            met_already=plan.met,
            fixes=fixes,
            rejected=rejected,
            reachable=True if plan.met else reachable,
            best=best,
            replications=len(self.seeds),
            runs=self.runs,
            budget=self.request.budget,
            rounds=self._round,
            finished=done,
            cut_short=cut_short,
            assurance=self.request.assurance,
            text=[],
        )
        report.text = advice_text(report)
        return report

    def cost(self, changes: dict[str, Any]) -> float:
        """What a configuration costs per month: the sum of its levers' costs."""
        return sum(lv.cost(changes[lv.paths[0]]) for lv in self.levers if lv.paths[0] in changes)

    def tried(self) -> list[dict[str, Any]]:
        """Every configuration proposed so far, in order."""
        return [entry["changes"] for entry in self._proposed.values()]

    @property
    def runs(self) -> int:
        return len(self._proposed) * len(self.seeds)

    # --- measurements ------------------------------------------------------------------------

    def _outstanding(self) -> bool:
        return any(len(self._observed.get(k, {})) < len(self.seeds) for k in self._proposed)

    def measured(self, changes: dict[str, Any]) -> Measured | None:
        """The configuration's runs, or None while any is missing."""
        key = key_of(changes)
        seen = self._observed.get(key, {})
        if key not in self._proposed or len(seen) < len(self.seeds):
            return None
        read = readings(seen, self.seeds)
        records, values, unfinished = read.records, read.values, read.unfinished
        ok = [float(v) for v in values if v is not None]
        mean = ci = None
        if ok and not unfinished:
            est = estimate(ok)
            mean = est.mean
            ci = in_domain(est.ci95)
        limits = Counter(r["limit"] for r in records if r is not None and r["limit"])
        return Measured(
            key=key,
            changes=changes,
            seeds=self.seeds,
            values=values,
            n=len(ok),
            unfinished=unfinished,
            mean=mean,
            ci95=ci,
            meets=len(ok) == len(self.seeds) and self._meets(mean, ci),
            limit=limits.most_common(1)[0][0] if limits else None,
        )

    def _meets(self, mean: float | None, ci95: list[float] | None) -> bool:
        """By the mean, or by the interval's far end when the request asks for assurance
        (one seed, with no randomness: the value is exact, its own interval)."""
        if self.request.assurance == "interval" and ci95 is not None:
            return self.target.meets(self.target.far_end(ci95))
        return self.target.meets(mean)

    def _limit_of(self, summary: dict[str, Any]) -> str | None:
        flows = self.target.flows(self.tcp_flows)
        worst, value = None, None
        for fid in flows:
            v = Target(flow=fid, metric=self.target.metric, value=self.target.value).measure(
                summary, self.tcp_flows
            )
            if v is not None and (value is None or self.target.better(value, v)):
                worst, value = fid, v
        diagnosis = (summary.get("diagnosis") or {}).get(worst or flows[0]) or {}
        return diagnosis.get("limit")

    def _rank(self, m: Measured) -> float:
        mean = m.mean if m.mean is not None else math.inf
        return mean if self.target.lower_is_better else -mean

    def _best(self) -> Measured | None:
        best = None
        for entry in self._proposed.values():
            m = self.measured(entry["changes"])
            if (
                m is not None
                and m.mean is not None
                and (best is None or self._rank(m) < self._rank(best))
            ):
                best = m
        return best

    # --- the bounds ----------------------------------------------------------------------------

    def bound_value(self, changes: dict[str, Any]) -> float | None:
        """What the bounds allow the target at this configuration (engine/advice/reach.py)."""
        return self.paths.value(changes)

    def _saving_helps(self, seconds: float) -> bool | None:
        """Could a transfer `seconds` shorter than the measured base meet the target? For a
        goodput, over the flow's active time (its transfer, or its run when unlimited)."""
        base = self.measured({})
        if base is None or base.mean is None or not math.isfinite(base.mean):
            return None
        if self.target.lower_is_better:
            return self.target.meets(base.mean - seconds)
        active = self.scenario.duration
        flows = [f for f in self.scenario.flows if f.id in self.paths.models]
        if flows and all(isinstance(f, TcpBulkFlow) and f.bytes for f in flows) and base.mean:
            active = max(f.bytes * 8 / base.mean for f in flows)  # type: ignore[union-attr, operator]
        if active <= seconds:
            return True
        return self.target.meets(base.mean * active / (active - seconds))

    # --- the plan, replayed from the measurements ------------------------------------------------

    def _plan(self) -> _Plan:
        plan = _Plan()
        plan.base = self.measured({})
        if plan.base is None:
            plan.high.append({})
            if self.paths.reaches({}):
                return plan  # it may already meet the target: wait for it
        elif plan.base.meets:
            plan.met = True
            return plan
        probe = self.measured
        base_bound = self.bound_value({})
        answers = {lv.name: tracks.search(lv, {}, self.bounds, probe) for lv in self.levers}
        cheapest = min(
            (self.cost(c) for a in answers.values() for c, *_ in _met(a)), default=math.inf
        )
        for lever in self.levers:
            answer = plan.singles[lever.name] = answers[lever.name]
            if (
                isinstance(answer, tracks.Pending)
                and not answer.found
                and all(self.cost(c) > cheapest for c in answer.needs)
            ):
                # A dearer configuration than a fix that already meets the target: not run.
                plan.dominated.add(lever.name)
                continue
            self._collect(plan, answer)
            if isinstance(answer, tracks.Pruned | tracks.Missed):
                config = tracks.confirmation(lever, self.bounds, base_bound)
                if config is not None and isinstance(answer, tracks.Pruned):
                    plan.confirm[lever.name] = config
                    plan.low.append(config)
        if cheapest < math.inf or plan.pending or not self.request.combine:
            return plan
        for (a, b), answer in self._pairs(plan).items():
            plan.pairs[f"{a.name} with {b.name}"] = answer
            self._collect(plan, answer)
        return plan

    def _collect(self, plan: _Plan, answer: tracks.Answer) -> None:
        if isinstance(answer, tracks.Pending):
            plan.high += answer.needs
            plan.pending += 1

    def _pairs(self, plan: _Plan) -> dict[tuple[Lever, Lever], tracks.Answer]:
        """Pairs whose bounds together reach the target: a lever set, a numeric one climbed;
        the cheapest MAX_PAIRS."""
        numeric = [lv for lv in self.levers if lv.shape == "numeric"]
        found: list[tuple[float, Lever, Lever]] = []
        for a in self.levers:
            for b in numeric:
                if set(a.paths) & set(b.paths):  # itself, or a window's buffer and the window
                    continue
                if a.shape == "numeric":  # set the cheaper at its knee, climb the dearer
                    ca, cb = COST_ORDER[a.type.cost_class], COST_ORDER[b.type.cost_class]
                    if (ca, self.levers.index(a)) > (cb, self.levers.index(b)):
                        continue
                first = tracks.pair_values(a, b, self.bounds)
                if first:
                    found.append((a.cost(first[0]), a, b))
        found.sort(key=lambda t: t[0])
        return {
            (a, b): tracks.pair(a, b, self.bounds, self.measured) for _, a, b in found[:MAX_PAIRS]
        }

    # --- the report's parts ----------------------------------------------------------------------

    def _fixes(self, plan: _Plan) -> list[Fix]:
        out = []
        for answer in [*plan.singles.values(), *plan.pairs.values()]:
            out += [self._fix(c, m, note) for c, m, note in _met(answer)]
        return out

    def _fix(self, changes: dict[str, Any], m: Measured, note: str) -> Fix:
        moved = [lv for lv in self.levers if lv.paths[0] in changes]
        data = self.scenario.model_dump(mode="json")
        listed = [Change(path=p, value=v, was=get_path(data, p)) for p, v in changes.items()]
        listed = [c for c in listed if c.was != c.value]  # a companion already so
        classes: list[CostClass] = sorted(
            {lv.type.cost_class for lv in moved}, key=COST_ORDER.__getitem__
        )
        fix = Fix(
            levers=[lv.name for lv in moved],
            changes=listed,
            cost=self.cost(changes),
            cost_classes=classes,
            measured=m,
            bound=self.bound_value(changes),
            note=note,
            text="",
        )
        fix.text = fix_text(self.target, fix, self.request.assurance)
        return fix

    def _rejections(self, plan: _Plan, done: bool) -> list[Rejection]:
        out = []
        for lever in self.levers:
            answer = plan.singles.get(lever.name)
            reason: Literal["bound", "measured", "budget", "dominated"] | None = None
            bound = limit = m = None
            if isinstance(answer, tracks.Pruned):
                reason, bound, limit = "bound", answer.best_bound, answer.limit
                config = plan.confirm.get(lever.name)
                m = self.measured(config) if config is not None else None
            elif isinstance(answer, tracks.Missed):
                reason, m = "measured", answer.best
            elif lever.name in plan.dominated:
                reason = "dominated"
            elif isinstance(answer, tracks.Pending) and done:
                reason = "budget"
            if reason is None:
                continue
            rej = Rejection(
                lever=lever.name,
                paths=lever.paths,
                reason=reason,
                bound=bound,
                limit=limit,
                measured=m,
                text="",
            )
            rej.text = rejection_text(self.target, rej)
            out.append(rej)
        return out


def _met(answer: tracks.Answer) -> list[tuple[dict[str, Any], Measured, str]]:
    """The configurations of a track that met the target so far."""
    if isinstance(answer, tracks.Found):
        return answer.fixes
    if isinstance(answer, tracks.Pending):
        return answer.found
    return []


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for c in items:
        seen.setdefault(key_of(c), c)
    return list(seen.values())
