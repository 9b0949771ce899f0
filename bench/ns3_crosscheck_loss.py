"""Cross-check against ns-3 under heavy random loss (issue 12): one bulk TCP flow over a
10 Mbit/s point-to-point link, 50 ms each way, 5% of data packets lost, delayed ACKs
(count 2), MSS 1460, initial window 1, a 1 s minimum RTO; goodput over 200 s per seed.

ns-3 is not a project dependency (its import alone takes ~15 s): install it in a venv of
its own and pass that venv's interpreter, e.g.

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3
    .venv/bin/python bench/ns3_crosscheck_loss.py --ns3-python /tmp/ns3venv/bin/python

Without --ns3-python only the engine's rows are printed. Prints figures; asserts nothing.

Measured 2026-11-23 (ns3 3.44 from PyPI, 3 seeds), kbit/s: engine newreno 275, vegas linux
257, ns3 289, classic 469; ns-3 TcpNewReno 151, TcpVegas 144, TcpLinuxReno 324 with ns-3's
default timestamps option, and about 271 (NewReno) and 280 (Vegas) without it. Vegas over
NewReno is now what ns-3 has (0.93-1.05 against 0.95; classic was 1.70). What is left is
ns-3's timestamps option, which the engine does not model and which halves ns-3's goodput
at this loss rate. Why is not found yet: feeding the engine's RTO estimator an RTT sample
on every ACK (as timestamps allow) leaves its goodput where it is (276 kbit/s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

from engine import Scenario, simulate

DURATION = 200.0
LOSS = 0.05

NS3_SCRIPT = """
import json, sys, time
from ns import ns
variant, seed, duration, loss = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ns.RngSeedManager.SetSeed(seed)
ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(sys.argv[5] == "1"))
ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::" + variant))
ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1460))
ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(1))
ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(10000000))
ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(10000000))
nodes = ns.NodeContainer()
nodes.Create(2)
p2p = ns.PointToPointHelper()
p2p.SetDeviceAttribute("DataRate", ns.StringValue("10Mbps"))
p2p.SetChannelAttribute("Delay", ns.StringValue("50ms"))
p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize("10000p")))
devices = p2p.Install(nodes)
em = ns.CreateObject[ns.RateErrorModel]()
em.SetAttribute("ErrorRate", ns.DoubleValue(loss))
em.SetAttribute("ErrorUnit", ns.StringValue("ERROR_UNIT_PACKET"))
devices.Get(1).SetAttribute("ReceiveErrorModel", ns.PointerValue(em))
ns.InternetStackHelper().Install(nodes)
addr = ns.Ipv4AddressHelper()
addr.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
ifaces = addr.Assign(devices)
sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                           ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 9).ConvertTo())
sink_app = sink.Install(nodes.Get(1))
bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                         ns.InetSocketAddress(ifaces.GetAddress(1), 9).ConvertTo())
bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
bulk.Install(nodes.Get(0)).Start(ns.Seconds(0.0))
ns.Simulator.Stop(ns.Seconds(duration))
wall0, cpu0 = time.perf_counter(), time.process_time()
ns.Simulator.Run()
wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
print(json.dumps({
    "goodput": ns.DynamicCast[ns.PacketSink](sink_app.Get(0)).GetTotalRx() * 8 / duration,
    "wall": wall, "cpu": cpu, "events": ns.Simulator.GetEventCount(),
}))
ns.Simulator.Destroy()
"""

# (row name, engine tcp settings, ns-3 TypeId)
ROWS = [
    ("newreno", {"variant": "newreno"}, "TcpNewReno"),
    ("vegas linux", {"variant": "vegas", "vegas_loss": "linux"}, "TcpVegas"),
    ("vegas ns3", {"variant": "vegas", "vegas_loss": "ns3"}, "TcpVegas"),
    ("vegas classic", {"variant": "vegas", "vegas_loss": "classic"}, "TcpVegas"),
    ("(ns-3 TcpLinuxReno)", None, "TcpLinuxReno"),
]


def scenario(tcp: dict, seed: int) -> dict:
    """The engine's side of the case, `tcp` over the common settings."""
    return {
        "name": "ns3-crosscheck",
        "seed": seed,
        "duration": DURATION,
        "nodes": [{"id": "a", "kind": "host"}, {"id": "b", "kind": "host"}],
        "links": [
            {
                "id": "l",
                "a": "a",
                "b": "b",
                "rate": "10Mbps",
                "delay": "50ms",
                "encap": "ppp",
                "queue": {"limit_packets": 10000},
                "loss": {"model": "bernoulli", "rate": LOSS, "direction": "a_to_b"},
            }
        ],
        "flows": [
            {
                "id": "f",
                "kind": "tcp_bulk",
                "src": "a",
                "dst": "b",
                "tcp": {
                    "mss": 1460,
                    "initial_cwnd": 1,
                    "rcv_buf": 10_000_000,
                    "window_scaling": True,
                    "sack": True,
                    "min_rto": "1s",
                    **tcp,
                },
            }
        ],
    }


def engine_bps(tcp: dict, seed: int) -> float:
    return simulate(Scenario.model_validate(scenario(tcp, seed))).flows["f"].goodput_bps


def ns3_run(python: str, type_id: str, seed: int, timestamps: bool) -> dict:
    """One ns-3 run: goodput (bit/s), events, and Run()'s wall and CPU seconds."""
    out = subprocess.run(
        [
            python,
            "-c",
            NS3_SCRIPT,
            type_id,
            str(seed),
            str(DURATION),
            str(LOSS),
            "1" if timestamps else "0",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def ns3_bps(python: str, type_id: str, seed: int, timestamps: bool) -> float:
    return float(ns3_run(python, type_id, seed, timestamps)["goodput"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns3-python", help="an interpreter that can `from ns import ns`")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    seeds = range(1, args.seeds + 1)
    ns3_cache: dict[tuple[str, bool], float] = {}
    print(
        f"goodput, kbit/s, mean of {args.seeds} seeds; p = {LOSS:.0%}, 10 Mb/s, RTT 100 ms;"
        " ns-3 with its default timestamps option, then without"
    )
    for name, tcp, type_id in ROWS:
        engine = (
            f"{statistics.mean(engine_bps(tcp, s) for s in seeds) / 1e3:8.1f}"
            if tcp is not None
            else "       -"
        )
        ns3 = ""
        if args.ns3_python:
            for ts in (True, False):
                if (type_id, ts) not in ns3_cache:
                    ns3_cache[type_id, ts] = statistics.mean(
                        ns3_bps(args.ns3_python, type_id, s, ts) for s in seeds
                    )
                ns3 += f" {ns3_cache[type_id, ts] / 1e3:8.1f}"
        print(f"  {name:20s} engine {engine}   ns-3 {type_id:13s}{ns3}")


if __name__ == "__main__":
    main()
