"""Golden results: a digest of every number a fixed set of simulations produces, to prove a
change leaves results identical to the byte (or to show exactly which cases moved).

    .venv/bin/python bench/goldens.py --write FILE   # simulate every case, store digests
    .venv/bin/python bench/goldens.py --check FILE   # simulate again, compare; exit 1 on a change
    .venv/bin/python bench/goldens.py --list         # the cases

The cases: every scenario preset, the four scale cases of bench/engine_scale.py (the 1 Gb/s
CUBIC paths at 4 s rather than 10 s), one dumbbell per variant and option family (BBR, paced
CUBIC, Vegas, Reno + SACK, Tahoe, NewReno with 100 flows) and the Frame Relay backup of
docs/advice.md (policed, and shaped to the CIR). Each digest covers the whole Result but
`wall_time` and `engine_build`; with `--ignore-version` also `engine_version`, so that a version
bump alone is not a change, and with `--ignore-hash` also `scenario_hash`, so that a new scenario
field (which every scenario's canonical JSON then carries) is not a change in itself: write the
reference with the same flags as the check. The file keeps, beside each digest, the summaries
(no series), so that
`--check` names the fields that moved.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_scale import dumbbell, flows_dumbbell  # noqa: E402

from engine import Scenario, simulate  # noqa: E402
from engine.presets import list_presets, load_preset  # noqa: E402

MIB = 1 << 20


def frame_relay_backup(*, shaping: bool = False) -> dict[str, Any]:
    """50 MB over Frame Relay: 768 kb/s access ports, PVC CIR 256 kb/s, Bc = Be = 32 kbit,
    15 ms per link, a 16 KiB receive window (issue 23's first case)."""
    fr = {
        "rate": "768kbps",
        "delay": "15ms",
        "encap": "frame_relay",
        "queue": {"discipline": "droptail", "limit_packets": 100},
    }
    return {
        "name": "fr-backup" + ("-shaped" if shaping else ""),
        "duration": "7200s",
        "nodes": [
            {"id": "ws", "kind": "host"},
            {"id": "branch", "kind": "router"},
            {"id": "cloud", "kind": "fr_switch"},
            {"id": "dc", "kind": "router"},
            {"id": "server", "kind": "host"},
        ],
        "links": [
            {"id": "lan1", "a": "ws", "b": "branch", "rate": "100Mbps", "delay": "0.1ms"},
            {"id": "access1", "a": "branch", "b": "cloud", **fr},
            {"id": "access2", "a": "cloud", "b": "dc", **fr},
            {"id": "lan2", "a": "dc", "b": "server", "rate": "100Mbps", "delay": "0.1ms"},
        ],
        "frame_relay": {
            "pvcs": [
                {
                    "id": "p1",
                    "dlci": 100,
                    "src": "branch",
                    "dst": "dc",
                    "cir": "256kbps",
                    "bc": "32kbit",
                    "be": "32kbit",
                    "becn_shaping": shaping,
                }
            ]
        },
        "flows": [
            {
                "id": "backup",
                "kind": "tcp_bulk",
                "src": "ws",
                "dst": "server",
                "bytes": "50MB",
                "tcp": {"rcv_buf": "16KiB"},
            }
        ],
    }


def _variant(name: str, variant: str, *, flows: int = 1, **tcp: Any) -> dict[str, Any]:
    return dumbbell(
        name,
        flows=flows,
        rate="100Mbps",
        variant=variant,
        sack=bool(tcp.pop("sack", False)),
        window=4 * MIB,
        duration=5.0,
        **tcp,
    )


def cases() -> dict[str, Callable[[], dict[str, Any]]]:
    out: dict[str, Callable[[], dict[str, Any]]] = {}
    for info in list_presets():
        if info.kind == "scenario":
            out[f"preset:{info.name}"] = lambda name=info.name: load_preset(name).model_dump(
                mode="json"
            )
    for sack in (True, False):
        out[f"scale:cubic-{'sack' if sack else 'nosack'}-1g-16mib-4s"] = lambda sack=sack: dumbbell(
            "cubic",
            flows=1,
            rate="1Gbps",
            variant="cubic",
            sack=sack,
            window=16 * MIB,
            duration=4.0,
        )
    out["scale:newreno-1-flow-100m-20s"] = lambda: flows_dumbbell(1, 20.0)
    out["scale:newreno-1000-flows-100m-20s"] = lambda: flows_dumbbell(1000, 20.0)
    out["variant:bbr"] = lambda: _variant("bbr", "bbr", sack=True)
    out["variant:cubic-paced"] = lambda: _variant("cubic-paced", "cubic", sack=True, pacing=True)
    out["variant:vegas"] = lambda: _variant("vegas", "vegas")
    out["variant:reno-sack"] = lambda: _variant("reno-sack", "reno", sack=True)
    out["variant:tahoe"] = lambda: _variant("tahoe", "tahoe")
    out["variant:newreno-100"] = lambda: _variant("newreno-100", "newreno", flows=100)
    out["fr:backup-policed"] = frame_relay_backup
    out["fr:backup-shaped"] = lambda: frame_relay_backup(shaping=True)
    return out


def measure(name: str, ignore_version: bool, ignore_hash: bool) -> tuple[str, dict[str, Any]]:
    result = simulate(Scenario.model_validate(cases()[name]()))
    # Neither the time taken nor which build took it (compiled or pure) is a result.
    doc = result.model_dump(mode="json", exclude={"wall_time", "engine_build"})
    if ignore_version:
        doc.pop("engine_version", None)
    if ignore_hash:
        doc.pop("scenario_hash", None)
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    summary = {k: v for k, v in doc.items() if k != "series"}
    return hashlib.sha256(blob).hexdigest(), summary


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
        return out
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    mode.add_argument("--list", action="store_true")
    ap.add_argument("--only", help="comma-separated substrings of case names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ignore-version", action="store_true")
    ap.add_argument("--ignore-hash", action="store_true")
    args = ap.parse_args()
    names = list(cases())
    if args.only:
        names = [n for n in names if any(part in n for part in args.only.split(","))]
    if args.list:
        print("\n".join(names))
        return
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {n: pool.submit(measure, n, args.ignore_version, args.ignore_hash) for n in names}
        got = {n: f.result() for n, f in futures.items()}
    if args.write:
        data = {n: {"digest": d, "summary": s} for n, (d, s) in got.items()}
        Path(args.write).write_text(json.dumps(data, indent=1, sort_keys=True))
        print(f"{len(data)} cases written to {args.write}")
        return
    stored = json.loads(Path(args.check).read_text())
    changed = 0
    for n, (digest, summary) in got.items():
        old = stored.get(n)
        if old is None:
            print(f"NEW      {n}")
        elif old["digest"] == digest:
            print(f"same     {n}")
        else:
            changed += 1
            lines = _diff(old["summary"], summary)
            print(f"CHANGED  {n}" + ("" if lines else " (series only)"))
            for line in lines[:12]:
                print(f"           {line}")
            if len(lines) > 12:
                print(f"           ... {len(lines) - 12} more")
    print(f"{changed} of {len(got)} cases changed")
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
