"""A TCP variant has one home (issue 26): a congestion-control class registered with
engine.variants, whose traits the rest of the engine reads. A toy variant defined and
registered here, and nowhere else, runs end to end: the scenario accepts it and lists it
in its JSON Schema, the simulator runs it (its recovery, its SACK, its decrease on loss),
the recorder keeps its trace, the diagnosis and the cost estimate read its traits, and the
docs reference lists it.

The toy is an AIMD sender with Reno's growth and a gentler decrease, beta = 0.8 (ssthresh =
0.8 FlightSize), that implies SACK as ns-2's Sack1 does and counts its congestion events in
a trace of its own.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from typing import ClassVar

import pytest
from engine_helpers import mathis_reference_bps

from engine import simulate
from engine.analysis import describe
from engine.docs import reference
from engine.scenario import Scenario, TcpSpec
from engine.tcp.cc.base import RenoGrowth
from engine.tcp.state import TcpState
from engine.variants import names, register, unregister
from tests.unit.engine_helpers import bulk, one_link, script_loss

pytestmark = pytest.mark.unit

MSS = 1460
BUILT_IN = ("bbr", "cubic", "newreno", "none", "reno", "sack", "tahoe", "vegas")


class Toy(RenoGrowth):
    name = "toy"
    summary = "a test's AIMD: Reno's growth, ssthresh 0.8 FlightSize on a loss"
    implies_sack = True
    traces: ClassVar[tuple[tuple[str, str], ...]] = (("toy_losses", "packets"),)
    BETA = 0.8

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.losses = 0

    def on_congestion_event(self, st: TcpState) -> None:
        self.losses += 1

    def ssthresh_after_loss(self, st: TcpState) -> int:
        return max(int(st.flight_size * self.BETA), 2 * st.mss)

    @classmethod
    def decrease_factor(cls, spec: TcpSpec) -> float:
        return cls.BETA

    def traced(self) -> tuple[float, ...]:
        return (float(self.losses),)


class ToyHalving(Toy):
    """The same sender halving its window: the cost estimate's reference."""

    name = "toy-halving"
    BETA = 0.5


class ToyRate(ToyHalving):
    """The same sender, declared not loss-based (as BBR is)."""

    name = "toy-rate"
    loss_based = False


TOYS = (Toy, ToyHalving, ToyRate)


@pytest.fixture
def toys() -> Iterator[None]:
    for toy in TOYS:
        register(toy)
    yield
    for toy in TOYS:
        unregister(toy.name)


def test_built_in_variants_are_registered_by_importing_the_scenario_language() -> None:
    """The scenario package asks the registry, which imports nothing; `engine` itself
    imports the simulator and so registers every built-in variant."""
    code = "import engine.scenario; from engine.variants import names; print(','.join(names()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert tuple(out.stdout.strip().split(",")) == BUILT_IN


def test_a_name_is_registered_once(toys: None) -> None:
    class Impostor(RenoGrowth):
        name = "toy"

    with pytest.raises(ValueError, match="already"):
        register(Impostor)


def test_the_scenario_accepts_a_registered_variant_and_lists_it(toys: None) -> None:
    assert TcpSpec(variant="toy").variant == "toy"
    enum = TcpSpec.model_json_schema()["properties"]["variant"]["enum"]
    assert enum == sorted([*BUILT_IN, *(toy.name for toy in TOYS)])
    unregister("toy")
    with pytest.raises(ValueError, match="literal_error|Input should be"):
        TcpSpec(variant="toy")
    register(Toy)


