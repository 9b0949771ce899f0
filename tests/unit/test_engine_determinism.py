"""`simulate()` is a pure function of (scenario, seed): the same pair gives the same Result,
another seed on a lossy link gives another one."""

import pytest
from engine_helpers import bulk, cbr, dumbbell, with_seed

from engine import simulate

pytestmark = pytest.mark.unit

MSS = 1460


def lossy(seed: int = 1):
    """TCP and UDP sharing a WAN that loses 2% of forward packets at random."""
    return dumbbell(
        rate=1e6,
        delay=0.02,
        limit_packets=20,
        seed=seed,
        loss={"model": "bernoulli", "rate": 0.02, "direction": "a_to_b"},
        flows=[
            bulk(nbytes=400 * MSS, variant="newreno", rcv_buf=32 * MSS),
            cbr(rate=100e3, packet_size=500, stop=3.0),
        ],
    )


def comparable(result) -> dict:
    return result.model_dump(exclude={"wall_time"})


def test_same_scenario_and_seed_give_identical_results():
    first, second = simulate(lossy()), simulate(lossy())
    assert first.flows["f"].retransmissions > 0  # the loss model did act
    assert comparable(first) == comparable(second)


def test_seed_argument_is_the_same_as_the_scenario_seed():
    by_argument = simulate(lossy(seed=1), seed=7)
    by_scenario = simulate(with_seed(lossy(seed=1), 7))
    assert by_argument.seed == by_scenario.seed == 7
    assert comparable(by_argument) == comparable(by_scenario)


def test_different_seeds_give_different_results_on_a_lossy_link():
    results = [simulate(lossy(), seed=s) for s in (1, 2, 3)]
    # Which packets are lost differs, so do the counts and the completion times.
    completion = {r.flows["f"].completion_time for r in results}
    drops = {r.links["wan:r1>r2"].error_drops for r in results}
    assert len(completion) == 3
    assert len(drops) >= 2
    assert results[0].scenario_hash == results[1].scenario_hash  # the seed is not the scenario


def test_seed_does_not_matter_without_randomness():
    a = simulate(dumbbell(rate=1e6, delay=0.02, flows=[bulk(nbytes=200 * MSS)]), seed=1)
    b = simulate(dumbbell(rate=1e6, delay=0.02, flows=[bulk(nbytes=200 * MSS)]), seed=99)
    assert a.flows == b.flows
    assert a.links == b.links
