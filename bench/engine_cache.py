"""What one event costs the CPU at 1 and 1,000 flows, counted rather than timed (issue 11).
Prints figures; asserts nothing.

    .venv/bin/python bench/engine_cache.py [--flows 1,1000] [--l2 KIB] [--jobs N]

On a shared machine two timings of the same run can differ by a third, and the flows
criterion is a ratio of two such timings. Valgrind's cachegrind counts instead: it runs
the engine on a simulated CPU and reports the instructions it executed and the misses of
a first-level data cache (32 KiB) and of a last level set by `--l2` (default 512 KiB, the
private L2 of the 2-core machines this project is built on; on them an L2 miss costs about
what a DRAM access does, as the shared L3 is other tenants' too). The same scenario gives
the same counts run after run, to within what address-space layout moves (a fraction of a
per cent here: the runs disable its randomisation and fix the hash seed).

Each row is the flows dumbbell of `engine_scale.py` (NewReno, 64 KB windows, 100 Mb/s),
run twice, to a shorter and a longer end, without finalising: the difference is the run
phase alone (the build and the start cancel out), divided by the events between the two
ends. The 1-flow row runs longer, as it has a tenth of the events per simulated second.

Cachegrind runs a program about fifty times slower: the default rows take about four
minutes with two jobs. Needs valgrind (Debian: `apt-get install valgrind`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_scale import flows_dumbbell  # noqa: E402  (a sibling script, not a package)

ROOT = Path(__file__).resolve().parent.parent
#: Simulated seconds of the shorter and the longer run, by number of flows.
SPANS = {1: (10.0, 20.0), 10: (3.0, 6.0)}
DEFAULT_SPAN = (2.0, 4.0)

# The run phase as simulate() has it (the model built with the collector paused), then
# out at once: finalising and the interpreter's exit free the recorded series, a cost that
# grows with the series kept, not with the events, and would blur the difference.
RUNNER = """
import json, os, sys
from engine import Scenario
from engine.simulation import Network, _collector_paused
scenario = Scenario.model_validate(json.load(open(sys.argv[1])))
with _collector_paused():
    net = Network(scenario, scenario.seed)
net.env.advance(float(scenario.duration))
print("events", net.env.next_eid(), flush=True)
os._exit(0)
"""


def counts(flows: int, duration: float, l2_kib: int, work: Path) -> dict[str, int]:
    """Instructions, D1 and last-level misses and events of one run to `duration`, built
    and run but not finalised (`work` holds RUNNER as runner.py)."""
    scenario = work / f"f{flows}-{duration:g}.json"
    scenario.write_text(json.dumps(flows_dumbbell(flows, duration)))
    runner = work / "runner.py"
    out = work / f"cg-{flows}-{duration:g}.out"
    cmd = [
        "setarch",
        os.uname().machine,
        "-R",
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--I1=32768,8,64",
        "--D1=32768,8,64",
        f"--LL={l2_kib * 1024},8,64",
        f"--cachegrind-out-file={out}",
        sys.executable,
        str(runner),
        str(scenario),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=True)

    def total(label: str) -> int:
        match = re.search(rf"{label}:\s+([\d,]+)", proc.stderr)
        assert match is not None, proc.stderr[-2000:]
        return int(match.group(1).replace(",", ""))

    events = re.search(r"events (\d+)", proc.stdout)
    assert events is not None, proc.stdout
    return {
        "instructions": total("I   refs"),
        "d1": total("D1  misses"),
        "ll": total("LL misses"),
        "events": int(events.group(1)),
    }


def row(flows: int, l2_kib: int, work: Path) -> dict[str, float]:
    short, long = SPANS.get(flows, DEFAULT_SPAN)
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda d: counts(flows, d, l2_kib, work), (short, long))
    events = b["events"] - a["events"]
    return {
        "events": events,
        "instructions": (b["instructions"] - a["instructions"]) / events,
        "d1": (b["d1"] - a["d1"]) / events,
        "ll": (b["ll"] - a["ll"]) / events,
        "span": long - short,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", default="1,1000", help="comma-separated flow counts")
    parser.add_argument("--l2", type=int, default=512, help="last-level cache, KiB")
    parser.add_argument("--jobs", type=int, default=1, help="rows measured at once")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("setarch") is None:
        sys.exit("needs valgrind and setarch (Debian: apt-get install valgrind util-linux)")
    flows = [int(n) for n in args.flows.split(",")]
    print(
        f"run phase per event, cachegrind: D1 32 KiB, last level {args.l2} KiB "
        "(flows dumbbell, NewReno, 64 KB windows, 100 Mb/s)"
    )
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        (Path(tmp) / "runner.py").write_text(RUNNER)
        rows = list(pool.map(lambda n: row(n, args.l2, Path(tmp)), flows))
    base = rows[0]
    for n, r in zip(flows, rows, strict=True):
        print(
            f"  {n:>5} flows   events {r['events']:>9,.0f} ({r['span']:g} s)   "
            f"instructions {r['instructions']:>7,.0f} ({r['instructions'] / base['instructions']:.2f}x)   "
            f"D1 misses {r['d1']:6.1f}   L2 misses {r['ll']:6.2f}"
        )


if __name__ == "__main__":
    main()
