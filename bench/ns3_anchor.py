"""The engine beside its anchor, ns-3's `Simulator::Run()`, in one run on one machine
(issue 28). Prints three tables; asserts nothing.

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3
    .venv/bin/python bench/ns3_anchor.py --ns3-python /tmp/ns3venv/bin/python [--repeats 3]

Without --ns3-python only the engine's columns are printed. The engine runs in this process,
in the build its import chose (the header names it; TCPFR_ENGINE_BUILD=pure for the other);
ns-3 (from PyPI, in its own venv) in a fresh process per run. Each figure is the smallest of
--repeats runs (other work on a shared machine only ever adds time).

1. The shared cases, scenarios both simulators run: the four scale cases (the dumbbell of
   bench/engine_scale.py: 1 and 1,000 NewReno flows on 100 Mb/s for 20 s, one CUBIC flow
   with a 16 MiB window on 1 Gb/s for 10 s with and without SACK) and the lossy path of
   bench/ns3_crosscheck_loss.py (NewReno, 10 Mb/s, 5% loss, 200 s, seed 1). The engine's
   time is its whole `simulate()` (build, run, result); ns-3's is `Run()` alone (not its
   import, topology or routing set-up). ratio = engine / ns-3, of CPU seconds (of wall
   seconds beside it). ns-3 as a user writes it (`stock`), and for 1,000 flows also with
   hashed routing (bench/ns3_flows_check.py says why: stock ns-3 scans every route and
   interface per packet). ns-3 counts events at a finer grain (~5.7 per engine event on the
   dumbbell), so events are printed, not compared; goodput and drops show that both moved
   the same traffic.
2. Flows: 1 to 1,000 NewReno flows, 20 s: events per CPU second and its ratio to one flow
   (the engine's regression guard: >= 0.45 at 1,000), and CPU microseconds per delivered
   1460-byte segment, the one column that compares the two simulators' work.
3. The scale cases as /work/shared/scale/ has them (users have no /work/shared: without it
   the same scenarios are built by bench/engine_scale.py, whose scenario hash the table
   shows either way): events, wall seconds, events per wall second.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine_scale import dumbbell, flows_dumbbell  # beside this file
from ns3_crosscheck_loss import ns3_run as ns3_lossy_run
from ns3_crosscheck_loss import scenario as lossy_scenario
from ns3_flows_check import ns3_point

from engine import Scenario, simulate
from engine.native import engine_build

MIB = 1 << 20
MSS = 1460
SHARED_SCALE = Path("/work/shared/scale")
FLOWS = (1, 10, 100, 1000)


def cubic(sack: bool) -> dict[str, Any]:
    return dumbbell(
        f"cubic-{'sack' if sack else 'nosack'}-1g-16mib-10s",
        flows=1,
        rate="1Gbps",
        variant="cubic",
        sack=sack,
        window=16 * MIB,
        duration=10.0,
    )


def scale_cases() -> dict[str, dict[str, Any]]:
    """The four scale cases, by their file names' stems."""
    return {
        "cubic-sack-1g-16mib-10s": cubic(True),
        "cubic-nosack-1g-16mib-10s": cubic(False),
        "newreno-1-flow-100m-20s": flows_dumbbell(1, 20.0),
        "newreno-1000-flows-100m-20s": flows_dumbbell(1000, 20.0),
    }


def engine_run(data: dict[str, Any], repeats: int) -> dict[str, Any]:
    """simulate() whole, `repeats` times: the smallest wall and CPU; the simulated figures."""
    scenario = Scenario.model_validate(data)
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        result = simulate(scenario)
        walls.append(time.perf_counter() - wall0)
        cpus.append(time.process_time() - cpu0)
    delivered = sum(getattr(f, "bytes_delivered", 0) for f in result.flows.values())
    bottleneck = result.links.get("wan:ra>rb") or result.links.get("l:a>b")
    return {
        "events": result.events,
        "wall": min(walls),
        "cpu": min(cpus),
        "goodput": delivered * 8 / result.sim_time,
        "segments": delivered / MSS,
        "drops": (bottleneck.drops + bottleneck.error_drops) if bottleneck else 0,
        "hash": result.scenario_hash,
    }


@functools.cache
def ns3_cached(
    python: str, flows: int, duration: float, mode: str, repeats: int, *tcp: str
) -> dict[str, Any]:
    """One ns-3 point, run once per bench (tables 1 and 2 share the 1,000-flow one)."""
    return ns3_best(lambda: ns3_point(python, flows, duration, mode, *tcp), repeats)


def ns3_best(run: Callable[[], dict[str, Any]], repeats: int) -> dict[str, Any]:
    runs = [run() for _ in range(repeats)]
    out = dict(runs[0])
    out["wall"] = min(r["wall"] for r in runs)
    out["cpu"] = min(r["cpu"] for r in runs)
    return out


def ns3_dumbbell(python: str, name: str, mode: str, repeats: int) -> dict[str, Any]:
    """ns-3 on the scale case `name` (bench/ns3_flows_check.py's script)."""
    if name.startswith("cubic"):
        tcp = ("TcpCubic", "1" if "-sack-" in name else "0", str(16 * MIB), "1Gbps")
        flows, duration = 1, 10.0
    else:
        tcp = ()
        flows, duration = (1000 if "1000" in name else 1), 20.0
    row = dict(ns3_cached(python, flows, duration, mode, repeats, *tcp))
    row["segments"] = row["goodput"] * duration / 8 / MSS
    return row


