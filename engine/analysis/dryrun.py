"""The dry run: what `describe()` tells the API before anything is simulated, and the
estimate the budget checks."""

from __future__ import annotations

from typing import Any

from engine.analysis.cost import estimate_into, total
from engine.analysis.paths import PathFacts, flow_facts
from engine.analysis.warnings import scenario_warnings
from engine.scenario import Scenario
from engine.scenario.topology import Topology


def analyse(scenario: Scenario, topo: Topology) -> tuple[dict[str, PathFacts], float]:
    """Each flow's facts with its estimate, and when the run is expected to end (simulated
    seconds). One `Topology` serves every route: thousands of flows share a few paths, and
    a dry run (every run request's budget check) must stay cheap for any valid scenario."""
    facts, routes = flow_facts(scenario, topo)
    return facts, estimate_into(scenario, facts, routes, topo)


def path_facts(scenario: Scenario) -> dict[str, PathFacts]:
    return analyse(scenario, Topology(scenario))[0]


def describe(scenario: Scenario) -> dict[str, Any]:
    """Dry-run facts: per-flow path facts, warnings, and the estimated simulation size."""
    topo = Topology(scenario)
    facts, horizon = analyse(scenario, topo)
    return {
        "scenario_hash": scenario.scenario_hash(),
        "flows": {k: v.as_dict() for k, v in facts.items()},
        "warnings": scenario_warnings(scenario, topo),
        "estimate": total(scenario, facts, horizon),
    }


def estimate(scenario: Scenario) -> dict[str, Any]:
    """The simulation's estimated size: end-to-end packets, SimPy events (the cost of a
    run), and simulated seconds until it ends."""
    return total(scenario, *analyse(scenario, Topology(scenario)))
