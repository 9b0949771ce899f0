"""`python -m engine`: run a preset or scenario file, list presets, run a study locally.

python -m engine run PRESET_OR_FILE [--json] [--seed N] [--pcap-dir DIR]
python -m engine presets
python -m engine study NAME_OR_FILE [--json] [--jobs N]
python -m engine findings [--write] [--jobs N]
python -m engine advise PRESET_OR_FILE --target 'FLOW.completion_time<=200s' [--lever SPEC]...
python -m engine check PRESET_OR_FILE [--flow ID]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from engine import findings
from engine.accounting import spent
from engine.advice import cli as advice_cli
from engine.presets import UnknownPreset, list_presets, load_preset, load_study, preset_names
from engine.result import Result, TcpFlowSummary
from engine.scenario import Scenario, load_scenario
from engine.simulation import simulate
from engine.study import Point, StudyError, StudySpec, expand, resolve_base
from engine.version import ENGINE_VERSION


def _load(target: str) -> Scenario:
    if Path(target).is_file():
        return load_scenario(Path(target))
    return load_preset(target)


def _fmt(x: float | None, unit: str = "", digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}{unit}"
    return f"{x:,}{unit}"


def print_result(result: Result, out: TextIO = sys.stdout) -> None:
    w = out.write
    w(
        f"sim_time {result.sim_time:.3f} s   events {result.events:,}   "
        f"wall {result.wall_time:.2f} s   seed {result.seed}   engine {result.engine_version}\n"
    )
    for warning in result.warnings:
        w(f"warning: {warning}\n")
    _print_flows(result, w)
    _print_links(result, w)
    _print_pvcs(result, w)
    _print_captures(result, w)
    _print_diagnosis(result, w)


def _print_flows(result: Result, w: Callable[[str], object]) -> None:
    """One line per flow (TCP: its counters, then where its time went; others: packets)."""
    w("\nflows\n")
    for fid, f in result.flows.items():
        if f.kind == "tcp":
            w(
                f"  {fid:<12} completed={f.completed} time={_fmt(f.completion_time, ' s')} "
                f"goodput={_fmt(f.goodput_bps / 1e3, ' kbit/s', 1)} "
                f"delivered={_fmt(f.bytes_delivered, ' B')} segs={f.segments_sent:,} "
                f"retx={f.retransmissions} timeouts={f.timeouts} fast_retx={f.fast_retransmits} "
                f"rtt_mean={_fmt(f.rtt_mean, ' s')} cwnd_max={f.cwnd_max:,}\n"
            )
            _print_time(f, w)
        else:
            w(
                f"  {fid:<12} sent={f.packets_sent:,} received={f.packets_received:,} "
                f"dropped={f.packets_dropped:,} throughput={_fmt(f.throughput_bps / 1e3, ' kbit/s', 1)} "
                f"delay_mean={_fmt(f.delay_mean, ' s')}\n"
            )


def _print_links(result: Result, w: Callable[[str], object]) -> None:
    """One line per link direction that carried or dropped a packet."""
    w("\nlinks (per direction)\n")
    for key, link in result.links.items():
        if link.packets == 0 and link.drops == 0:
            continue
        w(
            f"  {key:<28} util={link.utilization:6.1%} packets={link.packets:,} "
            f"drops={link.drops} err={link.error_drops} queue_mean={link.queue_mean:.2f} "
            f"queue_max={link.queue_max} qdelay={link.queue_delay_mean * 1e3:.2f} ms\n"
        )


def _print_pvcs(result: Result, w: Callable[[str], object]) -> None:
    """The Frame Relay PVCs' counters, if the scenario has any."""
    if not result.pvcs:
        return
    w("\nPVCs\n")
    for pid, p in result.pvcs.items():
        w(
            f"  {pid:<12} frames={p.frames:,} de_marked={p.de_marked:,} "
            f"excess_dropped={p.excess_dropped:,} de_dropped={p.de_dropped:,} "
            f"fecn={p.fecn_marked:,} becn={p.becn_marked:,} "
            f"shaper_dropped={p.shaper_dropped:,} "
            f"residual_errors={p.residual_error_rate:.4%}\n"
        )


def _print_captures(result: Result, w: Callable[[str], object]) -> None:
    """The packet captures taken, if the scenario asks for any."""
    if not result.captures:
        return
    w("\npacket captures (--pcap-dir DIR writes them)\n")
    for c in result.captures:
        w(
            f"  {c.link} {c.direction:<7} packets={c.packets:,} missed={c.missed:,} "
            f"bytes={c.bytes:,}\n"
        )


