"""What the `tcpfr` commands share: exit codes, bad input, JSON and progress output, and
reading a scenario or a request from a file (``client.cli`` and ``client.advise_cli``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

OK, FAILED, BAD_INPUT, UNREACHABLE = 0, 1, 2, 3


class BadInput(Exception):
    """Something wrong with what was given on the command line (exit 2)."""


# --- output -------------------------------------------------------------------------------


def print_json(doc: Any, out: TextIO = sys.stdout) -> None:
    if hasattr(doc, "model_dump"):
        doc = doc.model_dump(mode="json")
    json.dump(doc, out, indent=2)
    out.write("\n")


class ProgressDisplay:
    """A bar redrawn in place on a terminal; when piped, a plain line per status change
    and per tenth of the way."""

    def __init__(self, label: str, stream: TextIO = sys.stderr) -> None:
        self.label, self.stream = label, stream
        self.tty = stream.isatty()
        self.last: tuple[str, int] | None = None

    def __call__(self, fraction: float, status: str) -> None:
        pct = int(max(0.0, min(fraction, 1.0)) * 100)
        if self.tty:
            filled = pct * 30 // 100
            bar = "#" * filled + "-" * (30 - filled)
            self.stream.write(f"\r{self.label} [{bar}] {pct:3d}% {status:<10}")
            if status in ("succeeded", "failed", "cancelled", "partial"):
                self.stream.write("\n")
        else:
            step = (status, pct // 10)
            if step == self.last:
                return
            self.last = step
            self.stream.write(f"{self.label}: {status} {pct}%\n")
        self.stream.flush()


def fmt(x: Any, unit: str = "", digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}{unit}"
    return f"{x:,}{unit}"


# --- input --------------------------------------------------------------------------------


def _looks_like_file(target: str) -> bool:
    return Path(target).is_file() or os.sep in target or target.endswith((".yaml", ".yml", ".json"))


def load_document(path: str) -> Any:
    """A YAML or JSON file (JSON is YAML)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"{path} is not YAML or JSON: {exc}") from exc


def run_body(target: str, seed: int | None, *, refresh: bool = False) -> dict[str, Any]:
    """A preset name, a scenario file, or a whole `POST /v1/runs` body in a file (an export
    bundle's request.json)."""
    if not _looks_like_file(target):
        body: dict[str, Any] = {"preset": target}
    else:
        doc = load_document(target)
        if not isinstance(doc, dict):
            raise BadInput(f"{target}: expected a scenario (a mapping), got {type(doc).__name__}")
        is_request = any(k in doc for k in ("scenario", "scenario_id", "preset"))
        body = dict(doc) if is_request else {"scenario": doc}
    if seed is not None:
        body["seed"] = seed
    if refresh:
        body["cache"] = "refresh"
    return body
