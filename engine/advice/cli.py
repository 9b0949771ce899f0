"""`python -m engine advise` and `python -m engine check`: the advisor and the remedy check on
this machine, no services (engine/advice/local.py).

python -m engine advise SCENARIO_OR_PRESET --target 'backup.completion_time<=200s'
    [--lever PATH[+PATH...][=COST][:V1,V2,...]]... [--set PATH=VALUE]... [--budget N]
    [--replications N] [--sure] [--jobs N] [--json] [--curves FILE.csv]
python -m engine check SCENARIO_OR_PRESET [--flow ID] [--set PATH=VALUE]...
    [--replications N] [--jobs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from engine.advice.check import RemedyCheck
from engine.advice.curves import curves, to_csv
from engine.advice.local import drive
from engine.advice.options import LeverSpec, _literal
from engine.advice.request import AdviceRequest
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.scenario import Scenario
from engine.study import apply_changes


def add_parsers(sub: Any) -> None:
    advise = sub.add_parser(
        "advise", help="find the cheapest changes that meet a target, by simulation"
    )
    _common(advise)
    advise.add_argument(
        "--target",
        required=True,
        help="FLOW.completion_time<=DURATION or FLOW.goodput>=RATE (FLOW or *)",
    )
    advise.add_argument(
        "--lever",
        action="append",
        default=[],
        metavar="SPEC",
        help="PATH[+PATH...][=COST][:V1,V2,...]; default: every lever that "
        "can matter (docs/advice.md)",
    )
    advise.add_argument("--budget", type=int, default=30, help="most simulations (default 30)")
    advise.add_argument("--curves", metavar="FILE", help="write each lever's curve as CSV")
    advise.add_argument(
        "--sure",
        action="store_true",
        help="count a configuration as meeting the target only when its whole 95%% interval "
        "does, not just the mean of its seeds (assurance 'interval')",
    )
    check = sub.add_parser("check", help="simulate every remedy of a scenario's diagnosis")
    _common(check)
    check.add_argument("--flow", help="the TCP flow whose remedies to check")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("target_scenario", metavar="SCENARIO_OR_PRESET")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="change the scenario first (as a sweep's dotted path)",
    )
    p.add_argument("--replications", type=int, default=None)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--json", action="store_true")


def _scenario(base: Scenario, sets: list[str]) -> Scenario:
    changes = {}
    for item in sets:
        path, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: write PATH=VALUE")
        changes[path.strip()] = _literal(value)
    return apply_changes(base, changes)


def run(args: argparse.Namespace, base: Scenario, out: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up now: a default argument would pin the import's
    scenario = _scenario(base, args.set)
    jobs = max(1, args.jobs)
    say = (
        (lambda r, c: None)
        if args.json
        else (lambda r, c: print(f"round {r}: {len(c)} runs", file=sys.stderr, flush=True))
    )
    if args.command == "check":
        workflow: Any = RemedyCheck(
            scenario, {"flow": args.flow, "replications": args.replications}
        )
    else:
        request = AdviceRequest(
            target=Target.parse(args.target),
            levers=[LeverSpec.parse(s) for s in args.lever] or None,
            budget=args.budget,
            replications=args.replications,
            assurance="interval" if args.sure else "mean",
        )
        workflow = Advisor(scenario, request)
    done = drive(scenario, workflow, jobs=jobs, on_round=say)
    rows = curves(workflow) if args.command == "advise" else []
    if args.command == "advise" and args.curves:
        with open(args.curves, "w", encoding="utf-8", newline="") as f:
            f.write(to_csv(rows))
    if args.json:
        doc = done.report.model_dump(mode="json")
        if rows:
            doc["curves"] = [r.model_dump(mode="json") for r in rows]
        out.write(json.dumps(doc) + "\n")
    else:
        out.write("\n".join(done.report.text) + "\n")  # type: ignore[attr-defined]
        out.write(f"(wall {done.wall_time:.1f} s, {done.runs} simulations, {jobs} jobs)\n")
    return 0
