"""The export bundles' streaming zip (api/exports/zipstream.py): what it writes a piece at a
time is a zip that unzip and Python read whole, each member as written, the manifest last
listing each with its size and sha256; and the same pieces give the same bytes."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from api.exports.zipstream import ZipStream

pytestmark = pytest.mark.unit


def test_a_streamed_zip_reads_whole_and_is_the_same_each_time(tmp_path: Path) -> None:
    noise = os.urandom(300_000)
    outputs = []
    for _ in range(2):
        zs = ZipStream()
        pieces = []
        zs.add("a.json", b'{"a": 1}\n')
        pieces.append(zs.take())
        with zs.member("big.csv", large=True) as out:
            for i in range(50):
                out.write(b"row,%d\n" % i * 1000)
                pieces.append(zs.take())
        with zs.member("noise.bin", compress=False) as out:
            out.write(noise)
        pieces.append(zs.take())
        pieces.append(zs.finish(b'{"files": "listed"}\n'))
        outputs.append(b"".join(pieces))
        # Written as it goes: no piece holds the whole big member.
        assert max(len(p) for p in pieces) < 400_000
    assert outputs[0] == outputs[1]
    data = outputs[0]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.namelist() == ["a.json", "big.csv", "noise.bin", "manifest.json"]
        assert zf.testzip() is None
        assert zf.read("noise.bin") == noise
        assert zf.read("big.csv") == b"".join(b"row,%d\n" % i * 1000 for i in range(50))
        assert zf.getinfo("noise.bin").compress_type == zipfile.ZIP_STORED
        assert zf.getinfo("big.csv").compress_type == zipfile.ZIP_DEFLATED
        assert all(i.date_time == (2000, 1, 1, 0, 0, 0) for i in zf.infolist())
    listed = {f["name"]: f for f in zs.files}
    assert listed["noise.bin"] == {
        "name": "noise.bin",
        "bytes": len(noise),
        "sha256": hashlib.sha256(noise).hexdigest(),
    }
    if shutil.which("unzip"):
        (tmp_path / "b.zip").write_bytes(data)
        done = subprocess.run(["unzip", "-t", str(tmp_path / "b.zip")], capture_output=True)
        assert done.returncode == 0, done.stdout