def ns3_lossy(python: str, repeats: int) -> dict[str, Any]:
    row = ns3_best(lambda: ns3_lossy_run(python, "TcpNewReno", 1, False), repeats)
    row["segments"] = row["goodput"] * 200.0 / 8 / MSS
    row["drops"] = None
    return row


def shared_table(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Table 1; returns the engine's rows for table 3."""
    cases = dict(scale_cases())
    cases["newreno-lossy-10m-5pct-200s"] = lossy_scenario({"variant": "newreno"}, 1)
    print("1. shared cases: engine simulate() against ns-3 Run(); ratio = engine / ns-3")
    print(
        f"  {'case':<30} {'engine cpu s':>12} {'wall s':>7} {'Mb/s':>7} {'drops':>6}   "
        f"{'ns-3':<7} {'cpu s':>7} {'wall s':>7} {'Mb/s':>7} {'drops':>6}   "
        f"{'ratio cpu':>9} {'(wall)':>6}"
    )
    rows = {}
    for name, data in cases.items():
        eng = engine_run(data, args.repeats)
        rows[name] = eng
        line = (
            f"  {name:<30} {eng['cpu']:>12.2f} {eng['wall']:>7.2f} "
            f"{eng['goodput'] / 1e6:>7.1f} {eng['drops']:>6}"
        )
        if not args.ns3_python:
            print(line, flush=True)
            continue
        modes = ("stock", "hashed") if "1000" in name else ("stock",)
        for i, mode in enumerate(modes):
            if name.startswith("newreno-lossy"):
                ns3 = ns3_lossy(args.ns3_python, args.repeats)
            else:
                ns3 = ns3_dumbbell(args.ns3_python, name, mode, args.repeats)
            drops = "-" if ns3.get("drops") is None else str(ns3["drops"])
            print(
                (line if i == 0 else " " * len(line))
                + f"   {mode:<7} {ns3['cpu']:>7.2f} {ns3['wall']:>7.2f} "
                f"{ns3['goodput'] / 1e6:>7.1f} {drops:>6}   "
                f"{eng['cpu'] / ns3['cpu']:>9.3f} {eng['wall'] / ns3['wall']:>6.3f}",
                flush=True,
            )
    return rows


def flows_table(args: argparse.Namespace, known: dict[str, dict[str, Any]]) -> None:
    print("2. flows: NewReno, 64 KB windows, 100 Mb/s, 20 s; ratio = ev/cpu-s over 1 flow's")
    print(
        f"  {'simulator':<12} {'flows':>5} {'events':>10} {'cpu s':>7} {'ev/cpu-s':>9} "
        f"{'ratio':>5} {'us/seg':>6}"
    )
    sims: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
        (
            "engine",
            lambda n: (
                known.get(f"newreno-{n}-flow{'s' if n > 1 else ''}-100m-20s")
                or engine_run(flows_dumbbell(n, 20.0), args.repeats)
            ),
        )
    ]
    if args.ns3_python:
        python = args.ns3_python

        def ns3_flows(n: int) -> dict[str, Any]:
            row = dict(ns3_cached(python, n, 20.0, "hashed", args.repeats))
            row["segments"] = row["goodput"] * 20.0 / 8 / MSS
            return row

        sims.append(("ns-3 hashed", ns3_flows))
    per_segment: dict[str, float] = {}
    for name, point in sims:
        base = None
        for n in FLOWS:
            row = point(n)
            rate = row["events"] / row["cpu"]
            base = base or rate
            us = row["cpu"] / row["segments"] * 1e6
            per_segment[name] = us
            print(
                f"  {name:<12} {n:>5} {row['events']:>10,} {row['cpu']:>7.2f} {rate:>9,.0f} "
                f"{rate / base:>5.2f} {us:>6.1f}",
                flush=True,
            )
    if len(per_segment) == 2:
        ratio = per_segment["engine"] / per_segment["ns-3 hashed"]
        print(f"  CPU per delivered segment at 1000 flows, engine / ns-3 hashed: {ratio:.3f}")


def scale_table(rows: dict[str, dict[str, Any]]) -> None:
    shared = SHARED_SCALE.is_dir()
    where = SHARED_SCALE if shared else "bench/engine_scale.py (no /work/shared here)"
    print(f"3. the scale cases ({where})")
    for name in scale_cases():
        row = rows[name]
        source = SHARED_SCALE / f"{name}.json"
        if shared and source.is_file():
            scenario = Scenario.model_validate(json.loads(source.read_text()))
            same = "same scenario" if scenario.scenario_hash() == row["hash"] else "DIFFERS"
        else:
            same = "built here"
        print(
            f"  {name:<30} events {row['events']:>10,}   wall {row['wall']:7.2f} s   "
            f"{row['events'] / row['wall']:>9,.0f} ev/s   {same}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns3-python", help="an interpreter that can `from ns import ns`")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"engine build: {engine_build()}; {args.repeats} run(s) per figure, the smallest kept")
    rows = shared_table(args)
    flows_table(args, rows)
    scale_table(rows)


if __name__ == "__main__":
    main()
