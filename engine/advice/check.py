"""The remedy check (issue 23 scope 2): every remedy of a run, simulated. A `Workflow`.

Round 0 runs the scenario on the check's seeds (the run's own seed first); its diagnosis
gives the remedies of the flow checked. Round 1 runs each remedy that makes a change, on the
same seeds, so every difference is paired (common random numbers). The report gives each
remedy's measured effect ("p1 Be 32 kbit → 100 kbit: 986 → 538 s (−45%)"), better, worse
or no change, and recommends only the better ones: a remedy that makes things worse is
reported as worse, whatever the bounds predicted.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.advice.model import Remedy
from engine.advice.observed import readings, record
from engine.advice.reports import CheckItem, CheckReport, Measured, in_domain, outcome, pct
from engine.advice.request import is_random, key_of, replications
from engine.advice.target import Target
from engine.advice.words import changes as change_words
from engine.advice.words import cost_rank
from engine.scenario import Scenario, TcpBulkFlow
from engine.stats import difference, estimate
from engine.workflow import Candidate

NO_CHANGE = 1.0  # per cent: a single run's change smaller than this is no change
# A remedy measured to give at least this share of the best gain is as good as the best:
# the cheapest of those is the one recommended (delayed ACKs, free, -31% before an uplink
# upgrade's -32%).
NEAR_BEST = 0.9
#: A remedy whose change is at least this large (per cent) but whose interval still holds
#: zero is run on more seeds, MORE_SEEDS at a time, up to `most_seeds`: three seeds of a
#: lossy path can spread so widely that a remedy 95% faster in every seed measured "no
#: change" (CUBIC to BBR at 1 Gb/s and 0.1% loss).
UNCLEAR = 5.0
MORE_SEEDS = 3
MOST_SEEDS = 9


class CheckRequest(BaseModel):
    """Which flow's remedies to check, on how many seeds."""

    model_config = ConfigDict(extra="forbid")

    flow: str | None = Field(
        default=None, description="A TCP flow; null: the first whose diagnosis has remedies"
    )
    replications: int | None = Field(
        default=None, ge=1, le=30, description="Seeds; null: 3 with randomness, else 1"
    )
    most_seeds: int | None = Field(
        default=None,
        ge=1,
        le=30,
        description="Seeds at most: a remedy whose measured change is 5% or more but not yet "
        "sure is run again, with the scenario, on 3 more seeds at a time up to this; null: 9 "
        "with randomness when `replications` is null, else `replications`",
    )


