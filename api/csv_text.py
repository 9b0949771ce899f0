"""CSV bodies for every `text/csv` answer (series, comparison tables): RFC 4180 quoting by
the standard library's csv writer, "\n" line ends, empty cells for missing values, floats
as their shortest round-tripping form (repr), booleans as JSON spells them."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """One value as its CSV text (before quoting)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def write(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A header line, then a line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([cell(v) for v in row] for row in rows)
    return out.getvalue()
