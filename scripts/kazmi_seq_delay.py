"""Seed 002's delay keyed by sequence number, measured: evidence for findings 002-7 and
002-10 (engine/presets/kazmi.md §5), not a metric the study stores.

The engine records a delay per packet *sent* (`flow.<id>.delay`: each transmission from its
sending to its arrival). Kazmi et al. record "the delay of packets on basis of their
sequence numbers"; ns-2 trace scripts keyed by `seq_no` take a sequence number's start at
its first sighting and overwrite its end at every receipt, so a resent segment counts from
its first sending to its last arrival, the wait for the retransmission included. This
script measures that statistic on `kazmi-study` points by watching every transmission of a
flow either arrive (`data_received`) or be dropped (`dropped`), as the trace's `r` and `d`
lines do. It patches two methods of `TcpFlow`, so it needs the pure-Python engine
(`make uncompile`, or a checkout without engine/_native).

    PYTHONPATH=. python scripts/kazmi_seq_delay.py 10,11,12,13 --seeds 1

prints, per point and flow on the path: the mean per-sequence delay and the largest mean
over 50 consecutive sequence numbers (Fig. 3's statistic), both from the first sending to
the first and to the last arrival.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field

from engine import flows
from engine.cli import _study_spec
from engine.packet import Kind, Packet
from engine.simulation import simulate
from engine.study import expand, resolve_base


@dataclass
class Seen:
    """Every transmission of one flow's data, by sequence number."""

    first_sent: dict[int, float] = field(default_factory=dict)
    first_arrival: dict[int, float] = field(default_factory=dict)
    last_arrival: dict[int, float] = field(default_factory=dict)

    def sent(self, pkt: Packet) -> None:
        at = self.first_sent.get(pkt.seq)
        if at is None or pkt.sent_at < at:
            self.first_sent[pkt.seq] = pkt.sent_at

    def delays(self, *, last: bool) -> list[float]:
        ends = self.last_arrival if last else self.first_arrival
        return [ends[s] - self.first_sent[s] for s in sorted(ends)]


SEEN: dict[str, Seen] = {}
_received = flows.TcpFlow.data_received
_dropped = flows.TcpFlow.dropped


def _data_received(self: flows.TcpFlow, pkt: Packet) -> None:
    seen = SEEN.setdefault(self.id, Seen())
    seen.sent(pkt)
    now = self.env.now
    seen.first_arrival.setdefault(pkt.seq, now)
    seen.last_arrival[pkt.seq] = now
    _received(self, pkt)


def _data_dropped(self: flows.TcpFlow, pkt: Packet) -> None:
    if pkt.kind == Kind.DATA:
        SEEN.setdefault(self.id, Seen()).sent(pkt)
    _dropped(self, pkt)


def peak50(values: list[float]) -> float:
    blocks = [values[i : i + 50] for i in range(0, len(values) - 49, 50)]
    return max(statistics.fmean(b) for b in blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("points", help="comma-separated kazmi-study point indexes")
    parser.add_argument("--seeds", default="1", help="comma-separated seeds")
    args = parser.parse_args()
    flows.TcpFlow.data_received = _data_received  # type: ignore[method-assign]
    flows.TcpFlow.dropped = _data_dropped  # type: ignore[method-assign]
    spec = _study_spec("kazmi-study")
    wanted = {int(x) for x in args.points.split(",")}
    for point in expand(spec, resolve_base(spec)):
        if point.index not in wanted:
            continue
        on_path = [f.id for f in point.scenario.flows if f.dst != "spare"]
        variant = point.parameters["flows.ftp1.tcp.variant"]
        for seed in (int(s) for s in args.seeds.split(",")):
            SEEN.clear()
            simulate(point.scenario, seed=seed)
            for fid in on_path:
                first, last = SEEN[fid].delays(last=False), SEEN[fid].delays(last=True)
                print(
                    f"point {point.index} {variant} seed {seed} {fid}: mean "
                    f"{statistics.fmean(first) * 1e3:.1f} / {statistics.fmean(last) * 1e3:.1f} ms,"
                    f" peak50 {peak50(first):.3f} / {peak50(last):.3f} s (first / last arrival)"
                )


if __name__ == "__main__":
    main()
