"""A zip written as it is sent: members one after another, each written in pieces, and
whatever has been written so far taken away (`take`) to go out on the response. Nothing but
the piece being written is held, whatever the size of the bundle.

The output is not seekable, so each member's sizes and CRC follow its data (a data
descriptor, which every unzip reads), and `manifest.json`, which lists every member with
its size and sha256, comes last. Members carry a fixed time, not the export's: the same
data gives the same bytes, which is what lets an export carry a strong ETag.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

_ZIP_TIME = (2000, 1, 1, 0, 0, 0)


class _Pieces:
    """The zip's output: written bytes wait here until taken."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.pieces.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class Member:
    """A member being written: counts and hashes what goes in (for the manifest)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.size = 0
        self._sha = hashlib.sha256()
        self.closed = False  # Arrow's writers check it before writing

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._raw.write(view)
        self._sha.update(view)
        self.size += len(view)
        return len(view)

    def flush(self) -> None:
        pass

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()


class ZipStream:
    def __init__(self) -> None:
        self._out = _Pieces()
        self._zip = zipfile.ZipFile(self._out, "w")
        self.files: list[dict[str, Any]] = []  # what the manifest lists, in order

    @contextmanager
    def member(self, name: str, *, compress: bool = True, large: bool = False) -> Iterator[Member]:
        """A member to write in pieces. Compressed files (Parquet) are stored as they are;
        the rest deflated at the fastest level (level 6 took four times as long for 5%
        less). `large`: may pass 4 GiB (ZIP64)."""
        with self._open(name, compress, large) as raw:
            member = Member(raw)
            yield member
        self.files.append({"name": name, "bytes": member.size, "sha256": member.sha256})

    def _open(self, name: str, compress: bool, large: bool) -> IO[bytes]:
        info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        # ZipFile.open takes a ZipInfo's level from it (Python 3.11 names it _compresslevel,
        # 3.13 compress_level); writestr's `compresslevel` does the same.
        level = "compress_level" if hasattr(info, "compress_level") else "_compresslevel"
        setattr(info, level, 1 if compress else None)
        return self._zip.open(info, "w", force_zip64=large)

    def add(self, name: str, data: bytes) -> None:
        """A whole member at once."""
        with self.member(name) as member:
            member.write(data)

    def take(self) -> bytes:
        """What has been written since the last take."""
        data = b"".join(self._out.pieces)
        self._out.pieces.clear()
        return data

    def finish(self, manifest_json: bytes) -> bytes:
        """manifest.json, then the central directory; the last bytes of the zip."""
        with self._open("manifest.json", compress=True, large=False) as raw:
            raw.write(manifest_json)
        self._zip.close()
        return self.take()
