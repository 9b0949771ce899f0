"""Sweep conclusions that don't mislead (issue 23 scope 5), on the issue's own grid: a 20 MB
transfer over a 10 Mbit/s satellite hop (300 ms each way), rcv_buf {64 KiB, 1 MB} x
limit_packets {100, 1000}, baseline 64 KiB and 100 packets.

Physics: with a 64 KiB window the flow is window-limited far below the 728 kB BDP, so no
queue ever builds and the queue's size cannot change a single packet's fate: the move
100 -> 1000 changes nothing there (0%, exactly). With a 1 MB window, slow start's bursts
overflow 100 packets while 1000 hold them; the transfer then runs near 20 MB / 9.68 Mbit/s
= 16.5 s. The conclusion must not generalise the baseline's "no change".
"""

from __future__ import annotations

import uuid

import pytest
from engine_helpers import bulk, dumbbell

from api.compare import report
from api.compare.points import Observation, PointData
from engine import simulate
from engine.study import apply_changes

pytestmark = pytest.mark.unit

WINDOWS = (65535, 1_000_000)
QUEUES = (100, 1000)


@pytest.fixture(scope="module")
def comparison():
    flows = [
        bulk(nbytes=20_000_000, rcv_buf=65535, window_scaling=True, delayed_ack={"enabled": True})
    ]
    base = dumbbell(rate=10e6, delay=0.3, limit_packets=100, flows=flows)
    points = []
    for i, (w, q) in enumerate((w, q) for w in WINDOWS for q in QUEUES):
        params = {"flows.f.tcp.rcv_buf": w, "links.wan.queue.limit_packets": q}
        summary = simulate(apply_changes(base, params)).summary()
        obs = Observation(uuid.uuid4(), None, 1, summary["flows"], summary["diagnosis"])
        points.append(PointData(i, params, (w, q) == (65535, 100), 1, observations=[obs]))
    return report.build(points, list(points[0].parameters))


def test_the_queue_move_is_typed_as_depending_on_the_window(comparison):
    found = [
        i
        for i in comparison.interactions
        if i.metric == "completion_time" and i.paths == ["links.wan.queue.limit_packets"]
    ]
    (x,) = found
    assert x.other_paths == ["flows.f.tcp.rcv_buf"] and x.baseline_level == 65535
    assert (x.move_from, x.move_to) == (100, 1000)
    at = {c.level: c for c in x.at}
    assert at[65535].pct == 0  # window-limited: the queue never fills
    assert at[1_000_000].pct < -50 and at[1_000_000].to_mean >= 20e6 * 8 / 9.68e6
    assert x.matters_at_least == 1_000_000


def test_the_conclusion_says_where_the_queue_matters(comparison):
    # Not the baseline's reading alone ("... 100 → 1000 leaves it at 191.5 s"), generalised.
    assert "1000 leaves it at" not in comparison.text
    sentence = next(s for s in comparison.conclusions if "links.wan.queue.limit_packets 100" in s)
    assert "matters only once flows.f.tcp.rcv_buf ≥ 1000000" in sentence
    assert "at the baseline's flows.f.tcp.rcv_buf = 65535" in sentence
