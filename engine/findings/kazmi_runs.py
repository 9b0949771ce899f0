"""Seed 002 (Kazmi et al., ns-2/MNS: `kazmi.md`): what its study's runs keep."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from engine.findings.core import Metrics, _round, _tcp

if TYPE_CHECKING:
    from engine.result import Result
    from engine.scenario import Scenario


def _block_means(result: Result, flow: str, block: int) -> list[float]:
    """The mean delay of every `block` consecutive packets (seed 002's Figs. 1-3 average
    every 50 packets), from the per-packet `delay` series; none without it."""
    s = result.series.get(f"flow.{flow}.delay")
    n = result.flows[flow].packets_received
    if s is None or not n:
        return []
    v = list(s.v)
    k = max(1, round(block * len(v) / n))  # points per block, should the cap have thinned it
    return [sum(v[i : i + k]) / k for i in range(0, len(v) - k + 1, k)]


def _peak_block_mean(result: Result, flow: str, block: int = 50) -> float | None:
    """The largest mean delay over `block` consecutive packets."""
    means = _block_means(result, flow, block)
    return max(means) if means else None


#: the share of a run's 50-packet blocks seed 002 calls "the beginning" (Fig. 3: Vegas "shows
#: a little jitter in the beginning but later on illustrates a smooth performance")
BEGINNING = 0.2


def _late_deviation(result: Result, flow: str, block: int = 50) -> float | None:
    """After the beginning, the largest departure of a 50-packet mean delay from their
    mean, relative to it: 0 when the delay "remains the same throughout"."""
    means = _block_means(result, flow, block)
    late = means[int(len(means) * BEGINNING) :]
    if not late:
        return None
    mid = statistics.fmean(late)
    return max(abs(x - mid) for x in late) / mid


def _kazmi(scenario: Scenario, result: Result) -> Metrics:
    m: Metrics = {}
    on_path = {f.id for f in scenario.flows if f.dst != "spare"}  # the others are parked
    for fid in result.flows:
        if fid not in on_path:
            continue
        f = _tcp(result, fid)
        m[f"{fid}.dropped"] = f.packets_dropped
        m[f"{fid}.peak50"] = _round(_peak_block_mean(result, fid))
        m[f"{fid}.delay"] = _round(f.delay_mean)
        m[f"{fid}.cwnd"] = _round(f.cwnd_mean)
        m[f"{fid}.pdr"] = _round(f.pdr)
        m[f"{fid}.sent_ratio"] = _round(f.delivery_ratio)
        m[f"{fid}.goodput"] = _round(f.goodput_bps, 1)
        m[f"{fid}.late_dev"] = _round(_late_deviation(result, fid))
    return m
