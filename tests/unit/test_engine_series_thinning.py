"""Thinning a series to its share of the run's points (engine/trace.py) keeps what it says:
a change-driven series keeps each time bucket's first, least, greatest and last points (so
its extremes are the recorded ones, the summary's `cwnd_max` among them), buckets of one
width from the first point to the last; a sampled series keeps means of equal runs of
samples (so its integral, and the delays' mean, are kept) from the start to the end."""

from __future__ import annotations

import random

import numpy as np
import pytest
from engine_helpers import bulk, dumbbell

import engine.budget
import engine.trace
from engine import Scenario, simulate
from engine.native import engine_build
from engine.result import Result, Series
from engine.trace import KEEP, Trace

pytestmark = pytest.mark.unit


def points(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The trace's points as its series reads them (a moved last point may not be written
    into its arrays yet: Trace._settle)."""
    series = trace.series()
    return np.array(series.t), np.array(series.v)


def _walk(n: int, seed: int) -> tuple[list[float], list[float]]:
    """A random walk at Poisson times: changes of every size, bursts and lulls."""
    rnd = random.Random(seed)
    t, x, ts, vs = 0.0, 0.0, [], []
    for _ in range(n):
        t += rnd.expovariate(1000.0)
        x += rnd.choice((-1.0, 1.0)) * rnd.randrange(1, 10)
        ts.append(t)
        vs.append(x)
    return ts, vs


@pytest.mark.parametrize("cap", [16, 400, 20_000])
def test_each_bucket_keeps_its_first_least_greatest_and_last(cap: int) -> None:
    ts, vs = _walk(200_000, seed=cap)
    trace = Trace("x", cap=cap)
    for t, v in zip(ts, vs, strict=True):
        trace.add(t, v)
    st, sv = points(trace)
    how = trace.thinning()
    assert how.method == "bucket_m4" and how.bucket == trace.width > 0 and how.origin == ts[0]
    assert len(st) <= cap
    assert np.all(np.diff(st) >= 0)
    # Every stored point is a recorded one, at its own time.
    assert set(zip(st.tolist(), sv.tolist(), strict=True)) <= set(zip(ts, vs, strict=True))
    # Whole-series extremes, first and last: exactly the recorded ones.
    assert (sv.max(), sv.min(), st[0], sv[-1]) == (max(vs), min(vs), ts[0], vs[-1])
    # Per bucket of the final width (the same arithmetic as the recorder's).
    rt, rv = np.array(ts), np.array(vs)
    rk = ((rt - trace.t0) / trace.width).astype(np.int64)
    sk = ((st - trace.t0) / trace.width).astype(np.int64)
    assert np.bincount(sk).max() <= KEEP
    for b in np.unique(rk):
        raw, kept = rv[rk == b], sv[sk == b]
        assert (kept.max(), kept.min(), kept[0], kept[-1]) == (
            raw.max(),
            raw.min(),
            raw[0],
            raw[-1],
        ), b


def test_resolution_is_even_over_the_run() -> None:
    """A walk with steady change: as many stored points in the first half of its time as
    in the second (within 10%), where thinning the start only leaves the first half sparse."""
    ts, vs = _walk(300_000, seed=5)
    trace = Trace("x", cap=2_000)
    for t, v in zip(ts, vs, strict=True):
        trace.add(t, v)
    st = points(trace)[0]
    mid = (ts[0] + ts[-1]) / 2
    first, second = int(np.sum(st < mid)), int(np.sum(st >= mid))
    assert first == pytest.approx(second, rel=0.10)


def test_a_rewind_forgets_the_points_and_recording_goes_on() -> None:
    """The accounting's state trace re-books a stretch after a timeout (`rewind`)."""
    ts, vs = _walk(50_000, seed=2)
    trace = Trace("x", cap=400)
    for t, v in zip(ts[:40_000], vs[:40_000], strict=True):
        trace.add(t, v)
    trace.rewind(ts[30_000])
    assert points(trace)[0][-1] < ts[30_000]
    for t, v in zip(ts[30_000:], vs[30_000:], strict=True):
        trace.add(t, v)
    kept = points(trace)[1]
    assert len(kept) <= 400 and max(kept) == max(vs) and kept[-1] == vs[-1]


