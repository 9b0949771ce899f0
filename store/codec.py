"""The time-series codec: a series is two float64 arrays, each packed into a tagged blob.

The first byte of a blob says how the rest is packed:

- ``0`` raw little-endian float64;
- ``1`` byte-shuffled (all first bytes, then all second bytes, ...) and deflated. Sampled
  clocks and step-like values (cwnd, queue lengths) share most of their bytes, so this is
  tens of times smaller, for a decode of about a millisecond per 100,000 samples.

The writer picks shuffled deflate only where it saves at least a quarter, so noisy values
stay raw and cost nothing to decode (figures: ``bench/series_bench.py``).
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

#: The ``codec`` column's value for rows written by this module.
CODEC = "tagged-f8"

RAW, SHUFFLED_DEFLATE = 0, 1
_LE = np.dtype("<f8")


def encode(values: npt.ArrayLike, *, method: int | None = None) -> bytes:
    """Pack values; ``method`` forces RAW or SHUFFLED_DEFLATE (the default picks)."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.float64), dtype=_LE)
    raw = arr.tobytes()
    if method == RAW:
        return bytes([RAW]) + raw
    packed = zlib.compress(arr.view(np.uint8).reshape(-1, 8).T.tobytes(), 1)
    if method == SHUFFLED_DEFLATE or len(packed) <= 0.75 * len(raw):
        return bytes([SHUFFLED_DEFLATE]) + packed
    return bytes([RAW]) + raw


def decode(blob: bytes, codec: str = CODEC) -> npt.NDArray[np.float64]:
    if codec != CODEC:
        raise ValueError(f"unknown series codec {codec!r}")
    tag, body = blob[0], memoryview(blob)[1:]
    if tag == RAW:
        # After the tag byte the floats are misaligned: copy them into an aligned array
        # (native code such as tsdownsample refuses misaligned input).
        return np.frombuffer(body, dtype=_LE).astype(np.float64, copy=True)
    if tag == SHUFFLED_DEFLATE:
        shuffled = np.frombuffer(zlib.decompress(body), dtype=np.uint8)
        return shuffled.reshape(8, -1).T.copy().view(_LE).reshape(-1).astype(np.float64, copy=False)
    raise ValueError(f"unknown series blob tag {tag}")
