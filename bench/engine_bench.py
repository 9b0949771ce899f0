"""Engine benchmark: simulated data packets per wall second, events per second, wall time
and peak traced memory, for the Riverbed T1/64K preset and a lossy unlimited bulk flow.

    .venv/bin/python bench/engine_bench.py [--repeat N]

Prints figures; asserts nothing about time (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from engine import Scenario, simulate
from engine.presets import load_preset

LOSSY_BULK = {
    "name": "bench-lossy-unlimited",
    "duration": "120s",
    "nodes": [
        {"id": "h1", "kind": "host"},
        {"id": "r1", "kind": "router"},
        {"id": "r2", "kind": "router"},
        {"id": "h2", "kind": "host"},
    ],
    "links": [
        {"id": "l1", "a": "h1", "b": "r1", "rate": "100BaseT", "delay": "0.1ms"},
        {
            "id": "wan",
            "a": "r1",
            "b": "r2",
            "rate": "10Mbps",
            "delay": "20ms",
            "encap": "ppp",
            "queue": {"limit_packets": 50},
            "loss": {"model": "bernoulli", "rate": 0.01, "direction": "a_to_b"},
        },
        {"id": "l2", "a": "r2", "b": "h2", "rate": "100BaseT", "delay": "0.1ms"},
    ],
    "flows": [
        {
            "id": "bulk",
            "kind": "tcp_bulk",
            "src": "h1",
            "dst": "h2",
            "tcp": {"variant": "newreno", "rcv_buf": "1MB", "window_scaling": True},
        }
    ],
}


def fr_sack() -> Scenario:
    """riverbed-t1-64k carried by a policed PVC (CIR 1 Mbit/s, Be 256 kbit) with SACK."""
    data = load_preset("riverbed-t1-64k").model_dump(mode="json")
    data["name"] = "bench-fr-policed-sack"
    data["frame_relay"] = {
        "pvcs": [
            {
                "id": "pvc1",
                "dlci": 100,
                "src": "branch",
                "dst": "dc",
                "cir": 1_000_000,
                "bc": 1_000_000,
                "be": 256_000,
            }
        ]
    }
    data["flows"][0]["tcp"].update(variant="sack", sack=True)
    return Scenario.model_validate(data)


def cases() -> list[tuple[str, Scenario]]:
    return [
        ("riverbed-t1-64k", load_preset("riverbed-t1-64k")),
        ("lossy-unlimited-newreno", Scenario.model_validate(LOSSY_BULK)),
        ("fr-policed-sack", fr_sack()),
    ]


def measure(name: str, scenario: Scenario, repeat: int) -> None:
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = simulate(scenario)
        wall = time.perf_counter() - t0
        if best is None or wall < best[0]:
            best = (wall, result)
    wall, result = best
    data_packets = sum(
        getattr(f, "segments_sent", 0) or getattr(f, "packets_sent", 0)
        for f in result.flows.values()
    )
    tracemalloc.start()
    simulate(scenario)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{name:<26} wall {wall:6.3f} s   data packets {data_packets:>8,}   "
        f"{data_packets / wall:>9,.0f} pkt/s   events {result.events:>9,}   "
        f"{result.events / wall:>10,.0f} ev/s   sim {result.sim_time:8.1f} s   "
        f"peak traced memory {peak / 2**20:6.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="best of N wall times")
    args = parser.parse_args()
    for name, scenario in cases():
        measure(name, scenario, args.repeat)


if __name__ == "__main__":
    main()
