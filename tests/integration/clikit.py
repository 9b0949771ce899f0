"""The `tcpfr` command as a user types it, against a test stack, and the reading of the
export bundles it downloads."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

TCPFR = Path(sys.executable).with_name("tcpfr")  # the console script `make install` puts there


def cli_env(stack_url: str, key: str | None = None) -> dict[str, str]:
    assert TCPFR.exists(), f"{TCPFR} missing: `make install` installs the tcpfr command"
    env = {**os.environ, "TCPFR_URL": stack_url}
    env.pop("TCPFR_API_KEY", None)
    if key is not None:
        env["TCPFR_API_KEY"] = key
    return env


def tcpfr(
    stack_url: str, *args: str, timeout: float = 180, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TCPFR), *args],
        env=cli_env(stack_url, key),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_bundle(data: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and the files of a bundle, each file checked against its sha256."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    listed = {f["name"]: f for f in manifest["files"]}
    assert set(listed) == set(files)
    for name, body in files.items():
        assert listed[name]["sha256"] == hashlib.sha256(body).hexdigest(), name
        assert listed[name]["bytes"] == len(body)
    return manifest, files


def without_wall_time(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "wall_time"}
