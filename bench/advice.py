"""Issue 23's acceptance, measured with the engine alone (engine/advice, no services): the
advisor and the remedy check on the seed scenarios and the Frame Relay backup, with their run
counts and wall times. Prints figures; asserts nothing (tests/unit/test_advice_*.py check the
outcomes against the bounds on shortened scenarios).

    .venv/bin/python bench/advice.py [--jobs 2] [--only seed003,fr,kazmi,cost]

- seed 003 (riverbed-t1-8k), backup <= 200 s: the top fix, and the T3 upgrade rejected with
  its measured time; <= 100 s with every lever, and with the link forbidden (best T1 time);
- the Frame Relay backup (docs/examples/fr-backup.yaml): every remedy of its diagnosis
  measured; the advisor over CIR, Be, shaping and the window, backup <= 600 s;
- seed 002 (kazmi-variants at 2% loss on h4): the advisor's variants for ftp1's goodput,
  with intervals from 3 seeds, beside the study's own ranking (kazmi-study's 2% points);
- cost: an advice over five levers on each seed scenario: runs and wall time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from statistics import mean
from typing import Any

from engine.advice.check import RemedyCheck
from engine.advice.curves import curves
from engine.advice.local import drive
from engine.advice.request import AdviceRequest
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.presets import load_preset, load_study
from engine.scenario import Scenario, load_scenario
from engine.simulation import simulate
from engine.study import StudySpec, apply_changes, expand, resolve_base

ROOT = Path(__file__).resolve().parent.parent
FR = ROOT / "docs" / "examples" / "fr-backup.yaml"


def advise(
    scenario: Scenario, target: str, jobs: int, levers: list[str] | None = None, **kw: Any
) -> tuple[Any, Any]:
    request = AdviceRequest(
        target=Target.parse(target),
        levers=[{"paths": p.split("+")} for p in levers] if levers else None,  # type: ignore[misc]
        **kw,
    )
    advisor = Advisor(scenario, request)
    done = drive(scenario, advisor, jobs=jobs)
    return advisor, done


def show(title: str, done: Any) -> None:
    print(f"\n== {title}")
    for line in done.report.text:
        print(f"   {line}")
    print(
        f"   [{done.runs} simulations, {done.rounds} rounds, wall {done.wall_time:.1f} s, "
        f"CPU {done.cpu_time:.1f} s]"
    )


def seed003(jobs: int) -> None:
    base = load_preset("riverbed-t1-8k")
    _, done = advise(base, "backup.completion_time<=200s", jobs)
    show("seed 003, backup <= 200 s (default levers)", done)
    _, done = advise(base, "backup.completion_time<=100s", jobs)
    show("seed 003, backup <= 100 s (default levers)", done)
    no_link = [
        "flows.backup.tcp.rcv_buf",
        "flows.backup.tcp.variant",
        "flows.backup.tcp.sack",
        "flows.backup.tcp.initial_cwnd",
        "links.access1.queue.limit_packets",
    ]
    _, done = advise(base, "backup.completion_time<=100s", jobs, no_link)
    show("seed 003, backup <= 100 s, no link lever", done)


def frame_relay(jobs: int) -> None:
    scenario = load_scenario(FR)
    done = drive(scenario, RemedyCheck(scenario, {}), jobs=jobs)
    show("Frame Relay backup: its remedies, checked", done)
    levers = [
        "frame_relay.pvcs.p1.cir",
        "frame_relay.pvcs.p1.be",
        "frame_relay.pvcs.p1.becn_shaping",
        "flows.backup.tcp.rcv_buf",
    ]
    _, done = advise(scenario, "backup.completion_time<=600s", jobs, levers)
    show("Frame Relay backup <= 600 s over CIR, Be, shaping, window", done)


def kazmi(jobs: int) -> None:
    lossy = apply_changes(load_preset("kazmi-variants"), {"links.h4.loss.rate": 0.02})
    variants = ["newreno", "reno", "sack", "tahoe", "vegas"]
    request = AdviceRequest(
        target=Target.parse("ftp1.goodput>=580kbps"),
        levers=[{"paths": ["flows.ftp1.tcp.variant"], "values": variants}],  # type: ignore[list-item]
    )
    advisor = Advisor(lossy, request)
    done = drive(lossy, advisor, jobs=jobs)
    show("seed 002, ftp1 goodput >= 580 kbit/s at 2% loss, variant", done)
    rows = sorted(
        (r for r in curves(advisor) if r.measured is not None), key=lambda r: -(r.measured or 0)
    )
    print(
        "   advisor (3 seeds):",
        ", ".join(
            f"{r.label} {r.measured / 1e3:.1f} [{(r.ci_low or 0) / 1e3:.0f}-{(r.ci_high or 0) / 1e3:.0f}]"
            for r in rows
        ),
    )
    spec = StudySpec.model_validate(load_study("kazmi-study"))
    start = time.perf_counter()
    study: dict[str, float] = {}
    for p in expand(spec, resolve_base(spec)):
        if p.parameters["links.h4.loss.rate"] == 0.02:
            runs = [simulate(p.scenario, seed=s).flows["ftp1"] for s in p.seeds]
            study[p.parameters["flows.ftp1.tcp.variant"]] = mean(r.goodput_bps for r in runs)
    ranked = sorted(study, key=lambda v: -study[v])
    print(
        "   study kazmi-study, 2% points (3 seeds):",
        ", ".join(f"{v} {study[v] / 1e3:.1f}" for v in ranked),
        f"[{time.perf_counter() - start:.1f} s]",
    )
    print("   same order:", [r.label for r in rows] == ranked)


# Five levers per seed scenario and a target a fifth better than the scenario does.
COST_CASES: list[tuple[str, dict[str, Any], str, list[str]]] = [
    (
        "riverbed-drops-reno",
        {},
        "backup.completion_time<=700s",
        [
            "flows.backup.tcp.rcv_buf",
            "flows.backup.tcp.variant",
            "flows.backup.tcp.sack",
            "links.access1.queue.limit_packets",
            "links.access1.rate+links.access2.rate",
        ],
    ),
    (
        "gupta-dumbbell",
        {},
        "tcp1.goodput>=1.2Mbps",
        [
            "flows.tcp1.tcp.rcv_buf",
            "flows.tcp1.tcp.variant",
            "flows.tcp1.tcp.sack",
            "links.n3-r1.queue.limit_packets",
            "links.n3-r1.rate",
        ],
    ),
    (
        "kazmi-variants",
        {"links.h4.loss.rate": 0.02},
        "ftp1.goodput>=580kbps",
        [
            "flows.ftp1.tcp.rcv_buf",
            "flows.ftp1.tcp.variant",
            "flows.ftp1.tcp.sack",
            "flows.ftp1.tcp.initial_cwnd",
            "links.h2.queue.limit_packets",
        ],
    ),
    (
        "riverbed-t1-8k",
        {},
        "backup.completion_time<=200s",
        [
            "flows.backup.tcp.rcv_buf",
            "flows.backup.tcp.variant",
            "flows.backup.tcp.initial_cwnd",
            "links.access1.queue.limit_packets",
            "links.access1.rate+links.access2.rate",
        ],
    ),
    (
        "hadi-bottleneck",
        {},
        "ftp.goodput>=600kbps",
        [
            "flows.ftp.tcp.rcv_buf",
            "flows.ftp.tcp.variant",
            "flows.ftp.tcp.initial_cwnd",
            "links.n3-n4.queue.limit_packets",
            "links.n3-n4.rate",
        ],
    ),
]


def cost(jobs: int) -> None:
    print("\n== cost: five levers on each seed scenario (budget 30)")
    for preset, sets, target, levers in COST_CASES:
        scenario = apply_changes(load_preset(preset), sets)
        try:
            _, done = advise(scenario, target, jobs, levers)
        except ValueError as exc:
            print(f"   {preset}: {exc}")
            continue
        r = done.report
        top = r.fixes[0].text if r.fixes else (r.text[-2] if len(r.text) > 1 else "")
        print(
            f"   {preset:<20} {target:<32} {done.runs:>2} runs {done.rounds} rounds "
            f"wall {done.wall_time:5.1f} s (CPU {done.cpu_time:5.1f} s) "
            f"reachable={r.reachable}  {top}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="seed003,fr,kazmi,cost")
    args = ap.parse_args()
    parts = {"seed003": seed003, "fr": frame_relay, "kazmi": kazmi, "cost": cost}
    for name in args.only.split(","):
        parts[name](args.jobs)


if __name__ == "__main__":
    main()