def test_the_toy_runs_its_recovery_decrease_and_trace(toys: None) -> None:
    """One segment dropped from a receive-window-limited flight of 20 segments.

    The window is full when the drop happens (the 61st data packet: slow start reached
    rwnd = 20 segments after 5 round trips, 31 packets), so FlightSize at the third
    duplicate ACK is exactly 20 * MSS, and the toy's ssthresh is int(0.8 * 29,200) =
    23,360 B (NewReno's would be 14,600). SACK recovery (implied by the variant: the
    scenario leaves `tcp.sack` false) resends that one segment only, without a timeout,
    and the toy's own trace counts one congestion event.
    """
    rwnd = 20 * MSS
    flow = bulk(nbytes=400 * MSS, variant="toy", rcv_buf=rwnd, recovery="classic")
    result = simulate(one_link(rate=2e6, delay=0.05, loss=script_loss(60), flows=[flow]))
    f = result.flows["f"]
    assert f.completed
    assert (f.fast_retransmits, f.retransmissions, f.timeouts) == (1, 1, 0)
    ssthresh = result.series["flow.f.ssthresh"]
    assert ssthresh.v[0] == int(0.8 * rwnd) == 23_360
    losses = result.series["flow.f.toy_losses"]
    assert losses.unit == "packets"
    assert losses.v[-1] == 1
    # The loss was counted when ssthresh was set, at the third duplicate ACK.
    assert losses.t[-1] == pytest.approx(ssthresh.t[0], abs=1e-9)


def test_diagnosis_and_estimate_read_the_toy_traits(toys: None) -> None:
    """Random loss, p = 1%, on a 10 Mb/s, 2 x 50 ms path with a 1 MB window: the loss
    bounds the rate well below the link and the window.

    The diagnosis: a loss-based variant that halves its window is held to Mathis' bound,
    MSS/RTT sqrt(3/(2bp)) (b = 1: no delayed ACKs), from the run's own RTT and loss rate;
    a variant whose traits say it is not loss-based gets no such bound.

    The cost estimate models an AIMD sender with decrease factor beta and growth of 1/b
    segment per round trip: a cycle from beta W to W lasts (1 - beta) W b round trips at
    a mean window of (1 + beta) W / 2, so it carries (1 - beta^2) W^2 b / 2 = 1/p
    segments, and the rate is (1 + beta) W / (2 RTT) = sqrt((1 + beta) / (2 (1 - beta))
    / (b p)) / RTT (beta 0.5: Mathis' sqrt(3 / (2 b p))). The toy's 0.8 against the same
    sender halving gives sqrt(4.5 / 1.5) = sqrt(3) more segments between losses; the
    estimate adds the same timeouts' stall to both, which pulls the ratio of packets a
    little below sqrt(3) (at p = 1% and a 1 s minimum RTO, by less than 10%).
    """
    flows = [bulk(nbytes=None, variant="toy-halving", rcv_buf=1 << 20, window_scaling=True)]
    scenario = one_link(
        rate=10e6, delay=0.05, loss={"model": "bernoulli", "rate": 0.01}, flows=flows, duration=30
    )

    def as_variant(variant: str) -> Scenario:
        body = scenario.model_dump()
        body["flows"][0]["tcp"]["variant"] = variant
        return Scenario.model_validate(body)

    result = simulate(scenario)
    f, d = result.flows["f"], result.diagnosis["f"]
    assert f.plr and f.rtt_mean
    mathis = mathis_reference_bps(MSS, f.rtt_mean, f.plr, 1)
    assert d.bounds.mathis_bps == pytest.approx(mathis, rel=1e-9)
    assert d.limit == "loss"
    assert simulate(as_variant("toy-rate")).diagnosis["f"].bounds.mathis_bps is None

    def est_packets(variant: str) -> float:
        return float(describe(as_variant(variant))["flows"]["f"]["est_packets"])

    ratio = est_packets("toy") / est_packets("toy-halving")
    assert math.sqrt(3) * 0.9 < ratio <= math.sqrt(3) * 1.001


def test_the_docs_reference_lists_the_toy(toys: None) -> None:
    text = reference()
    assert "| `toy` | a test's AIMD: Reno's growth, ssthresh 0.8 FlightSize on a loss |" in text
    row = next(line for line in text.splitlines() if line.startswith("| `toy` |"))
    assert "| always |" in row  # implies SACK
    assert "| 0.8 |" in row
    assert "`toy_losses`" in row
    assert "`toy`" in next(line for line in text.splitlines() if line.startswith("| `variant` |"))
    assert "toy" in names()
