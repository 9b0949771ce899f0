"""`tcpfr advise` and `tcpfr remedies`: what would fix it, from a shell.

tcpfr advise PRESET|FILE|RUN_ID --target 'backup.completion_time<=200s'
             [--lever PATH[+PATH...][=COST]]... [--budget N] [--replications N]
             [--seed N] [--refresh] [--no-wait] [--curves FILE.csv] [--json]
tcpfr remedies RUN_ID [--check] [--replications N] [--json]
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client.api import Client
from client.handles import Advice
from client.shell import FAILED, OK, ProgressDisplay, print_json, run_body

Command = Callable[..., argparse.ArgumentParser]


def _source(target: str) -> dict[str, Any]:
    """A run id, or what `tcpfr run` takes (a preset, a scenario file, a run request file)."""
    try:
        return {"run_id": str(uuid.UUID(target))}
    except ValueError:
        pass
    body = run_body(target, None)
    return {k: v for k, v in body.items() if k in ("scenario", "scenario_id", "preset", "seed")}


def print_advice(advice: Advice) -> None:
    d = advice.doc
    p = d.progress
    print(
        f"{d.kind.replace('_', ' ')} {d.id}  {d.status}  {d.name}  {p.runs} runs "
        f"({p.cache_hits} from the cache)"
    )
    if d.error:
        print(f"error: {d.error.type}: {d.error.message}")
    for line in advice.report.get("text") or []:
        print(f"  {line}")


def cmd_advise(client: Client, args: argparse.Namespace) -> int:
    source = _source(args.target)
    if args.seed is not None:
        source["seed"] = args.seed
    advice = client.advise(
        args.goal,
        levers=args.lever,
        budget=args.budget,
        replications=args.replications,
        cache="refresh" if args.refresh else None,
        **source,
    )
    if not args.no_wait:
        label = f"advice {advice.id}"
        advice.wait(progress=None if args.quiet else ProgressDisplay(label), check=False)
    if args.curves:
        Path(args.curves).write_text(advice.curves(csv=True))
    if args.json:
        print_json(advice.doc)
    else:
        print_advice(advice)
    return FAILED if advice.status in ("failed", "cancelled") else OK


def cmd_remedies(client: Client, args: argparse.Namespace) -> int:
    if args.check:
        check = client.check_remedies(args.run_id, replications=args.replications)
        check.wait(
            progress=None if args.quiet else ProgressDisplay(f"check {check.id}"), check=False
        )
    doc = client.remedies(args.run_id)
    if args.json:
        print_json(doc)
        return OK
    checked = doc.get("check")
    if checked is None:
        for flow, remedies in (doc.get("predicted") or {}).items():
            for r in remedies:
                print(f"  {flow}: {r['text']}")
        print("  (predicted by the bounds; --check simulates them)")
        return OK
    for line in (checked.get("report") or {}).get("text") or []:
        print(f"  {line}")
    return FAILED if checked["status"] in ("failed", "cancelled") else OK


def add_commands(command: Command) -> None:
    """Register the commands with `tcpfr`'s parser (``client.cli.parser``)."""
    p = command("advise", cmd_advise, "what would make a scenario meet a target (by simulation)")
    p.add_argument(
        "target",
        metavar="PRESET|FILE|RUN_ID",
        help="a preset name, a scenario file, a POST /v1/runs body file, or a run's id",
    )
    p.add_argument(
        "--target",
        dest="goal",
        required=True,
        metavar="GOAL",
        help="FLOW.completion_time<=DURATION or FLOW.goodput>=RATE (FLOW may be *)",
    )
    p.add_argument(
        "--lever",
        action="append",
        metavar="PATH[+PATH][=COST][:V1,V2]",
        help="a setting it may change (paths moved together joined by +), at a flat cost, "
        "trying these values; repeat; default: every lever that can matter, at the "
        "documented costs",
    )
    p.add_argument("--budget", type=int, help="most runs to spend (default 30)")
    p.add_argument("--replications", type=int, help="seeds per configuration")
    p.add_argument("--seed", type=int)
    p.add_argument("--refresh", action="store_true", help="simulate even what is stored")
    p.add_argument("--no-wait", action="store_true", help="return once it is accepted")
    p.add_argument("--curves", metavar="FILE", help="write the curves as CSV to FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while waiting")

    p = command("remedies", cmd_remedies, "a run's remedies: predicted, or checked by simulation")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--check", action="store_true", help="simulate each remedy and wait")
    p.add_argument("--replications", type=int, help="seeds per remedy (with --check)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while waiting")