class RemedyCheck:
    """The remedy check's workflow over one scenario (the run's) and request."""

    def __init__(
        self,
        scenario: Scenario,
        request: CheckRequest | dict[str, Any],
        state: dict[str, Any] | None = None,
    ):
        self.scenario = scenario
        self.request = CheckRequest.model_validate(request)
        self.tcp_flows = [f.id for f in scenario.flows if isinstance(f, TcpBulkFlow)]
        if self.request.flow is not None and self.request.flow not in self.tcp_flows:
            raise ValueError(f"flow: {self.request.flow!r} is not a TCP flow of the scenario")
        n = replications(scenario, self.request.replications)
        grows = is_random(scenario) and self.request.replications is None
        self.most = max(n, self.request.most_seeds or (MOST_SEEDS if grows else n))
        if state and "seeds" not in state:
            self.most = n  # a check stored before seeds could grow: its budget is n per run
        state = state or {}
        self._first = [scenario.seed + i for i in range(n)]
        self.seeds: list[int] = list(state.get("seeds", self._first))
        self._round = int(state.get("round", 0))
        self._proposed: dict[str, dict[str, Any]] = dict(state.get("proposed", {}))
        self._observed: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in state.get("observed", {}).items()
        }
        self._flow: str | None = state.get("flow")
        self._metric: str | None = state.get("metric")
        self._remedies = [Remedy.model_validate(r) for r in state.get("remedies", [])]

    # --- the Workflow contract ------------------------------------------------------------------

    def propose(self) -> list[Candidate]:
        if self._outstanding():
            return []
        wanted: list[dict[str, Any]] = []
        if "base" not in self._proposed:
            wanted = [{}]
        elif self._round == 1:
            wanted = [{c.path: c.value for c in r.changes} for r in self._remedies if r.changes]
        elif unclear := self._unclear():
            return self._more_seeds(unclear)
        out = []
        for changes in wanted:
            key = key_of(changes)
            if key in self._proposed:
                continue
            self._proposed[key] = {"changes": changes, "round": self._round, "seeds": self.seeds}
            out += [
                Candidate(key=key, changes=changes, seed=s, round=self._round) for s in self.seeds
            ]
        self._round += 1 if out or self._round == 1 else 0
        return out

    def _more_seeds(self, keys: list[str]) -> list[Candidate]:
        """The scenario and the unclear remedies on the next seeds (paired, as the first)."""
        new = [self.seeds[-1] + 1 + i for i in range(min(MORE_SEEDS, self.most - len(self.seeds)))]
        self.seeds = self.seeds + new
        out = []
        for key in ["base", *keys]:
            entry = self._proposed[key]
            entry["seeds"] = self._seeds_of(key) + new
            out += [
                Candidate(key=key, changes=entry["changes"], seed=s, round=self._round) for s in new
            ]
        self._round += 1
        return out

    def _seeds_of(self, key: str) -> list[int]:
        return list(self._proposed[key].get("seeds", self._first))

    def _unclear(self) -> list[str]:
        """The remedies measured with a change of UNCLEAR% or more that is not yet sure, while
        more seeds are allowed."""
        if len(self.seeds) >= self.most or self._round < 2:
            return []
        base = self._measured("base", {})
        if base is None:
            return []
        out = []
        for r in self._remedies:
            if not r.changes:
                continue
            item = self._item(r, base)
            if item.verdict == "no change" and item.pct is not None and abs(item.pct) >= UNCLEAR:
                out.append(item.key)
        return list(dict.fromkeys(out))  # two remedies of the same changes are one run

    def observe(self, key: str, seed: int, summary: dict[str, Any] | None) -> None:
        if key not in self._proposed:
            return
        if key == "base" and summary is not None and self._flow is None:
            self._pick(summary)
        kept = None
        if summary is not None and self._flow is not None and self._metric is not None:
            kept = record(self._target(self._metric), summary, self.tcp_flows)
            if self._metric == "completion_time":  # and the goodput, should a seed not finish
                kept["g"] = self._target("goodput_bps").measure(summary, self.tcp_flows)
        self._observed.setdefault(key, {})[str(seed)] = kept

    def finished(self) -> bool:
        return not self._outstanding() and self._round >= 2 and not self._unclear()

    def state(self) -> dict[str, Any]:
        return {
            "round": self._round,
            "seeds": self.seeds,
            "proposed": self._proposed,
            "observed": self._observed,
            "flow": self._flow,
            "metric": self._metric,
            "remedies": [r.model_dump(mode="json") for r in self._remedies],
        }

    def report(self) -> CheckReport:
        base = self._measured("base", {})
        items = [self._item(r, base) for r in self._remedies if r.changes] if base else []
        metric = self.metric or "completion_time"
        report = CheckReport(
            flow=self._flow,
            metric=metric,  # type: ignore[arg-type]
            seeds=self.seeds,
            base=base,
            items=sorted(items, key=lambda i: _order(i, metric)),
            runs=sum(len(self._seeds_of(k)) for k in self._proposed),
            finished=self.finished(),
            text=[],
        )
        report.text = _text(report, self._target() if self._flow else None)
        return report

    # --- inside -----------------------------------------------------------------------------

    @property
    def metric(self) -> str | None:
        """The metric compared: the completion time while every base run's transfer finished,
        the goodput once one did not (a time is missing there, a rate is not; the records
        kept since the goodput beside the time). A check stored before keeps its metric."""
        if self._metric == "completion_time" and any(
            r and r.get("unfinished") and "g" in r for r in self._observed.get("base", {}).values()
        ):
            return "goodput_bps"
        return self._metric

    def _seen(self, key: str) -> dict[str, Any]:
        """A configuration's records by seed, in the metric compared."""
        seen = self._observed.get(key, {})
        if self.metric == self._metric:
            return seen
        return {s: r and {"v": r.get("g"), "unfinished": False} for s, r in seen.items()}

    def _pick(self, summary: dict[str, Any]) -> None:
        """The flow checked and the metric its records keep, from the first base run:
        completion time for a transfer that finished (the goodput kept beside it), goodput
        otherwise."""
        diagnosis = summary.get("diagnosis") or {}
        flows = [self.request.flow] if self.request.flow else self.tcp_flows
        for fid in flows:
            remedies = (diagnosis.get(fid) or {}).get("remedies") or []
            if remedies or self.request.flow:
                self._flow = fid
                self._remedies = [Remedy.model_validate(r) for r in remedies]
                break
        if self._flow is None:
            self._flow = flows[0] if flows else None
        f = (summary.get("flows") or {}).get(self._flow or "", {})
        self._metric = "completion_time" if f.get("completed") else "goodput_bps"

    def _target(self, metric: str | None = None) -> Target:
        """The flow checked, read in `metric` (by default the metric compared)."""
        metric = metric or self.metric
        assert self._flow is not None and metric is not None
        return Target(flow=self._flow, metric=metric, value=1.0)  # type: ignore[arg-type]

    def _outstanding(self) -> bool:
        return any(len(self._observed.get(k, {})) < len(self._seeds_of(k)) for k in self._proposed)

    def _by_seed(self, key: str) -> dict[int, float]:
        seen = self._seen(key)
        return {int(s): float(r["v"]) for s, r in seen.items() if r and r["v"] is not None}

    def _measured(self, key: str, changes: dict[str, Any]) -> Measured | None:
        seen = self._seen(key)
        if key not in self._proposed or len(seen) < len(self._seeds_of(key)):
            return None
        seeds = self._seeds_of(key)
        read = readings(seen, seeds)
        unfinished = read.unfinished
        est = estimate([float(v) for v in read.values if v is not None])
        return Measured(
            key=key,
            changes=changes,
            seeds=seeds,
            values=read.values,
            n=est.n,
            unfinished=unfinished,
            mean=None if unfinished else est.mean,
            ci95=None if unfinished else in_domain(est.ci95),
            meets=False,
            limit=None,
        )

    def _item(self, remedy: Remedy, base: Measured) -> CheckItem:
        changes = {c.path: c.value for c in remedy.changes}
        key = key_of(changes)
        after = self._measured(key, changes)
        pct_value = pct_ci = None
        verdict: Literal["better", "worse", "no change", "failed", "pending"] = "pending"
        if after is not None and after.unfinished and not base.unfinished:
            verdict = "worse"  # the transfer no longer finishes
        elif after is not None and (after.mean is None or after.n < len(after.seeds)):
            verdict = "failed"
        elif after is not None:
            d = difference(self._by_seed(key), self._by_seed("base"))
            verdict = "no change"
            if d is not None and d.pct is not None:
                pct_value = d.pct
                pct_ci = list(d.pct_ci95) if d.pct_ci95 else None
                sure = abs(d.pct) >= NO_CHANGE if pct_ci is None else pct_ci[0] * pct_ci[1] > 0
                if sure:
                    lower = self.metric == "completion_time"
                    verdict = "better" if (d.pct < 0) == lower else "worse"
        item = CheckItem(
            remedy=remedy,
            key=key,
            before=base,
            after=after,
            pct=pct_value,
            pct_ci95=pct_ci,
            verdict=verdict,
            recommended=verdict == "better",
            text="",
        )
        item.text = _item_text(item, self._target())
        return item


