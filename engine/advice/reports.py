"""The typed answers of the two workflows, and the sentences rendered from them.

- `AdviceReport` (engine/advice/search.py): the fixes that meet the target, cheapest first,
  each with its measured outcome, interval and cost; the levers that cannot reach it and
  why (the bound, and the measurement that shows it); the best reachable value when
  nothing meets.
- `CheckReport` (engine/advice/check.py): each remedy of a run, measured: before and after,
  the change in per cent with its interval, better / worse / no change; only the better
  ones are recommended.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.advice.model import Change, CostClass, Remedy
from engine.advice.target import Target


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def in_domain(ci: tuple[float, float] | None) -> list[float] | None:
    """A measured interval kept in its quantity's domain: both targets' metrics, a time and
    a rate, are >= 0, while a t-interval over three seeds of a spread-out metric can reach
    below zero (a lossy path's goodput, seeds at 151 and ~12 Mbit/s, gave -141 to 258)."""
    return None if ci is None else [max(ci[0], 0.0), max(ci[1], 0.0)]


class Measured(_Model):
    """One configuration's runs: the target's metric per seed and its estimate."""

    key: str
    changes: dict[str, Any]
    seeds: list[int]
    values: list[float | None] = Field(description="The metric per seed (null: the run failed)")
    n: int = Field(description="Runs with a value")
    unfinished: int = Field(
        default=0, description="Runs whose transfer did not finish (no completion time)"
    )
    mean: float | None = Field(description="Null when a run failed or did not finish")
    ci95: list[float] | None = Field(
        description="95% t-interval of the mean, kept >= 0 (a time, a rate); null with one run"
    )
    meets: bool
    limit: str | None = Field(description="The diagnosis' most common limit for the target")


class Fix(_Model):
    """A configuration that meets the target, measured."""

    levers: list[str]
    changes: list[Change]
    cost: float = Field(description="Cost units per month (docs/advice.md 'Costs')")
    cost_classes: list[CostClass]
    measured: Measured
    bound: float | None = Field(description="What the analytic bounds allow there")
    note: str
    text: str


class Rejection(_Model):
    """A lever that cannot reach the target alone, and why."""

    lever: str
    paths: list[str]
    reason: Literal["bound", "measured", "budget", "dominated"] = Field(
        description="bound: the analytic bounds rule it out; measured: its best value was "
        "simulated and missed; budget: the run budget ran out first; dominated: what it "
        "would try next costs more than a fix that already meets the target"
    )
    bound: float | None = Field(description="The best the bounds allow with this lever alone")
    limit: str | None = Field(
        description="What binds there: window, link, pvc, shaper; or why the lever cannot "
        "matter: queue_holds_window (a larger queue never fills), window_covers_bdp (a "
        "larger window only fills the queue), slow_start_saves_too_little"
    )
    measured: Measured | None
    text: str


class AdviceReport(_Model):
    target: Target
    base: Measured | None
    met_already: bool
    fixes: list[Fix] = Field(description="Configurations that meet the target, cheapest first")
    rejected: list[Rejection]
    reachable: bool | None = Field(
        description="Null until the search has finished, or when its budget cut it short"
    )
    best: Measured | None = Field(description="The best measured configuration when none meets")
    replications: int
    runs: int
    budget: int
    rounds: int
    finished: bool
    cut_short: bool = Field(
        default=False,
        description="The search ended at its budget with configurations still to try: a "
        "larger budget may find a fix (`reachable` is then null)",
    )
    assurance: Literal["mean", "interval"] = Field(
        default="mean",
        description="What `meets` meant: the seeds' mean, or the whole 95% interval",
    )
    text: list[str] = Field(description="What the figures say, in sentences")


class CheckItem(_Model):
    remedy: Remedy
    key: str
    before: Measured
    after: Measured | None
    pct: float | None = Field(description="Change of the metric against the run, per cent")
    pct_ci95: list[float] | None
    verdict: Literal["better", "worse", "no change", "failed", "pending"]
    recommended: bool = Field(description="Measured better; a change for the worse never is")
    text: str


class CheckReport(_Model):
    flow: str | None
    metric: Literal["completion_time", "goodput_bps"]
    seeds: list[int]
    base: Measured | None
    items: list[CheckItem]
    runs: int
    finished: bool
    text: list[str]


def pct(value: float) -> str:
    return f"{value:+.0f}%".replace("-", "−")


def outcome(target: Target, m: Measured | None) -> str:
    """ "490.0 s" or "538 s (95% CI 530 to 546 s, 3 seeds)"."""
    if m is not None and m.unfinished:
        return f"not finished ({m.unfinished} of {len(m.seeds)} runs)"
    if m is None or m.mean is None:
        return "no result"
    text = target.show(m.mean)
    if m.ci95 is not None and m.n > 1:
        text += f" (95% CI {target.show(m.ci95[0])} to {target.show(m.ci95[1])}, {m.n} seeds)"
    return text


# --- sentences ---------------------------------------------------------------------------

_BINDS = {
    "window": "the window",
    "link": "a link",
    "pvc": "the PVC's contract",
    "shaper": "the shaper",
    "ack": "the ACKs' way back",
    "queue_holds_window": "the queue already holds the whole window",
    "window_covers_bdp": "the window already covers the bandwidth-delay product",
    "slow_start_saves_too_little": "a larger initial window saves a few round trips of slow "
    "start, too little for the target",
}


_CANNOT = ("queue_holds_window", "window_covers_bdp", "slow_start_saves_too_little")


def cost_words(cost: float) -> str:
    return "free" if cost == 0 else f"{cost:,.0f} cost units a month"


def fix_text(target: Target, fix: Fix, assurance: str = "mean") -> str:
    from engine.advice.words import changes

    note = f"; {fix.note}" if fix.note else ""
    m = fix.measured
    far = target.far_end(m.ci95) if m.n > 1 else None
    if assurance == "mean" and far is not None and not target.meets(far):
        note += (
            f"; it meets the target on average, but its 95% interval reaches "
            f"{target.show(far)}: ask with assurance 'interval' to require the whole interval"
        )
    return f"{changes(fix.changes)} ({cost_words(fix.cost)}): {outcome(target, m)}{note}."


def rejection_text(target: Target, r: Rejection) -> str:
    from engine.advice.words import changes

    if r.reason == "bound" and r.limit in _CANNOT:
        return f"{r.lever} cannot help: {_BINDS[r.limit]}."
    if r.reason == "bound":
        binds = f", {_BINDS.get(r.limit or '', r.limit)} binding" if r.limit else ""
        text = (
            f"{r.lever} cannot reach it alone: the bounds allow at best "
            f"{target.show(r.bound)}{binds}"
        )
        if r.measured is not None:
            listed = [Change(path=p, value=v) for p, v in r.measured.changes.items()]
            text += f"; measured at {_values(listed)}: {outcome(target, r.measured)}"
        return text + "."
    if r.reason == "measured" and r.measured is not None:
        listed = [Change(path=p, value=v) for p, v in r.measured.changes.items()]
        return (
            f"{r.lever} did not reach it: its best measured value, {_values(listed)}, gives "
            f"{outcome(target, r.measured)}."
        )
    del changes
    if r.reason == "dominated":
        return f"{r.lever}: not pursued, a cheaper fix already meets the target."
    return f"{r.lever}: the run budget ran out before it was settled."


def _values(items: list[Change]) -> str:
    """ "access1 + access2 rate T3 (44.736 Mbit/s), rcv_buf 43,800 B": paths set to the same
    value written once."""
    from engine.advice.levers import name, show

    groups: dict[tuple[str, str], list[str]] = {}
    for c in items:
        groups.setdefault((name([c.path]).split(" ")[-1], show(c.path, c.value)), []).append(c.path)
    return ", ".join(f"{name(paths)} {value}" for (_, value), paths in groups.items())


def advice_text(r: AdviceReport) -> list[str]:
    t = r.target
    sure = ", by each configuration's whole 95% interval" if r.assurance == "interval" else ""
    out = [f"Target: {t.text()}{sure}."]
    if r.base is not None:
        limit = f" ({r.base.limit})" if r.base.limit else ""
        out.append(f"Now: {outcome(t, r.base)}{limit}.")
    if r.met_already:
        out.append("The scenario already meets it: nothing to change.")
    for i, fix in enumerate(r.fixes[:5]):
        out.append(("Cheapest fix: " if i == 0 else "Also meets it: ") + fix.text)
    if not r.fixes and r.finished and not r.met_already:
        best = ""
        if r.best is not None and r.best.changes:
            listed = [Change(path=p, value=v) for p, v in r.best.changes.items()]
            best = f"; the best measured is {_values(listed)}: {outcome(t, r.best)}"
        elif r.best is not None:
            best = f"; the best measured is the scenario itself: {outcome(t, r.best)}"
        if r.cut_short:
            out.append(
                f"Nothing measured within the budget of {r.budget} runs meets it{best}; "
                "configurations were left untried, so a larger budget may find a fix."
            )
        else:
            out.append(f"Nothing within these levers meets it{best}.")
    out += [rej.text for rej in r.rejected]
    seeds = "seed" if r.replications == 1 else "seeds"
    out.append(
        f"{r.runs} runs in {r.rounds} rounds (budget {r.budget}; {r.replications} {seeds} "
        "per configuration)."
    )
    return out
