"""`tcpfr`: the service from a shell, over its public HTTP API.

    tcpfr run PRESET|FILE [--seed N] [--refresh] [--wait] [--json]
    tcpfr sweep FILE | --preset NAME [--replications N] [--seed N] [--refresh] [--wait] [--json]
    tcpfr status ID [--json]
    tcpfr series RUN_ID KEY [--csv] [--max-points N] [--json]
    tcpfr compare ID ID... [--baseline ID] [--json]
    tcpfr export ID [-o FILE] [--pcap LINK[:DIRECTION]]
    tcpfr presets [--json]
    tcpfr advise PRESET|FILE|RUN_ID --target GOAL [--lever PATH]... [--budget N] [--json]
    tcpfr remedies RUN_ID [--check] [--json]

The server is `--url` or TCPFR_URL (default http://127.0.0.1:8000, where `make run`
serves), the API key `--key` or TCPFR_API_KEY. Exit codes: 0 done, 1 the run, sweep or
advice failed (or was cancelled), 2 bad input (the problem's detail and each field's path
are printed), 3 the server could not be reached (or answered 5xx).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from client.advise_cli import Command, add_commands
from client.api import Client
from client.errors import ApiError, Failed, Unreachable
from client.models import RunOut, RunStatus
from client.shell import (
    BAD_INPUT,
    FAILED,
    OK,
    UNREACHABLE,
    BadInput,
    ProgressDisplay,
    fmt,
    load_document,
    print_json,
    run_body,
)


def print_run(run: RunOut, out: TextIO = sys.stdout) -> None:
    w = out.write
    cached = f" (cache hit of {run.source_run_id})" if run.cache_hit else ""
    w(
        f"run {run.id}  {run.status.value}{cached}  {run.scenario_name}  seed {run.seed}  "
        f"engine {run.engine_version}\n"
    )
    if run.error:
        w(f"error: {run.error.type}: {run.error.message}\n")
    if run.summary is None:
        return
    s = run.summary
    w(f"sim_time {s.sim_time:.3f} s  events {s.events:,}  wall {s.wall_time:.2f} s\n")
    for warning in s.warnings:
        w(f"warning: {warning}\n")
    for fid, f in s.flows.items():
        limit = ((run.diagnosis or {}).get(fid) or {}).get("limit", "-")
        if f.get("kind") == "tcp":
            w(
                f"  {fid:<12} time {fmt(f.get('completion_time'), ' s')}  goodput "
                f"{fmt((f.get('goodput_bps') or 0) / 1e3, ' kbit/s')}  retx "
                f"{f.get('retransmissions')}  timeouts {f.get('timeouts')}  limit: {limit}\n"
            )
        else:
            w(
                f"  {fid:<12} throughput {fmt((f.get('throughput_bps') or 0) / 1e3, ' kbit/s')}"
                f"  plr {fmt(f.get('plr'), '', 4)}  limit: {limit}\n"
            )
        advice = ((run.diagnosis or {}).get(fid) or {}).get("advice")
        if advice:
            w(f"      {advice}\n")


def print_problem(exc: ApiError, out: TextIO = sys.stderr) -> None:
    p = exc.problem
    out.write(f"error: {p.status} {p.title}" + (f": {p.detail}" if p.detail else "") + "\n")
    for e in p.errors or []:
        where = e.pointer if e.pointer is not None else ".".join(map(str, e.loc))
        out.write(f"  at {where or '/'} ({'.'.join(map(str, e.loc))}): {e.msg}\n")


# --- commands -----------------------------------------------------------------------------


def cmd_run(client: Client, args: argparse.Namespace) -> int:
    run = client.submit_run(run_body(args.target, args.seed, refresh=args.refresh))
    if args.wait:
        run.wait(progress=None if args.quiet else ProgressDisplay(f"run {run.id}"), check=False)
    if args.json:
        print_json(run.doc)
    else:
        print_run(run.doc)
    return _run_code(run.doc)


def _run_code(run: RunOut) -> int:
    return FAILED if run.status in (RunStatus.failed, RunStatus.cancelled) else OK


def cmd_sweep(client: Client, args: argparse.Namespace) -> int:
    options = {
        k: v for k, v in (("replications", args.replications), ("seed", args.seed)) if v is not None
    }
    if args.refresh:
        options["cache"] = "refresh"
    if (args.file is None) == (args.preset is None):
        raise BadInput("give a sweep FILE or --preset NAME (one of them)")
    if args.preset is not None:
        sweep = client.sweep(preset=args.preset, **options)
    else:
        doc = load_document(args.file)
        if not isinstance(doc, dict):
            raise BadInput(f"{args.file}: expected a sweep (a mapping)")
        sweep = client.sweep(doc, **options)
    if args.wait:
        label = f"sweep {sweep.id}"
        sweep.wait(progress=None if args.quiet else ProgressDisplay(label), check=False)
    if args.json:
        print_json(sweep.doc)
    else:
        d = sweep.doc
        c = d.progress.counts
        print(
            f"sweep {d.id}  {d.status}  {d.name}  {d.run_count} runs ({d.cache_hits} from "
            f"the cache): {c.succeeded} succeeded, {c.failed} failed, {c.cancelled} "
            f"cancelled, {c.queued + c.running} to go"
        )
        if d.status in ("succeeded", "partial"):
            for line in sweep.summary().get("conclusions", []):
                print(f"  {line}")
    return OK if sweep.status not in ("failed", "cancelled", "partial") else FAILED


def cmd_status(client: Client, args: argparse.Namespace) -> int:
    try:
        run = client.get_run(args.id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        sweep = client.get_sweep(args.id)
        if args.json:
            print_json(sweep.doc)
        else:
            p = sweep.doc.progress
            print(
                f"sweep {sweep.id}: {sweep.status} {p.fraction:.0%} "
                f"({p.finished} of {sweep.doc.run_count} runs finished)"
            )
        return FAILED if sweep.status in ("failed", "cancelled", "partial") else OK
    if args.json:
        print_json(run.doc)
    else:
        print(f"run {run.id}: {run.status.value} {run.doc.progress:.0%}")
        if run.doc.error:
            print(f"error: {run.doc.error.type}: {run.doc.error.message}")
    return _run_code(run.doc)


def cmd_series(client: Client, args: argparse.Namespace) -> int:
    if args.csv:
        sys.stdout.write(client.series_csv(args.run_id, args.key, max_points=args.max_points))
        return OK
    data = client.series_data(args.run_id, args.key, max_points=args.max_points)
    if args.json:
        print_json(data)
        return OK
    print(
        f"# {data.key} ({data.unit}): {data.points} of {data.length} samples"
        + (" (downsampled, MinMaxLTTB)" if data.downsampled else "")
    )
    print("t\tv")
    for t, v in zip(data.t, data.v, strict=True):
        print(f"{t!r}\t{'' if v is None else repr(v)}")
    return OK


def cmd_compare(client: Client, args: argparse.Namespace) -> int:
    doc = client.compare(args.ids, baseline=args.baseline)
    if args.json:
        print_json(doc)
        return OK
    metrics = [(m["flow"], m["metric"], m["unit"]) for m in doc.get("metrics", [])]
    shown = [
        m
        for m in metrics
        if m[1] in ("completion_time", "goodput_bps", "throughput_bps", "retransmissions")
    ]
    header = ["point", "runs", "parameters"] + [f"{f}.{m} ({u})" for f, m, u in shown]
    print(" | ".join(header))
    for p in doc.get("points", []):
        params = ", ".join(f"{k}={v}" for k, v in p.get("parameters", {}).items()) or "-"
        cells = [
            str(p["index"]) + (" (baseline)" if p.get("is_baseline") else ""),
            str(len(p.get("run_ids", []))),
            params,
        ]
        for f, m, _u in shown:
            stat = p.get("metrics", {}).get(f, {}).get(m) or {}
            cells.append(fmt(stat.get("mean"), "", 3))
        print(" | ".join(cells))
    for line in doc.get("conclusions", []):
        print(f"  {line}")
    return OK


def cmd_export(client: Client, args: argparse.Namespace) -> int:
    if args.pcap:
        link, _, direction = args.pcap.partition(":")
        out = Path(args.output or f"tcpfr-{args.id}-{link}.pcap")
        client.pcap(args.id, link, direction=direction or None, path=out)
        print(f"wrote {out} ({out.stat().st_size:,} bytes): open it in Wireshark")
        return OK
    out = Path(args.output or f"tcpfr-{args.id}.zip")
    client.export(args.id, out)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return OK


def cmd_presets(client: Client, args: argparse.Namespace) -> int:
    presets = client.presets()
    if args.json:
        print_json([p.model_dump(mode="json") for p in presets])
        return OK
    for p in presets:
        print(f"{p.name:<24} {p.kind:<9} {p.description}")
    return OK


# --- entry point --------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="tcpfr",
        description="The tcpfr simulation service from a shell.",
        epilog="Exit codes: 0 done, 1 run/sweep failed, 2 bad input, 3 server unreachable.",
    )
    top.add_argument("--url", help="API base URL (default: $TCPFR_URL or http://127.0.0.1:8000)")
    top.add_argument("--key", help="API key (default: $TCPFR_API_KEY)")
    top.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str,
        fn: Callable[[Client, argparse.Namespace], int],
        help: str,
        json_flag: bool = True,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(fn=fn)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print the API's JSON document")
        return p

    # In the order `tcpfr --help` lists them.
    for add in (_run, _sweep, _status, _series, _compare, _export, _presets, add_commands):
        add(command)
    return top


def _run(command: Command) -> None:
    p = command("run", cmd_run, "submit a run of a preset or a scenario file")
    p.add_argument(
        "target",
        metavar="PRESET|FILE",
        help="a preset name, a scenario YAML/JSON file, or a POST /v1/runs body file",
    )
    p.add_argument("--seed", type=int)
    p.add_argument(
        "--refresh",
        action="store_true",
        help="simulate even if the result is stored (cache: refresh)",
    )
    p.add_argument("--wait", action="store_true", help="wait until it has finished")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while waiting")


def _sweep(command: Command) -> None:
    p = command("sweep", cmd_sweep, "submit a sweep from a file, or a study preset")
    p.add_argument("file", nargs="?", metavar="FILE", help="a sweep YAML/JSON file")
    p.add_argument("--preset", metavar="NAME", help="a study preset (riverbed-study, ...)")
    p.add_argument("--replications", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument(
        "--refresh", action="store_true", help="simulate every run even if stored (cache: refresh)"
    )
    p.add_argument("--wait", action="store_true", help="wait until every run has finished")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while waiting")


def _status(command: Command) -> None:
    p = command("status", cmd_status, "a run's or a sweep's status")
    p.add_argument("id", metavar="ID")


def _series(command: Command) -> None:
    p = command("series", cmd_series, "one time-series of a run")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("key", metavar="KEY", help="e.g. flow.backup.cwnd")
    p.add_argument("--csv", action="store_true", help="CSV (t,v) as the API writes it")
    p.add_argument("--max-points", type=int, dest="max_points")


def _compare(command: Command) -> None:
    p = command("compare", cmd_compare, "compare succeeded runs")
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--baseline", metavar="ID")


def _export(command: Command) -> None:
    p = command(
        "export", cmd_export, "download a run's or a sweep's export bundle (zip)", json_flag=False
    )
    p.add_argument("id", metavar="ID")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="default: tcpfr-ID.zip (tcpfr-ID-LINK.pcap with --pcap)",
    )
    p.add_argument(
        "--pcap",
        metavar="LINK[:DIRECTION]",
        help="the run's packet capture of LINK (libpcap) instead of the bundle; "
        "DIRECTION (a_to_b, b_to_a, both) when the link was captured more than once",
    )


def _presets(command: Command) -> None:
    command("presets", cmd_presets, "the presets (seed studies)")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with Client(args.url, key=args.key, timeout=args.timeout) as client:
            return int(args.fn(client, args))
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except Unreachable as exc:
        print(f"error: server unreachable: {exc}", file=sys.stderr)
        return UNREACHABLE
    except ApiError as exc:
        print_problem(exc)
        return UNREACHABLE if exc.status >= 500 else BAD_INPUT
    except Failed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
