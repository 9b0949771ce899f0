"""Reading our packet captures with Debian's tshark, Wireshark's own dissectors and TCP
analysis: the judge of whether a file is what Wireshark expects. Without tshark these
tests skip; with CI=true they fail (.ci/run installs it, as it does docker-compose)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

TSHARK = shutil.which("tshark") or "/usr/bin/tshark"


def require_tshark() -> None:
    if Path(TSHARK).exists():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("tshark missing (CI=true: .ci/run installs it: apt-get install tshark)")
    pytest.skip("tshark missing (apt-get install tshark)")


def tshark(path: Path, *args: str) -> str:
    proc = subprocess.run(
        [TSHARK, "-n", "-r", str(path), *args],
        capture_output=True,
        text=True,
        timeout=300,
        # tshark reads no personal preferences from an empty HOME (a fixed dissection).
        env={**os.environ, "HOME": str(path.parent)},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def count(path: Path, display_filter: str = "") -> int:
    """Packets matching a display filter (all of them with none)."""
    args = ["-Y", display_filter] if display_filter else []
    return len(
        [
            line
            for line in tshark(path, "-T", "fields", "-e", "frame.number", *args).splitlines()
            if line.strip()
        ]
    )


def fields(
    path: Path, display_filter: str, *names: str, options: tuple[str, ...] = ()
) -> list[list[str]]:
    """The named fields of each packet matching the filter, one list per packet."""
    args = [a for name in names for a in ("-e", name)]
    out = tshark(path, *options, "-Y", display_filter, "-T", "fields", "-E", "separator=\t", *args)
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def expert_problems(path: Path) -> int:
    """Packets that Wireshark calls malformed or flags with an expert error."""
    return count(path, "_ws.malformed || _ws.expert.severity == error")
