"""`simulate()`'s snapshot hook reads the series so far and changes nothing: the Result with
snapshots taken at every slice is the Result without them, to the byte."""

import pytest
from engine_helpers import bulk, cbr, dumbbell

from engine import simulate
from engine.result import Series

pytestmark = pytest.mark.unit

MSS = 1460


def lossy(seed: int = 1):
    """TCP and UDP over a WAN losing 2% at random, over 10 s: 100 slices of 0.1 s."""
    return dumbbell(
        rate=1e6,
        delay=0.02,
        limit_packets=20,
        seed=seed,
        duration=10.0,
        loss={"model": "bernoulli", "rate": 0.02, "direction": "a_to_b"},
        flows=[
            bulk(nbytes=400 * MSS, variant="newreno", rcv_buf=32 * MSS),
            cbr(rate=100e3, packet_size=500, stop=3.0),
        ],
    )


def stored_bytes(result) -> str:
    return result.model_dump_json(exclude={"wall_time"})


def test_snapshots_leave_the_result_byte_identical():
    taken: list[tuple[float, dict[str, Series]]] = []
    with_hook = simulate(lossy(), snapshot=lambda now, read: taken.append((now, read())))
    without = simulate(lossy())
    assert len(taken) >= 10  # read at (nearly) every slice, not once
    assert stored_bytes(with_hook) == stored_bytes(without)


def test_snapshots_leave_thinned_rate_series_byte_identical():
    # Each read turns the sampler's beats so far into points: with 50,000 beats per rate
    # series, thinned many times over, where its blocks end must change no point.
    scenario = dumbbell(
        rate=1e6,
        duration=50.0,
        sample_interval=0.001,
        loss={"model": "bernoulli", "rate": 0.02, "direction": "a_to_b"},
        flows=[bulk(nbytes=None, variant="newreno")],
    )
    taken: list[float] = []
    with_hook = simulate(scenario, snapshot=lambda now, read: taken.append(len(read())))
    without = simulate(scenario)
    key = "flow.f.goodput_bps"
    assert len(taken) >= 50 and without.series[key].thinning is not None
    assert stored_bytes(with_hook) == stored_bytes(without)


def test_a_snapshot_is_a_prefix_of_the_final_series():
    scenario = dumbbell(
        rate=1e6,
        delay=0.02,
        limit_packets=20,
        duration=10.0,
        flows=[bulk(nbytes=400 * MSS, variant="newreno"), cbr(rate=100e3, stop=3.0)],
    )
    taken: list[tuple[float, dict[str, Series]]] = []
    final = simulate(scenario, snapshot=lambda now, read: taken.append((now, read())))
    now, early = taken[len(taken) // 4]
    assert 0 < now < final.sim_time
    key = "flow.f.cwnd"
    assert early[key].t and early[key].t[-1] <= now  # nothing recorded past `now`
    assert len(early[key].t) < len(final.series[key].t)
    # Unthinned so far (a short run), the early points are the final ones' first points.
    assert final.series[key].thinning is None
    n = len(early[key].t)
    assert (early[key].t, early[key].v) == (final.series[key].t[:n], final.series[key].v[:n])
    # The series so far grow from one snapshot to the next.
    lengths = [len(s[key].t) for _, s in taken if key in s]
    assert lengths == sorted(lengths) and lengths[-1] > lengths[0]