def _print_diagnosis(result: Result, w: Callable[[str], object]) -> None:
    """Each diagnosed flow's limit, its bounds and the advice, if the run was diagnosed."""
    if not result.diagnosis:
        return
    w("\ndiagnosis\n")
    for fid, d in result.diagnosis.items():
        b = d.bounds
        cost = ""
        flow = result.flows.get(fid)
        if d.limit_time is not None and isinstance(flow, TcpFlowSummary) and flow.time:
            cost = f", {d.limit_time:,.1f} of {flow.time.duration:,.1f} s"
        w(
            f"  {fid}: limit = {d.limit}{cost}  "
            f"(link {_fmt((b.link_bps or 0) / 1e3, ' kbit/s', 0)}, "
            f"window {_fmt((b.window_bps or 0) / 1e3, ' kbit/s', 0)}, "
            f"mathis {_fmt(b.mathis_bps / 1e3 if b.mathis_bps else None, ' kbit/s', 0)}, "
            f"achieved {_fmt((b.achieved_bps or 0) / 1e3, ' kbit/s', 0)})\n"
        )
        w(f"    {d.advice}\n")


def _print_time(f: TcpFlowSummary, w: Callable[[str], object]) -> None:
    """Where the flow's time went, the costliest state first, and its round trip by part
    (the hops that queued it most named)."""
    t = f.time
    if t is not None and t.duration > 0:
        parts = ", ".join(
            f"{name.replace('_', ' ')} {sec:,.1f} s ({sec / t.duration:.0%})"
            for name, sec in spent(t)
        )
        w(f"      time {t.duration:,.1f} s: {parts}\n")
    r = f.rtt_split
    if r is not None and r.hops:
        # The hops that held the flow's packets a hundredth of a millisecond or more.
        queues = sorted((h for h in r.hops if h.queueing >= 1e-5), key=lambda h: -h.queueing)
        where = ", ".join(f"{h.hop} {h.queueing * 1e3:,.1f}" for h in queues[:3])
        w(
            f"      rtt {1e3 * (r.propagation + r.serialisation + r.queueing):,.1f} ms: "
            f"propagation {r.propagation * 1e3:,.1f}, serialisation "
            f"{r.serialisation * 1e3:,.1f}, queueing {r.queueing * 1e3:,.1f}"
            + (f" ({where})" if where else "")
            + "\n"
        )


