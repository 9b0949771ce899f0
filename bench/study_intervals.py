"""Issue 31's interval check: every seed study run through the service (the embedded default,
`POST /v1/presets/{name}/sweep`), and every interval of its summary held against its
quantity's domain: a point's mean of a fraction in [0, 1] and of anything else >= 0 (the
metric's unit says which), its difference from the baseline within what the two means can
differ by, and that difference in percent likewise. Prints, per study, the intervals found,
how many an end of was clipped to the domain, and how many lie outside it (issue 31 asks
for none). Asserts nothing.

    .venv/bin/python bench/study_intervals.py [--studies a,b] [--workers 2]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_bench import start  # noqa: E402

from api.compare.report import domain  # noqa: E402

STUDIES = (
    "riverbed-study",
    "riverbed-30mb-study",
    "riverbed-drops-study",
    "kazmi-study",
    "gupta-study",
    "hadi-study",
)
SLACK = 1e-9  # relative: a bound computed in another order may differ in its last bits


def outside(ci: dict[str, Any] | None, lo: float, hi: float) -> bool:
    if ci is None:
        return False
    tol = SLACK * max(1.0, abs(ci["low"]), abs(ci["high"]))
    return ci["low"] < lo - tol or ci["high"] > hi + tol or ci["low"] > ci["high"] + tol


def check(summary: dict[str, Any]) -> tuple[int, int, list[str]]:
    """(intervals, clipped, what lies outside its domain)."""
    units = {(m["flow"], m["metric"]): m["unit"] for m in summary["metrics"]}
    found = clipped = 0
    bad: list[str] = []
    for point in summary["points"]:
        for flow, stats in point["metrics"].items():
            for metric, stat in stats.items():
                lo, hi = domain(units[(flow, metric)])
                checks = [("mean", stat.get("ci95"), lo, hi)]
                delta = stat.get("delta")
                if delta is not None:
                    base = delta["baseline_mean"]
                    checks.append(("delta", delta.get("ci95"), lo - base, hi - base))
                    if base > 0:
                        pct = (100 * (lo - base) / base, 100 * (hi - base) / base)
                        checks.append(("delta %", delta.get("pct_ci95"), *pct))
                for what, ci, low, high in checks:
                    if ci is None:
                        continue
                    found += 1
                    clipped += bool(ci.get("clipped"))
                    if outside(ci, low, high) or not math.isfinite(ci["low"]):
                        bad.append(f"point {point['index']} {flow}.{metric} {what}: {ci}")
    return found, clipped, bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", default=",".join(STUDIES))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="study-intervals-") as tmp:
        stack = start(args.workers, Path(tmp), None)
        try:
            with httpx.Client(base_url=stack.base_url, timeout=60) as client:
                for name in args.studies.split(","):
                    t0 = time.monotonic()
                    resp = client.post(f"/v1/presets/{name}/sweep", json={})
                    resp.raise_for_status()
                    sweep_id = resp.json()["id"]
                    while client.get(f"/v1/sweeps/{sweep_id}/progress").json()["status"] in (
                        "queued",
                        "running",
                    ):
                        time.sleep(0.5)
                    summary = client.get(f"/v1/sweeps/{sweep_id}/summary").json()
                    found, clipped, bad = check(summary)
                    print(
                        f"{name}: {summary['run_count']} runs ({summary['status']}) in "
                        f"{time.monotonic() - t0:.0f} s: {found} intervals, {clipped} clipped "
                        f"to their domain, {len(bad)} outside it",
                        flush=True,
                    )
                    for line in bad[:10]:
                        print("   ", line)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
