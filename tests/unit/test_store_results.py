"""store/results.py, the one owner of a Result's rows: a Result packed into rows reads back as
the document it was (every summary field, the series to the bit, each capture's file), and a
blob in a codec this version does not know is refused by name, not decoded as garbage."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from engine_helpers import bulk, one_link

from engine import simulate
from store import results
from store.codec import decode

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    scenario = one_link(
        flows=[bulk(nbytes=40 * 1460)],
        capture=[{"link": "wan", "direction": "both", "max_packets": 1000}],
    )
    return simulate(scenario)


def test_a_packed_result_reads_back_as_it_was(result) -> None:  # type: ignore[no-untyped-def]
    run_id = uuid.uuid4()
    row, series, captures = results.pack(result).rows(run_id)
    doc = results.document(row)
    original = result.model_dump(mode="python", exclude={"series"})
    for key in results.COLUMNS - {"series", "cancelled"}:
        assert doc[key] == original[key], key
    # A field without a column of its own (the capture summaries) is kept, in `extra`.
    assert doc["extra"]["captures"] == original["captures"]
    assert results.capture_summaries(row) == original["captures"]
    assert set(results.summary(row)) == set(results.SUMMARY_FIELDS)

    assert {s.key for s in series} == set(result.series)
    for s in series:
        assert s.run_id == run_id
        want = result.series[s.key]
        assert decode(s.t, s.codec).tolist() == want.t
        assert decode(s.v, s.codec).tolist() == want.v
        assert (s.length, s.t_start, s.t_end) == (len(want.t), want.t[0], want.t[-1])

    (capture,) = captures
    data = results.pcap(capture.codec, capture.data)
    assert data == result.pcap("wan", "both")
    assert hashlib.sha256(data).hexdigest() == capture.sha256 == result.captures[0].sha256
    assert capture.size == len(data)


def test_fresh_rows_for_each_try(result) -> None:  # type: ignore[no-untyped-def]
    """A write tried again gets new row objects holding the same packed bytes."""
    packed = results.pack(result)
    first, second = packed.rows(uuid.uuid4()), packed.rows(uuid.uuid4())
    assert first[0] is not second[0]
    assert [s.v for s in first[1]] == [s.v for s in second[1]]


def test_an_unknown_capture_codec_is_refused() -> None:
    with pytest.raises(results.UnknownCodec, match="'lz4'"):
        results.pcap("lz4", b"\x00")
