"""The README's curl walkthrough (seed 003's question), run verbatim
against the service as ``make run`` starts it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from servicekit import ROOT, Stack

pytestmark = pytest.mark.e2e


def walkthrough() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- walkthrough:begin -->", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    return block.split("```sh\n", 1)[1].rsplit("```", 1)[0]


def test_walkthrough_answers_t1_vs_t3_vs_window(embedded_stack: Stack, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=tmp_path,
        env={**embedded_stack.env, "TCPFR_URL": embedded_stack.base_url},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = dict(
        (m["preset"], (float(m["time"]), m["limit"]))
        for m in re.finditer(
            r"^(?P<preset>riverbed-\S+)\s+(?P<time>[\d.]+) s .* limit: (?P<limit>\w+)$",
            done.stdout,
            re.MULTILINE,
        )
    )
    assert set(rows) == {"riverbed-t1-8k", "riverbed-t3-8k", "riverbed-t1-64k"}, done.stdout
    t1_8k, t3_8k, t1_64k = rows["riverbed-t1-8k"], rows["riverbed-t3-8k"], rows["riverbed-t1-64k"]
    # The lab's lesson: the T3 barely helps with an 8 KB window; the 64 KB window does.
    assert t1_8k[1] == t3_8k[1] == "receive_window"
    assert t1_64k[1] == "link_capacity"
    assert t1_64k[0] * 3 < t3_8k[0] < t1_8k[0]
    assert "cache hit: True" in done.stdout
    assert "\nt,v\n" in done.stdout