def write_captures(result: Result, directory: Path) -> None:
    """Each packet capture of the result as DIR/<link>-<direction>.pcap (noted on stderr)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not result.captures:
        print("note: the scenario asks for no packet capture (`capture:`)", file=sys.stderr)
    for c in result.captures:
        path = directory / f"{c.link}-{c.direction}.pcap"
        data = result.pcap(c.link, c.direction)
        assert data is not None  # simulate() keeps the file of every capture it lists
        path.write_bytes(data)
        print(f"wrote {path}: {c.packets:,} packets", file=sys.stderr)


def _run_point(args: tuple[Scenario, int]) -> Result:
    scenario, seed = args
    return simulate(scenario, seed=seed)


def run_study(spec: StudySpec, jobs: int) -> list[tuple[Point, int, Result]]:
    points = expand(spec, resolve_base(spec))
    tasks = [(p.scenario, seed) for p in points for seed in p.seeds]
    keys = [(p, seed) for p in points for seed in p.seeds]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_run_point, tasks))
    else:
        results = [_run_point(t) for t in tasks]
    return [(p, seed, r) for (p, seed), r in zip(keys, results, strict=True)]


def _study_spec(target: str) -> StudySpec:
    if Path(target).is_file():
        import yaml

        data = yaml.safe_load(Path(target).read_text())
        data.pop("name", None)
        data.pop("description", None)
        return StudySpec.model_validate(data)
    return StudySpec.model_validate(load_study(target))


def print_study(rows: list[tuple[Point, int, Result]], out: TextIO = sys.stdout) -> None:
    paths = list(rows[0][0].parameters) if rows else []
    header = " | ".join(p.split(".")[-2] + "." + p.split(".")[-1] for p in paths)
    out.write(
        f"{header} | seed | flow | time s | goodput kbit/s | retx | timeouts | limit (its s)\n"
    )
    for point, seed, result in rows:
        values = " | ".join(str(point.parameters[p]) for p in paths)
        mark = " (baseline)" if point.is_baseline else ""
        for fid, f in result.flows.items():
            if f.kind != "tcp":
                continue
            d = result.diagnosis.get(fid)
            limit: str = "-" if d is None else d.limit
            if d is not None and d.limit_time is not None:
                limit += f" ({d.limit_time:,.1f})"
            out.write(
                f"{values}{mark} | {seed} | {fid} | {_fmt(f.completion_time, '', 1)} | "
                f"{f.goodput_bps / 1e3:,.1f} | {f.retransmissions} | {f.timeouts} | "
                f"{limit}\n"
            )


def print_findings(runs: findings.Runs, out: TextIO = sys.stdout) -> None:
    """The seed papers' findings these runs answer, the paper's value beside ours."""
    view = findings.View(runs)
    for name, items in findings.DERIVATIONS.items():
        rows = findings.evaluate(items, runs)
        if rows:
            out.write(
                f"\nfindings ({name}; the full table needs every study: "
                f"python -m engine findings)\n"
            )
            out.write(findings.render_text(rows))
    for study, side in findings.SIDE_TABLES.items():
        if study in runs:
            out.write("\n" + side(view))


def run_findings(*, write: bool, jobs: int, out: TextIO = sys.stdout) -> int:
    """Run every study the findings read; print them, or store them and rewrite the tables."""
    runs: findings.Runs = {}
    for study in findings.studies():
        rows = run_study(_study_spec(study), jobs)
        runs[study] = findings.records(study, rows)
    stale = 0
    for name, items in findings.DERIVATIONS.items():
        table = findings.evaluate(items, runs)
        stale += sum(1 for r in table if not r.consistent)
        if write:
            path = findings.presets_dir() / name
            path.write_text(findings.rewrite(path.read_text(), findings.render(table)))
        out.write(f"\n{name}\n" + findings.render_text(table))
    if write:
        findings.write_snapshot(runs, ENGINE_VERSION)
    if stale:
        out.write(f"\n{stale} finding(s) disagree with their verdict: revise the derivation\n")
    return 1 if stale else 0


def _parser() -> argparse.ArgumentParser:
    """The command line: run, presets, study, findings, and the advice's advise and check."""
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a preset or a scenario file (JSON or YAML)")
    run.add_argument("target")
    run.add_argument("--json", action="store_true", help="print the Result as JSON")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument(
        "--pcap-dir",
        metavar="DIR",
        type=Path,
        help="write the scenario's packet captures there, as LINK-DIRECTION.pcap",
    )
    sub.add_parser("presets", help="list presets")
    study = sub.add_parser("study", help="run a study (sweep) locally")
    study.add_argument("target")
    study.add_argument("--json", action="store_true")
    study.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    found = sub.add_parser(
        "findings", help="run the seed studies and print every paper finding beside ours"
    )
    found.add_argument(
        "--write",
        action="store_true",
        help="store the numbers (presets/findings.json) and rewrite the "
        "derivations' findings tables",
    )
    found.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    advice_cli.add_parsers(sub)
    return parser


def _command_run(args: argparse.Namespace) -> int:
    """`run`: simulate, write the captures if asked, print the Result (text or JSON)."""
    result = simulate(_load(args.target), seed=args.seed)
    if args.pcap_dir is not None:
        write_captures(result, args.pcap_dir)
    if args.json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        print_result(result)
    return 0


def _command_study(args: argparse.Namespace) -> int:
    """`study`: run every point, print the rows (and the findings they answer) or JSON."""
    rows = run_study(_study_spec(args.target), max(1, args.jobs))
    if args.json:
        points = [
            {
                "parameters": p.parameters,
                "seed": seed,
                "baseline": p.is_baseline,
                "result": r.model_dump(mode="json"),
            }
            for p, seed, r in rows
        ]
        sys.stdout.write(json.dumps({"points": points}) + "\n")
    else:
        print_study(rows)
        if args.target in findings.studies():
            print_findings({args.target: findings.records(args.target, rows)})
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit status."""
    if args.command == "presets":
        for info in list_presets():
            print(f"{info.name:<24} {info.kind:<8} {info.description}")
        return 0
    if args.command in ("advise", "check"):
        return advice_cli.run(args, _load(args.target_scenario))
    if args.command == "findings":
        return run_findings(write=args.write, jobs=max(1, args.jobs))
    if args.command == "run":
        return _command_run(args)
    return _command_study(args)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except UnknownPreset as exc:
        print(f"error: {exc}; or give a scenario file path", file=sys.stderr)
    except ValidationError as exc:
        print(f"error: invalid scenario:\n{exc}", file=sys.stderr)
    except StudyError as exc:
        print(f"error: {'.'.join(map(str, exc.loc))}: {exc.message}", file=sys.stderr)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 2


__all__ = ["main", "preset_names"]
