"""Analytic facts about a scenario, before or without simulating it: each flow's path, its
base round-trip time, bottleneck, bandwidth-delay product and window bound (`paths`), and
the simulation's size (`cost`), and the legal but suspicious settings it holds
(`warnings`). `describe()` serves the API's dry run (`dryrun`); `diagnosis` reuses the
facts.
"""

from engine.analysis.dryrun import analyse, describe, estimate, path_facts
from engine.analysis.paths import PathFacts
from engine.analysis.warnings import scenario_warnings

__all__ = ["PathFacts", "analyse", "describe", "estimate", "path_facts", "scenario_warnings"]
