"""Advice through the service, as a user gets it from `make run`: the embedded default (SQLite,
the file broker, 2 worker processes), one fresh data directory, every run simulated
(`cache: refresh`) so run counts and times are the advice's own. Prints figures; asserts
nothing (the issue's acceptance is judged from them: tests/integration/test_advice.py
checks the physics on short scenarios).

    .venv/bin/python bench/advice_bench.py [--only seed003|fr|cost] [--workers 2]

- seed003: riverbed-t1-8k, target backup <= 200 s and <= 100 s, default levers.
- fr: the Frame Relay backup (bench/goldens.py): its remedies checked, and an advice over
  CIR, Be, shaping and the window.
- cost: an advice over five levers (window, variant, initial window, the bottleneck's
  rate and its queue) on each seed scenario, its runs and its wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from goldens import frame_relay_backup  # noqa: E402
from servicekit import Stack, serve_embedded  # noqa: E402

import engine  # noqa: E402
from client import Client  # noqa: E402
from engine.advice.options import default_levers  # noqa: E402
from engine.presets import load_preset  # noqa: E402

#: seed study -> (preset, target over the base run's figure: completion time x, goodput x)
SEEDS = {
    "000": ("riverbed-drops-reno", 0.6),
    "001": ("gupta-dumbbell", 1.3),
    "002": ("kazmi-variants", 1.3),
    "003": ("riverbed-t1-8k", None),  # the lab's own target: 200 s
    "004": ("hadi-bottleneck", 1.3),
}


@contextlib.contextmanager
def embedded(workers: int) -> Iterator[Stack]:
    """`python -m api.serve` as `make run` starts it, in a fresh data directory."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_embedded(
            Path(tmp), TCPFR_WORKER_CONCURRENCY=str(workers), TCPFR_LOG_LEVEL="WARNING"
        ) as stack,
    ):
        yield stack


def timed_advice(client: Client, **kwargs: Any) -> tuple[dict[str, Any], Any, float]:
    t0 = time.monotonic()
    advice = client.advise(cache="refresh", **kwargs).wait(timeout=900, check=False)
    return advice.report, advice.doc, time.monotonic() - t0


def anatomy(client: Client, advice_id: Any) -> str:
    """Where the wall time went: the engine's seconds over its runs (one worker each), and
    the gaps between a round's last run ending and the next round's first starting (a step
    of the orchestration, the broker's hand-over, a worker's pick-up)."""
    from datetime import datetime

    runs = client.request("GET", f"/v1/advice/{advice_id}/runs", params={"limit": 500}).json()
    engine_s = 0.0
    for r in runs["items"]:
        if r["status"] == "succeeded" and not r["cache_hit"]:
            engine_s += client.get_run(r["id"]).summary.wall_time
    rounds: dict[int, list[dict[str, Any]]] = {}
    for r in runs["items"]:
        rounds.setdefault(r["round"], []).append(r)
    at = datetime.fromisoformat
    gaps = []
    for k in sorted(rounds)[1:]:
        before = [at(r["finished_at"]) for r in rounds.get(k - 1, []) if r["finished_at"]]
        start = [at(r["started_at"]) for r in rounds[k] if r["started_at"]]
        if before and start:
            gaps.append((min(start) - max(before)).total_seconds())
    shown = ", ".join(f"{g:.2f}" for g in gaps)
    return f"engine {engine_s:.1f} s over its runs; gaps between rounds [{shown}] s"


def show(label: str, report: dict[str, Any], doc: Any, seconds: float) -> None:
    p = doc.progress
    print(
        f"\n== {label}: {doc.status}, {p.runs} runs in {report.get('rounds')} rounds, "
        f"{seconds:.1f} s wall"
    )
    for line in report.get("text") or []:
        print(f"   {line}")


def seed003(client: Client) -> None:
    for goal in ("backup.completion_time<=200s", "backup.completion_time<=100s"):
        report, doc, seconds = timed_advice(client, target=goal, preset="riverbed-t1-8k")
        show(f"seed 003, {goal}", report, doc, seconds)
        for fix in report.get("fixes", [])[:3]:
            print(f"   fix: {fix['text']}")
        for rej in report.get("rejected", []):
            m = rej.get("measured") or {}
            print(f"   rejected: {rej['lever']} ({rej['reason']}), measured {m.get('mean')}")


def frame_relay(client: Client) -> None:
    run = client.run(scenario=frame_relay_backup(), cache="refresh").wait(timeout=600)
    before = run.summary.flows["backup"]["completion_time"]
    t0 = time.monotonic()
    check = client.check_remedies(run.id).wait(timeout=900, check=False)
    print(
        f"\n== Frame Relay backup: {before:.1f} s, remedies checked in "
        f"{time.monotonic() - t0:.1f} s ({check.doc.progress.runs} runs)"
    )
    for item in check.report.get("items", []):
        after = (item.get("after") or {}).get("mean")
        print(
            f"   {item['verdict']:<9} recommended={item['recommended']!s:<5} "
            f"after={after}: {item['text']}"
        )
    levers = [
        "frame_relay.pvcs.p1.cir",
        "frame_relay.pvcs.p1.be",
        "frame_relay.pvcs.p1.becn_shaping",
        "flows.backup.tcp.rcv_buf",
    ]
    report, doc, seconds = timed_advice(
        client,
        target=f"backup.completion_time<={0.6 * before:.0f}s",
        run_id=run.id,
        levers=levers,
    )
    show("Frame Relay backup, CIR/Be/shaping/window", report, doc, seconds)


def five_levers(preset: str) -> tuple[list[str], str]:
    scenario = load_preset(preset)
    flow = next(f.id for f in scenario.flows if f.kind == "tcp_bulk")
    specs = default_levers(scenario, [flow])
    levers = ["+".join(s.paths) for s in specs if not s.paths[0].endswith(".sack")][:5]
    return levers, flow


def target_of(preset: str, factor: float | None, flow: str) -> str:
    if factor is None:
        return f"{flow}.completion_time<=200s"
    f = engine.simulate(load_preset(preset)).flows[flow]
    if f.completed:
        return f"{flow}.completion_time<={factor * f.completion_time:.3g}s"
    return f"{flow}.goodput>={factor * f.goodput_bps / 1e3:.0f}kbps"


def cost(client: Client) -> None:
    print("\n== five levers on each seed scenario (cache: refresh)")
    for seed, (preset, factor) in SEEDS.items():
        levers, flow = five_levers(preset)
        goal = target_of(preset, factor, flow)
        report, doc, seconds = timed_advice(client, target=goal, preset=preset, levers=levers)
        fixes = report.get("fixes") or []
        top = fixes[0]["text"] if fixes else f"none meets it; best {report.get('best')}"
        print(
            f"   seed {seed} {preset:<20} {goal:<34} {doc.status:<9} runs {doc.progress.runs:>2} "
            f"rounds {report.get('rounds')} wall {seconds:5.1f} s | {top[:110]}"
        )
        print(f"      {anatomy(client, doc.id)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["seed003", "fr", "cost"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with embedded(args.workers) as stack, Client(stack.base_url, timeout=120) as client:
        for name, fn in (("seed003", seed003), ("fr", frame_relay), ("cost", cost)):
            if args.only in (None, name):
                fn(client)


if __name__ == "__main__":
    main()
