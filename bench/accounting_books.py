"""Issue 24's exact accounting over every seed study point: each TCP flow's states add up to
its duration within 1e-9 relative (engine.accounting.unbalanced), in every run of every
study the seed papers bring (the presets are tests/unit/test_engine_accounting.py's).

    python bench/accounting_books.py [--jobs N]

Prints, per study, its runs, flows and the worst relative imbalance; exits 1 on any flow
whose books do not balance.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from engine.accounting import FIELDS, unbalanced
from engine.cli import _study_spec, run_study
from engine.presets import list_presets
from engine.result import TcpFlowSummary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    bad = 0
    for study in (p.name for p in list_presets() if p.kind == "study"):
        started = time.monotonic()
        rows = run_study(_study_spec(study), args.jobs)
        flows, worst = 0, 0.0
        for point, seed, result in rows:
            for fid, f in result.flows.items():
                if not isinstance(f, TcpFlowSummary) or f.time is None:
                    continue
                flows += 1
                t = f.time
                total = math.fsum(getattr(t, name) for name in FIELDS)
                if t.duration > 0:
                    worst = max(worst, abs(total - t.duration) / t.duration)
                why = unbalanced(t)
                if why is not None:
                    bad += 1
                    print(f"  UNBALANCED {study} {point.parameters} seed {seed} {fid}: {why}")
        print(
            f"{study}: {len(rows)} runs, {flows} TCP flows, worst |sum - duration| / duration "
            f"{worst:.1e} ({time.monotonic() - started:.0f} s)"
        )
    print(f"flows whose books do not balance: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
