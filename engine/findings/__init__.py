"""The seed papers' findings against ours: one table per seed derivation
(`engine/presets/*.md`), every finding of the paper with the paper's value, ours, the tests
its sentence asks for, and reproduced / partly / not with the reason.

One module per seed holds what its studies' runs keep and its findings (`riverbed` for
seeds 000 and 003, `gupta` 001, `kazmi` 002, `hadi` 004); `core` what they share (the
view of the runs, a finding, a table row, rendering, files); this module the registries.

Each finding reads a few metrics of the runs of one or more preset studies. The metrics
are extracted once per run (`EXTRACT`), so the same code renders the table from a live
study (`python -m engine study NAME`, `python -m engine findings`) and from the snapshot
stored beside the derivations (`presets/findings.json`, written by
`python -m engine findings --write`, which also regenerates the tables and the README's
summary). `tests/unit/test_findings.py` re-renders every table from the snapshot, checks it
against the derivations, re-runs the first seed of every point to check the snapshot against
the engine, and grades the findings on those runs.

A finding's `check` returns our value as text and the tests of its claim (an ordering, a
size, a shape, each when the paper states it); its verdict is computed from them by the
rule of `engine/presets/grading.py` (`grading.md`). The finding's `verdict` field is what
the derivation expects, so that its reason stays true: when the engine moves and the grade
changes, the table says STALE and the test fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.findings.core import (
    BEGIN,
    END,
    SEED_NAMES,
    SNAPSHOT,
    Finding,
    Metrics,
    Row,
    Runs,
    View,
    counts,
    evaluate,
    load_snapshot,
    presets_dir,
    readme_path,
    render,
    render_summary,
    render_text,
    rewrite,
    table_in,
)
from engine.findings.gupta import SEED_001, _gupta, gupta_table
from engine.findings.hadi import SEED_004, _hadi
from engine.findings.kazmi import SEED_002
from engine.findings.kazmi_runs import _kazmi
from engine.findings.riverbed import SEED_000, SEED_003, _riverbed

if TYPE_CHECKING:
    from engine.result import Result
    from engine.scenario import Scenario

EXTRACT: dict[str, Callable[[Scenario, Result], Metrics]] = {
    "riverbed-study": _riverbed,
    "riverbed-30mb-study": _riverbed,
    "riverbed-drops-study": _riverbed,
    "gupta-study": _gupta,
    "kazmi-study": _kazmi,
    "hadi-study": _hadi,
}


def records(study: str, rows: Iterable[tuple[Any, int, Any]]) -> list[dict[str, Any]]:
    """Runs of a study (the CLI's (Point, seed, Result) rows) as snapshot records."""
    extract = EXTRACT[study]
    return [{"point": p.index, "seed": seed, "m": extract(p.scenario, r)} for p, seed, r in rows]


#: derivation file -> its findings
DERIVATIONS: dict[str, tuple[Finding, ...]] = {
    "riverbed-drops.md": SEED_000,
    "gupta.md": SEED_001,
    "kazmi.md": SEED_002,
    "riverbed.md": SEED_003,
    "hadi.md": SEED_004,
}

#: studies -> extra text printed after the findings (the paper's table beside ours)
SIDE_TABLES: dict[str, Callable[[View], str]] = {"gupta-study": gupta_table}


def studies() -> list[str]:
    return sorted({s for fs in DERIVATIONS.values() for f in fs for s in f.studies})


def summary(runs: Runs) -> str:
    return render_summary({name: evaluate(items, runs) for name, items in DERIVATIONS.items()})


def write_snapshot(runs: Runs, engine_version: str, path: Path | None = None) -> None:
    """Store the numbers; with the default path, also regenerate the README's summary (the
    CLI's `--write` rewrites the derivations' tables itself)."""
    if path is None:
        path = presets_dir() / SNAPSHOT
        readme = readme_path()
        if readme.is_file() and BEGIN in readme.read_text():
            readme.write_text(rewrite(readme.read_text(), summary(runs)))
    data = {"engine_version": engine_version, "runs": {k: runs[k] for k in sorted(runs)}}
    text = json.dumps(data, indent=1, sort_keys=True)
    # one run per line: a changed number is a one-line diff
    text = re.sub(
        r'\{\n\s+"m": \{([^{}]*)\},\n\s+"point": (\d+),\n\s+"seed": (\d+)\n\s+\}',
        lambda m: (
            '{"m": {'
            + " ".join(m.group(1).split())
            + '}, "point": '
            + m.group(2)
            + ', "seed": '
            + m.group(3)
            + "}"
        ),
        text,
    )
    path.write_text(text + "\n")


__all__ = [
    "BEGIN",
    "DERIVATIONS",
    "END",
    "EXTRACT",
    "SEED_NAMES",
    "SIDE_TABLES",
    "SNAPSHOT",
    "Finding",
    "Metrics",
    "Row",
    "Runs",
    "View",
    "counts",
    "evaluate",
    "gupta_table",
    "load_snapshot",
    "presets_dir",
    "readme_path",
    "records",
    "render",
    "render_summary",
    "render_text",
    "rewrite",
    "studies",
    "summary",
    "table_in",
    "write_snapshot",
]
