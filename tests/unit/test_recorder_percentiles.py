"""`percentiles` gives np.percentile's figures to the bit: the delay percentiles of every
Result are read with it, and every stored Result was computed by np.percentile."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.recorder import percentiles

pytestmark = pytest.mark.unit

QS = (50, 95, 99)
delays = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_subnormal=False)


def _bits(values: list[float]) -> list[str]:
    return [v.hex() for v in values]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(delays, min_size=1, max_size=300)
    | st.lists(st.sampled_from([0.01, 0.0305]), min_size=1, max_size=300)
)
def test_percentiles_match_numpy(values: list[float]) -> None:
    reservoir = array("d", values)
    want = np.percentile(np.frombuffer(reservoir), list(QS)).tolist()
    assert _bits(percentiles(reservoir, QS)) == _bits(want)
    assert reservoir.tolist() == values  # read, never reordered


@pytest.mark.parametrize("n", [1, 2, 20, 21, 100, 101, 4999])
def test_percentiles_match_numpy_at_index_edges(n: int) -> None:
    rng = np.random.default_rng(n)
    reservoir = array("d", rng.exponential(0.03, n).tolist())
    want = np.percentile(np.frombuffer(reservoir), list(QS)).tolist()
    assert _bits(percentiles(reservoir, QS)) == _bits(want)