@pytest.mark.parametrize("n", [100_000, 100_001, 123_457])
def test_a_sampled_series_is_the_mean_of_equal_runs_of_samples(n: int) -> None:
    rnd = random.Random(n)
    raw = np.array([rnd.random() for _ in range(n)])
    times = np.arange(1, n + 1) * 0.01
    trace = Trace("bit/s", cap=2_000, rate=True)
    trace.sample_block(times[: n // 3], raw[: n // 3])
    for i in range(n // 3, n):
        trace.sample(float(times[i]), float(raw[i]))
    s = trace.stride
    assert trace.thinning().samples_per_point == s == 2**trace.halvings
    assert len(trace.t) <= 2_000
    full = n // s
    means = raw[: full * s].reshape(-1, s).mean(axis=1)
    pt, pv = points(trace)
    np.testing.assert_allclose(pv[:full], means, rtol=1e-12)
    np.testing.assert_array_equal(pt[:full], times[s - 1 : full * s : s])
    if n % s:  # the last point: the samples since the last full one
        assert pv[-1] == pytest.approx(raw[full * s :].mean(), rel=1e-12)
        assert pt[-1] == times[-1]
    assert len(trace.t) == full + (n % s > 0)


def _acceptance() -> dict:
    """300 s of one bulk flow through a 10 Mb/s bottleneck with a 100-packet queue and a
    window far above its path's BDP, sampled every 10 ms: a sawtooth cwnd, 245,000 packets."""
    sc = dumbbell(
        rate=10e6,
        delay=0.05,
        limit_packets=100,
        duration=300.0,
        sample_interval=0.01,
        flows=[bulk(nbytes=None, rcv_buf=8_000_000, window_scaling=True)],
    )
    return sc.model_dump()


def _run(cap: int, monkeypatch: pytest.MonkeyPatch) -> Result:
    with monkeypatch.context() as m:
        m.setattr(engine.trace, "TRACE_CAP", cap)  # what a series checks before it grows
        m.setattr(engine.budget, "TRACE_CAP", cap)  # what the run's budget grows it to
        return simulate(Scenario.model_validate(_acceptance()), seed=1)


@pytest.mark.skipif(
    engine_build() == "compiled", reason="patches TRACE_CAP: pure Python only (make test-pure)"
)
def test_thinned_series_keep_the_raw_extremes_and_the_delay_mean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same run recorded whole (a cap above its points) and thinned hard (1,000 points a
    series): the same summary; each change-driven series' greatest and least values the
    raw ones, cwnd's the summary's `cwnd_max`; the delay series' time-weighted mean (each
    point over the time since the one before) within 2% of the flow's per-packet mean."""
    raw = _run(10_000_000, monkeypatch)
    thin = _run(1_000, monkeypatch)
    assert thin.flows == raw.flows and thin.links == raw.links
    flow = thin.flows["f"]
    assert flow.packets_received > 200_000
    for name in ("cwnd", "inflight", "srtt", "seq", "ack"):
        whole, kept = raw.series[f"flow.f.{name}"], thin.series[f"flow.f.{name}"]
        assert whole.thinning is None, name
        how = kept.thinning
        assert how is not None and how.method == "bucket_m4" and len(kept.t) <= 1_000, name
        assert (max(kept.v), min(kept.v)) == (max(whole.v), min(whole.v)), name
        assert (kept.t[0], kept.t[-1], kept.v[-1]) == (whole.t[0], whole.t[-1], whole.v[-1])
    assert max(thin.series["flow.f.cwnd"].v) == flow.cwnd_max
    queue = thin.series["link.wan.r1>r2.queue_packets"]
    assert max(queue.v) == thin.links["wan:r1>r2"].queue_max
    for result in (raw, thin):
        d = result.series["flow.f.delay"]
        t, v = np.array(d.t), np.array(d.v)
        weighted = float(np.sum(v[1:] * np.diff(t)) / (t[-1] - t[0]))
        assert weighted == pytest.approx(flow.delay_mean, rel=0.02)
        assert d.t[0] < 5.0  # the series starts with the flow, not two minutes in


def test_a_recorded_series_is_the_one_model_construct_builds() -> None:
    """Series.recorded skips model_construct's generic walk; nothing reading a series can
    tell them apart (equality compares fields, fields set, extras and private attributes)."""
    t, v = [0.0, 0.5], [1.0, 3.0]
    fast = Series.recorded("packets", t, v)
    assert fast == Series.model_construct(unit="packets", t=t, v=v)
    assert fast.model_fields_set == {"unit", "t", "v"}
    assert fast.thinning is None
    assert fast.model_dump_json() == '{"unit":"packets","t":[0.0,0.5],"v":[1.0,3.0]}'
    assert Series.model_validate(fast.model_dump()) == fast
