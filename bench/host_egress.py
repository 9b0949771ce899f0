"""Hosts as senders (issue 25.1): a 1 GB transfer over 1 Gb/s with an 80 ms round trip and
0.1% random loss, every congestion-control variant, the hosts Linux-like (`egress:
backpressure`, the default) or router-like (`egress: drop`). Prints, per variant and seed,
the packets dropped at the hosts' own interfaces (the sender's data, the receiver's ACKs),
at the router, the goodput over the whole transfer and over its second half, and the wall
time. Asserts nothing.

    .venv/bin/python bench/host_egress.py [--bytes 1e9] [--variants cubic,bbr] [--seeds 1,2,3]
                                          [--egress backpressure,drop] [--jobs 2]

Topology: s -[h1: 1 Gb/s Ethernet, 0.1 ms, the default 100-packet queue]- r1 -[wan: 1 Gb/s
Ethernet, 39.8 ms, a 1-BDP queue, Bernoulli 0.1% on data]- r2 -[h2: as h1]- d; windows of
64 MiB (window scaling), SACK on, initial window 10.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from engine import Scenario, simulate

RATE = 1e9
RTT = 0.08
BDP_PACKETS = int(RATE * RTT / 8 / 1500)
VARIANTS = ("none", "tahoe", "reno", "newreno", "sack", "vegas", "cubic", "bbr")


def scenario(variant: str, egress: str, nbytes: float, seed: int) -> dict[str, Any]:
    def eth(link_id: str, a: str, b: str, delay: float, queue: int, **extra: Any) -> dict:
        return {
            "id": link_id,
            "a": a,
            "b": b,
            "rate": RATE,
            "delay": delay,
            "encap": "ethernet",
            "queue": {"limit_packets": queue},
            **extra,
        }

    loss = {"model": "bernoulli", "rate": 0.001, "direction": "a_to_b"}
    return {
        "name": f"host-egress-{variant}-{egress}",
        "seed": seed,
        "duration": 4000.0,
        "nodes": [
            {"id": "s", "kind": "host", "egress": egress},
            {"id": "r1", "kind": "router"},
            {"id": "r2", "kind": "router"},
            {"id": "d", "kind": "host", "egress": egress},
        ],
        "links": [
            eth("h1", "s", "r1", 0.0001, 100),
            eth("wan", "r1", "r2", RTT / 2 - 0.0002, BDP_PACKETS, loss=loss),
            eth("h2", "r2", "d", 0.0001, 100),
        ],
        "flows": [
            {
                "id": "f",
                "kind": "tcp_bulk",
                "src": "s",
                "dst": "d",
                "bytes": int(nbytes),
                "tcp": {
                    "variant": variant,
                    "sack": variant != "none",
                    "rcv_buf": 64 << 20,
                    "snd_buf": 64 << 20,
                    "window_scaling": True,
                    "initial_cwnd": 10,
                },
            }
        ],
    }


def run(variant: str, egress: str, nbytes: float, seed: int) -> str:
    wall = time.perf_counter()
    result = simulate(Scenario.model_validate(scenario(variant, egress, nbytes, seed)))
    wall = time.perf_counter() - wall
    flow = result.flows["f"]
    links = result.links
    own = links["h1:s>r1"].drops + links["h2:d>r2"].drops
    router = links["wan:r1>r2"].drops
    done = flow.completion_time or result.sim_time
    series = result.series["flow.f.goodput_bps"]
    half = [v for t, v in zip(series.t, series.v, strict=True) if done / 2 < t <= done]
    second = sum(half) / len(half) if half else 0.0
    return (
        f"{variant:8} {egress:12} {seed:4} {own:10,} {router:8,} {flow.retransmissions:8,} "
        f"{flow.goodput_bps / 1e6:9.1f} {second / 1e6:9.1f} {done:9.1f} {wall:7.0f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bytes", type=float, default=1e9)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--egress", default="backpressure")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    cases = [
        (variant, egress, args.bytes, int(seed))
        for variant in args.variants.split(",")
        for egress in args.egress.split(",")
        for seed in args.seeds.split(",")
    ]
    print(
        f"{'variant':8} {'egress':12} {'seed':>4} {'host drops':>10} {'router':>8} "
        f"{'retx':>8} {'Mb/s':>9} {'2nd half':>9} {'time s':>9} {'wall s':>7}",
        flush=True,
    )
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for line in pool.map(run, *zip(*cases, strict=True)):
            print(line, flush=True)


if __name__ == "__main__":
    main()