def _order(item: CheckItem, metric: str) -> tuple[int, float]:
    """Better first, and among them the largest gain first: the most negative change of a
    completion time, the most positive of a goodput (a flow that did not finish)."""
    rank = {"better": 0, "no change": 1, "worse": 2, "failed": 3, "pending": 4}[item.verdict]
    change = item.pct if item.pct is not None else 0.0
    return rank, change if metric == "completion_time" else -change


def _item_text(item: CheckItem, target: Target) -> str:
    what = change_words(item.remedy.changes)
    if item.after is None:
        return f"{what}: not measured yet."
    if item.verdict == "failed" and item.after.unfinished and item.before.unfinished:
        # The runs succeeded; the transfer ended in some seeds only, with the change and
        # without it: no completion time to compare (a longer run would give one).
        return (
            f"{what}: not finished in {item.after.unfinished} of {len(item.after.seeds)} "
            f"runs, nor in {item.before.unfinished} of {len(item.before.seeds)} as it is: "
            "no completion time to compare."
        )
    if item.verdict == "failed":
        return f"{what}: the run failed."
    before = target.show(item.before.mean)
    text = f"{what}: {before} → {outcome(target, item.after)}"
    if item.pct is not None:
        text += f" ({pct(item.pct)})"
    words = {
        "better": "",
        "no change": "; no measurable change",
        "worse": "; worse: not recommended",
    }[item.verdict]
    if item.verdict == "better" and not item.remedy.helps:
        words = "; better, although the bounds said the limit stays"
    if item.verdict in ("no change", "worse") and item.remedy.helps:
        words += ", although the bounds allowed a gain"
    return text + words + "."


def _text(r: CheckReport, target: Target | None) -> list[str]:
    if r.base is None or target is None:
        return ["Waiting for the run itself."]
    out = [f"{r.flow}: {outcome(target, r.base)} as it is."]
    if not r.items:
        out.append("Its diagnosis proposes no change to check.")
    out += [item.text for item in r.items]
    if r.finished:
        out.append(_recommended(r.items))
    return out


def _recommended(items: list[CheckItem]) -> str:
    """The cheapest remedy measured nearly as good as the best (NEAR_BEST of its gain), and
    the best beside it when that is another."""
    better = [i for i in items if i.recommended]  # the largest gain first (_order)
    if not better:
        return "None of the remedies measured better: none is recommended."
    top = better[0]
    near = [i for i in better if abs(i.pct or 0.0) >= NEAR_BEST * abs(top.pct or 0.0)]
    pick = min(near, key=lambda i: cost_rank(i.remedy))
    text = f"Recommended: {change_words(pick.remedy.changes)}"
    if pick is not top and top.pct is not None:
        text += (
            f", the cheapest of those within {1 - NEAR_BEST:.0%} of the largest gain "
            f"({change_words(top.remedy.changes)}, {pct(top.pct)})"
        )
    return text + "."
