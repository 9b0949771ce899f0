"""Does a C++ simulator keep its cost per event flat from 1 to 1,000 flows? ns-3 and the
engine on the scale cases' flows dumbbell (issue 11: "1,000 flows run at >= 0.67x the
events/s of 1 flow"). Prints one table; asserts nothing.

ns-3 is not a project dependency (its import alone takes ~8 s): install it in a venv of
its own and pass that venv's interpreter, e.g.

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3
    .venv/bin/python bench/ns3_flows_check.py --ns3-python /tmp/ns3venv/bin/python [--short]

Without --ns3-python only the engine's rows are printed.

The case is engine_scale.py's `dumbbell()`: N senders, each on its own 10 Gb/s, 0.1 ms
point-to-point link into router ra; ra-rb 100 Mb/s, 20 ms, 1000-packet DropTail; rb-rcv
10 Gb/s, 0.1 ms; N NewReno bulk flows s_i -> rcv from 0 s for D s (20, or 5 with --short),
no SACK, no timestamps, 64 KB windows without scaling, MSS 1460, an ACK per 2 segments,
initial window 1 (the engine's default, set in ns-3 too). ns-3's traffic-control layer is
removed from every device (the default FqCoDel queue disc would sit in front of the
1000-packet DropTail device queue), and its point-to-point header is 2 bytes where the
engine's PPP framing is 8, so goodputs differ slightly.

Measured per point: events (ns-3: `Simulator::GetEventCount()` after `Run()`; the engine:
`Result.events`, the SimPy events it processed), wall and CPU seconds (ns-3: `Simulator::
Run()` only, not the import, topology or routing set-up, whose time and the process's peak
RSS are printed as well; the engine: the whole `simulate()`), events per CPU and per wall
second, each over the same simulator's 1-flow figure, the total goodput (bytes every
sink received x 8 / D), and CPU microseconds per delivered 1460-byte segment (us/seg: the
two simulators count events at different grains, ns-3 ~5.7 per engine event here, so only
this column compares them with each other). Each point is run --repeats times (a fresh ns-3 process each time)
and the smallest wall and the smallest CPU time are kept: the machine may be shared, and
other work only ever adds time.

ns-3 runs in three set-ups that simulate the same packets (the same event count and
goodput at every N), to tell the cost of per-flow state from ns-3's own scans over every
interface, route or socket of a node:

- `stock`: InternetStackHelper's defaults and Ipv4GlobalRoutingHelper, as an ns-3 user
  writes it. Per packet, ns-3 then walks lists whose length is N: at ra the weak end-system
  check of whether a packet is for the node itself (every address of every interface,
  `Ipv4L3Protocol::IsDestinationAddress`), the static routing table (one route per
  interface) and the global routing table (one route per link, at every node); at rcv the
  socket demultiplexer (`Ipv4EndPointDemux::Lookup`, every connection).
- `strong-es`: the same with `ns3::Ipv4::StrongEndSystemModel` (only the incoming
  interface's addresses are checked): removes the first scan.
- `hashed`: strong-es plus a routing protocol of ours (FLAT below, one hash lookup per
  packet) ahead of ns-3's in every node's list routing, with the routes global routing
  would find: removes the routing scans. The demultiplexer's scan at rcv remains (ns-3
  has no switch for it), and so do ra's walks of its protocol-handler lists (two per
  device) in `Node::ReceiveFromDevice` and `TrafficControlLayer::Receive`.

Measured 2026-11-23 on the shared 2-core machine (ns3 3.44 from PyPI, engine pure Python,
20 s, best of 3), events per CPU second over 1 flow's at 10 / 100 / 1000 flows: engine
0.85 / 0.67 / 0.39 (508k ev/s at 1 flow); ns-3 stock 0.79 / 0.41 / 0.07 (881k; 50 s of
Run() at 1000 flows); strong-es 0.97 / 0.56 / 0.14; hashed 0.92 / 0.66 / 0.25. CPU per
delivered segment at 1000 flows: engine 29 us, ns-3 305 / 152 / 79 us (at 1 flow 9 and
29-32 us). ns-3's set-up of 1000 senders takes 2.1-2.4 s and its process 745 MB RSS, of
which ~640 MB is the import itself: 1000 flows are practical.

Callgrind (valgrind 3.19, --cache-sim=yes, LL set to 2 MiB, 16-way, as this machine's L2;
instrumentation only inside Run(); hashed, 5 s): from 1 to 1000 flows ns-3 goes from 8.9k
to 28.2k instructions and from 0.43 to 16.3 data LL misses per event. 58% of the
1000-flow instructions are the remaining scans, which hit in cache; without them 10-12k
instructions per event are left (8.7k at 1 flow) and the misses are the growth. The scans
are 35-40% of Run()'s perf samples, so ns-3 without any scan would run at about 0.4x of
its 1-flow events/s (an estimate, not a run): where the engine is now.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import time
from typing import Any

from engine_scale import flows_dumbbell  # beside this file: the flows curve's case

from engine import Scenario, simulate

FLOWS = (1, 10, 100, 1000)
MODES = ("stock", "strong-es", "hashed")
MSS = 1460

# A routing protocol whose per-packet cost does not grow with the node's interfaces or
# routes: a hash map from destination address to a prepared route.
FLAT = r"""
#include <unordered_map>
namespace tcpfr_flat {
using namespace ns3;
class FlatRouting : public Ipv4RoutingProtocol {
  public:
    void Add(Ipv4Address dest, uint32_t iface, Ipv4Address gateway) {
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetDestination(dest);
        r->SetGateway(gateway);
        r->SetOutputDevice(m_ipv4->GetNetDevice(iface));
        r->SetSource(m_ipv4->GetAddress(iface, 0).GetLocal());
        m_routes[dest.Get()] = r;
    }
    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header& h, Ptr<NetDevice>,
                               Socket::SocketErrno& err) override {
        auto it = m_routes.find(h.GetDestination().Get());
        if (it == m_routes.end()) { err = Socket::ERROR_NOROUTETOHOST; return nullptr; }
        err = Socket::ERROR_NOTERROR;
        return it->second;
    }
    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& h, Ptr<const NetDevice>,
                    const UnicastForwardCallback& ucb, const MulticastForwardCallback&,
                    const LocalDeliverCallback&, const ErrorCallback&) override {
        // Local delivery is decided by Ipv4ListRouting before any protocol is asked.
        auto it = m_routes.find(h.GetDestination().Get());
        if (it == m_routes.end()) return false;
        ucb(it->second, p, h);
        return true;
    }
    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}
  private:
    Ptr<Ipv4> m_ipv4;
    std::unordered_map<uint32_t, Ptr<Ipv4Route>> m_routes;
};
Ptr<FlatRouting> Install(Ptr<Node> node) {
    Ptr<FlatRouting> flat = CreateObject<FlatRouting>();
    Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
    DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol())->AddRoutingProtocol(flat, 100);
    return flat;
}
}
"""

# argv: flows, duration, mode, FLAT, then optionally the TCP socket type, SACK (0/1), the
# window in bytes (scaling when over 65535) and the bottleneck's rate: the flows case's by
# default, the 1 Gb/s CUBIC scale cases otherwise (bench/ns3_anchor.py). Prints one JSON line.
NS3_SCRIPT = """
import json, resource, sys, time
from ns import ns
n, duration, mode = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
socket, sack, window, rate = (sys.argv[5:9] + ["TcpNewReno", "0", "65535", "100Mbps"][len(sys.argv[5:9]):])
window = int(window)
t0 = time.perf_counter()
for key, value in (
    ("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::" + socket)),
    ("ns3::TcpSocketBase::Sack", ns.BooleanValue(sack == "1")),
    ("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False)),
    ("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(window > 65535)),
    ("ns3::TcpSocket::SndBufSize", ns.UintegerValue(window)),
    ("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(window)),
    ("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1460)),
    ("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2)),
    ("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(1)),
    ("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(mode != "stock")),
):
    ns.Config.SetDefault(key, value)
routers = ns.NodeContainer()
routers.Create(2)
rcv = ns.NodeContainer()
rcv.Create(1)
senders = ns.NodeContainer()
senders.Create(n)
ns.InternetStackHelper().Install(ns.NodeContainer(routers, rcv, senders))

def p2p(rate, delay):
    helper = ns.PointToPointHelper()
    helper.SetDeviceAttribute("DataRate", ns.StringValue(rate))
    helper.SetChannelAttribute("Delay", ns.StringValue(delay))
    helper.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue("1000p"))
    return helper

ip = ns.Ipv4AddressHelper()
tch = ns.TrafficControlHelper()

def assign(devices, i):
    # a /30 per link: 10.x.y.z with room for 2^20 links
    ip.SetBase(ns.Ipv4Address(f"10.{i >> 14}.{(i >> 6) & 255}.{(i & 63) << 2}"),
               ns.Ipv4Mask("255.255.255.252"))
    ifaces = ip.Assign(devices)
    tch.Uninstall(devices)  # no queue disc: the device's DropTail queue is the only one
    return ifaces

# Interface numbers (0 is the loopback): ra 1 wan, 2 + i to s_i; rb 1 wan, 2 rcv; hosts 1.
wan_devices = p2p(rate, "20ms").Install(routers.Get(0), routers.Get(1))
wan = assign(wan_devices, 0)
fast = p2p("10Gbps", "0.1ms")
last = assign(fast.Install(routers.Get(1), rcv.Get(0)), 1)
access = [assign(fast.Install(senders.Get(i), routers.Get(0)), 2 + i) for i in range(n)]
dest = last.GetAddress(1)
if mode == "hashed":
    ns.cppyy.cppdef(sys.argv[4])
    flat = ns.cppyy.gbl.tcpfr_flat
    ra, rb, sink_node = (flat.Install(node) for node in (routers.Get(0), routers.Get(1), rcv.Get(0)))
    ra.Add(dest, 1, wan.GetAddress(1))
    rb.Add(dest, 2, dest)
    for i, link in enumerate(access):
        s = link.GetAddress(0)
        flat.Install(senders.Get(i)).Add(dest, 1, link.GetAddress(1))
        ra.Add(s, 2 + i, s)
        rb.Add(s, 1, wan.GetAddress(0))
        sink_node.Add(s, 1, last.GetAddress(0))
# Global routing in every mode (the hashed routes come first and answer every lookup).
ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
any_port = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 9).ConvertTo()
sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_port).Install(rcv.Get(0))
bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(dest, 9).ConvertTo())
bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
apps = bulk.Install(senders)
apps.Start(ns.Seconds(0.0))
apps.Stop(ns.Seconds(duration))
ns.Simulator.Stop(ns.Seconds(duration))
setup = time.perf_counter() - t0
wall0, cpu0 = time.perf_counter(), time.process_time()
ns.Simulator.Run()
wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
rx = ns.DynamicCast[ns.PacketSink](sink.Get(0)).GetTotalRx()
drops = ns.DynamicCast[ns.PointToPointNetDevice](wan_devices.Get(0)).GetQueue().GetTotalDroppedPackets()
print(json.dumps({
    "events": ns.Simulator.GetEventCount(), "wall": wall, "cpu": cpu, "drops": drops,
    "goodput": rx * 8 / duration, "setup": setup,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}), flush=True)
ns.Simulator.Destroy()
"""


def ns3_point(python: str, flows: int, duration: float, mode: str, *tcp: str) -> dict[str, Any]:
    """One ns-3 run in a process of its own; `tcp`: socket type, SACK, window, rate."""
    out = subprocess.run(
        [python, "-c", NS3_SCRIPT, str(flows), str(duration), mode, FLAT, *tcp],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def engine_point(flows: int, duration: float) -> dict[str, Any]:
    """One engine run: the whole simulate(), as the scale bench times it."""
    scenario = Scenario.model_validate(flows_dumbbell(flows, duration))
    gc.collect()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = simulate(scenario)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    delivered = sum(flow.bytes_delivered for flow in result.flows.values())
    return {
        "events": result.events,
        "wall": wall,
        "cpu": cpu,
        "goodput": delivered * 8 / duration,
    }


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The smallest wall and CPU times of the repeats; the simulated figures must agree."""
    first = runs[0]
    for run in runs[1:]:
        if (run["events"], run["goodput"]) != (first["events"], first["goodput"]):
            raise RuntimeError(f"repeats of one point differ: {first} vs {run}")
    out = dict(first)
    for key in ("wall", "cpu", "setup", "rss_mb"):
        if key in first:
            out[key] = min(run[key] for run in runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns3-python", help="an interpreter that can `from ns import ns`")
    parser.add_argument("--short", action="store_true", help="5 simulated seconds, not 20")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--flows", default=",".join(map(str, FLOWS)))
    parser.add_argument(
        "--modes", default=",".join(MODES), help="ns-3 set-ups: " + ", ".join(MODES)
    )
    args = parser.parse_args()
    duration = 5.0 if args.short else 20.0
    flows = [int(n) for n in args.flows.split(",")]
    sims: list[tuple[str, Any]] = [("engine", lambda n: engine_point(n, duration))]
    if args.ns3_python:
        for mode in args.modes.split(","):
            sims.append(
                (f"ns-3 {mode}", lambda n, m=mode: ns3_point(args.ns3_python, n, duration, m))
            )
    print(
        f"NewReno dumbbell, 100 Mb/s bottleneck, {duration:g} s simulated; best of "
        f"{args.repeats} (smallest wall, smallest CPU); ratio = events/s over the same "
        "simulator's 1 flow (first point)"
    )
    print(
        f"  {'simulator':<16} {'flows':>5} {'events':>10} {'wall s':>7} {'cpu s':>7} "
        f"{'ev/cpu-s':>9} {'ratio':>5} {'ev/wall-s':>9} {'ratio':>5} {'Mb/s':>6} "
        f"{'us/seg':>6}  set-up"
    )
    for name, point in sims:
        base: tuple[float, float] | None = None
        for n in flows:
            row = best([point(n) for _ in range(args.repeats)])
            rates = (row["events"] / row["cpu"], row["events"] / row["wall"])
            base = base or rates
            segments = row["goodput"] * duration / 8 / MSS
            setup = f"  {row['setup']:.1f} s, {row['rss_mb']:.0f} MB" if "setup" in row else ""
            print(
                f"  {name:<16} {n:>5} {row['events']:>10,} {row['wall']:>7.2f} "
                f"{row['cpu']:>7.2f} {rates[0]:>9,.0f} {rates[0] / base[0]:>5.2f} "
                f"{rates[1]:>9,.0f} {rates[1] / base[1]:>5.2f} {row['goodput'] / 1e6:>6.1f}"
                f" {row['cpu'] / segments * 1e6:>6.1f}" + setup,
                flush=True,
            )


if __name__ == "__main__":
    main()
