"""Engine scale benchmark: how the cost of a run grows with the window, the number of
flows, the link rate and the size of a scenario (issue 11). Prints curves; asserts nothing.

    .venv/bin/python bench/engine_scale.py [--long] [--only window,flows,rate,validate]

Every simulated row is one run on this machine, printed as events, wall seconds, CPU
seconds and events per wall second; wall time is what a user waits, CPU time is less
disturbed by other work on a shared machine. The scenarios are built here: a dumbbell
whose senders reach router `ra` over 10 Gb/s links, a `wan` bottleneck (20 ms one way,
1000-packet DropTail queue, PPP framing) to `rb`, then the receiver. With `--long` the
rows are those of the scale cases users bring: 10 s at 1 Gb/s, 20 s for the flows, up to
10 Gb/s; the default keeps the whole benchmark to a few minutes.

- window: CUBIC at 1 Gb/s, window (rcv_buf = snd_buf, window scaling) 64 KB to 16 MiB,
  SACK off and on; the last column is SACK's events/s over no SACK's.
- flows: 1 to 1000 NewReno flows (64 KB windows) sharing a 100 Mb/s bottleneck; the last
  column is events/s over one flow's. A row shorter than 3 s is run again until 3 s have
  passed (nine runs at most) and its figures are the medians.
- rate: one CUBIC + SACK flow with a 16 MiB window, bottleneck 10 Mb/s to 1 (10) Gb/s.
- pacing: one SACK flow with a 16 MiB window at 10 Mb/s to 1 Gb/s: CUBIC, CUBIC paced
  (`pacing: true`) and BBR (always paced); the last column is events/s over unpaced
  CUBIC's at the same rate, and events per data segment sent.
- validate: validation, warnings and the dry run (`describe`) of dumbbells and of Frame
  Relay hub-and-spoke networks of 40 to 4,000 items (nodes, links, PVCs and flows);
  medians of five, and the 4,000-item time over the 400-item time.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from engine import Scenario, simulate
from engine.analysis import describe
from engine.analysis.warnings import scenario_warnings

MIB = 1 << 20


def dumbbell(
    name: str,
    *,
    flows: int,
    rate: str,
    variant: str,
    sack: bool,
    window: int,
    duration: float,
    **tcp_extra: Any,
) -> dict[str, Any]:
    """The scale cases' dumbbell: `flows` senders s0.. to the receiver rcv over `wan`."""
    nodes = [
        {"id": "ra", "kind": "router"},
        {"id": "rb", "kind": "router"},
        {"id": "rcv", "kind": "host"},
    ]
    links = [_ppp("wan", "ra", "rb", rate, "20ms"), _ppp("lr", "rb", "rcv", "10Gbps", "0.1ms")]
    tcp = {
        "variant": variant,
        "sack": sack,
        "rcv_buf": window,
        "snd_buf": window,
        "window_scaling": window > 65535,
        **tcp_extra,
    }
    specs = []
    for i in range(flows):
        nodes.append({"id": f"s{i}", "kind": "host"})
        links.append(_ppp(f"l{i}", f"s{i}", "ra", "10Gbps", "0.1ms"))
        specs.append(
            {
                "id": f"f{i}",
                "kind": "tcp_bulk",
                "src": f"s{i}",
                "dst": "rcv",
                "stop": f"{duration:g}s",
                "tcp": dict(tcp),
            }
        )
    return {
        "name": name,
        "nodes": nodes,
        "links": links,
        "flows": specs,
        "duration": f"{duration:g}s",
    }


def _ppp(link_id: str, a: str, b: str, rate: str, delay: str) -> dict[str, Any]:
    """A PPP link of the dumbbell, with its drop-tail queue of 1,000 packets."""
    queue = {"discipline": "droptail", "limit_packets": 1000}
    return {
        "id": link_id,
        "a": a,
        "b": b,
        "rate": rate,
        "delay": delay,
        "encap": "ppp",
        "queue": queue,
    }


def flows_dumbbell(flows: int, duration: float) -> dict[str, Any]:
    """The flows curve's case: `flows` NewReno flows, 64 KB windows, on 100 Mb/s."""
    return dumbbell(
        f"newreno-{flows}",
        flows=flows,
        rate="100Mbps",
        variant="newreno",
        sack=False,
        window=65535,
        duration=duration,
    )


def run(label: str, data: dict[str, Any], settle: float = 0.0) -> tuple[tuple[float, float], Any]:
    """Simulate once, or again until `settle` seconds of wall time have passed (nine runs
    at most), and take each rate's median; print the row and return its events per wall
    and per CPU second, and the result."""
    scenario = Scenario.model_validate(data)
    walls: list[float] = []
    cpus: list[float] = []
    while not walls or (sum(walls) < settle and len(walls) < 9):
        gc.collect()
        cpu0 = time.process_time()
        result = simulate(scenario)
        cpus.append(time.process_time() - cpu0)
        walls.append(result.wall_time)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    rate = result.events / wall
    runs = f" (median of {len(walls)})" if len(walls) > 1 else ""
    print(
        f"  {label:<22} events {result.events:>10,}   wall {wall:7.2f} s   "
        f"cpu {cpu:7.2f} s   {rate:>9,.0f} ev/s{runs}",
        end="",
    )
    return (rate, result.events / max(cpu, 1e-9)), result


def ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"   ratio {a[0] / b[0]:.2f} (cpu {a[1] / b[1]:.2f})"


def window_curve(long: bool) -> None:
    duration = 10.0 if long else 4.0
    # Standard slow start: its overshoot into the 1000-packet queue is the loss burst that
    # SACK recovery must walk (with HyStart, CUBIC's default since engine 0.3.0, this path
    # sees no loss at all and the SACK scoreboard is never used).
    print(
        f"window: CUBIC (slow_start standard), 1 Gb/s, {duration:g} s; SACK off, then on "
        "(ratio = on / off)"
    )
    for window in (64 * 1024, 256 * 1024, MIB, 4 * MIB, 16 * MIB):
        rates = []
        for sack in (False, True):
            label = f"{window // 1024:>6} KiB sack={'on' if sack else 'off'}"
            data = dumbbell(
                f"cubic-{window}-{sack}",
                flows=1,
                rate="1Gbps",
                variant="cubic",
                sack=sack,
                window=window,
                duration=duration,
                slow_start="standard",
            )
            rate, result = run(label, data)
            flow = result.flows["f0"]
            print(
                f"   goodput {flow.goodput_bps / 1e6:7.1f} Mb/s   drops "
                f"{result.links['wan:ra>rb'].drops:>5}",
                end="",
            )
            rates.append(rate)
            print(ratio(rates[1], rates[0]) if sack else "")


def flows_curve(long: bool) -> None:
    duration = 20.0 if long else 5.0
    print(f"flows: NewReno, 64 KB windows, 100 Mb/s, {duration:g} s (ratio = over 1 flow)")
    base = None
    for n in (1, 10, 100, 1000):
        data = flows_dumbbell(n, duration)
        # A row of a second or less is at the mercy of a shared machine's moods: the short
        # ones repeat until three seconds have passed, and the ratio is of medians.
        rate, _ = run(f"{n:>5} flows", data, settle=3.0)
        base = base or rate
        print(ratio(rate, base))


def rate_curve(long: bool) -> None:
    duration = 2.0
    rates = ["10Mbps", "100Mbps", "1Gbps"] + (["10Gbps"] if long else [])
    print(f"rate: one CUBIC + SACK flow, 16 MiB window, {duration:g} s")
    for rate in rates:
        data = dumbbell(
            f"cubic-sack-{rate}",
            flows=1,
            rate=rate,
            variant="cubic",
            sack=True,
            window=16 * MIB,
            duration=duration,
        )
        _, result = run(f"{rate:>8}", data)
        print(f"   goodput {result.flows['f0'].goodput_bps / 1e6:8.1f} Mb/s")


def pacing_curve(long: bool) -> None:
    duration = 5.0 if long else 2.0
    rates = ["10Mbps", "100Mbps", "1Gbps"]
    print(f"pacing: one SACK flow, 16 MiB window, {duration:g} s (ratio = over unpaced CUBIC)")
    for rate in rates:
        base = None
        for label, variant, extra in (
            ("cubic", "cubic", {}),
            ("cubic paced", "cubic", {"pacing": True}),
            ("bbr", "bbr", {}),
        ):
            data = dumbbell(
                f"{label}-{rate}",
                flows=1,
                rate=rate,
                variant=variant,
                sack=True,
                window=16 * MIB,
                duration=duration,
                **extra,
            )
            rates_, result = run(f"{rate:>8} {label}", data)
            base = base or rates_
            flow = result.flows["f0"]
            print(
                f"   goodput {flow.goodput_bps / 1e6:7.1f} Mb/s"
                + ratio(rates_, base)
                + f"   ev/seg {result.events / max(flow.segments_sent, 1):.2f}"
            )


def hub_and_spoke(items: int) -> dict[str, Any]:
    """Branches (a host and a router each) on a Frame Relay switch, a PVC each to the hub
    router, and a transfer each to the hub's server: six items per branch."""
    branches = max(1, (items - 5) // 6)
    nodes = [
        {"id": "hub", "kind": "router"},
        {"id": "srv", "kind": "host"},
        {"id": "cloud", "kind": "fr_switch"},
    ]
    links = [
        {"id": "lan", "a": "hub", "b": "srv", "rate": "1Gbps"},
        {
            "id": "acc",
            "a": "hub",
            "b": "cloud",
            "rate": "45Mbps",
            "delay": "5ms",
            "encap": "frame_relay",
        },
    ]
    pvcs, flows = [], []
    for i in range(branches):
        nodes += [{"id": f"br{i}", "kind": "router"}, {"id": f"h{i}", "kind": "host"}]
        links += [
            {
                "id": f"a{i}",
                "a": f"br{i}",
                "b": "cloud",
                "rate": "T1",
                "delay": "10ms",
                "encap": "frame_relay",
            },
            {"id": f"e{i}", "a": f"h{i}", "b": f"br{i}", "rate": "100Mbps"},
        ]
        pvcs.append(
            {"id": f"p{i}", "dlci": 16 + i % 990, "src": f"br{i}", "dst": "hub", "cir": "512kbps"}
        )
        flows.append(
            {"id": f"f{i}", "kind": "tcp_bulk", "src": f"h{i}", "dst": "srv", "bytes": "1MB"}
        )
    return {
        "name": "hub-and-spoke",
        "duration": "600s",
        "nodes": nodes,
        "links": links,
        "frame_relay": {"pvcs": pvcs},
        "flows": flows,
    }


def dumbbell_items(items: int) -> dict[str, Any]:
    """The flows dumbbell with three items per sender (node, link, flow)."""
    return dumbbell(
        "dumbbell",
        flows=max(1, (items - 5) // 3),
        rate="100Mbps",
        variant="newreno",
        sack=False,
        window=65535,
        duration=20.0,
    )


def validate_curve(long: bool) -> None:
    print("validate: medians of 5 (validate = Scenario.model_validate; dry run = describe)")
    scenario_warnings(Scenario.model_validate(dumbbell_items(40)))  # imports and schema warm-up
    for family in (dumbbell_items, hub_and_spoke):
        medians = {}
        for items in (40, 400, 4000):
            data = family(items)
            times: dict[str, list[float]] = {"validate": [], "warnings": [], "dry run": []}
            for _ in range(5):
                gc.collect()
                t0 = time.perf_counter()
                scenario = Scenario.model_validate(data)
                t1 = time.perf_counter()
                scenario_warnings(scenario)
                t2 = time.perf_counter()
                describe(scenario)
                t3 = time.perf_counter()
                for key, t in zip(times, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                    times[key].append(t)
            medians[items] = {k: statistics.median(v) for k, v in times.items()}
            count = (
                len(data["nodes"])
                + len(data["links"])
                + len(data["flows"])
                + len(data.get("frame_relay", {}).get("pvcs", []))
            )
            row = "   ".join(f"{k} {v * 1e3:7.1f} ms" for k, v in medians[items].items())
            print(f"  {family.__name__:<14} {count:>5} items   {row}")
        ratio = "   ".join(f"{k} x{medians[4000][k] / medians[400][k]:.1f}" for k in medians[400])
        print(f"  {family.__name__:<14} 4000 / 400     {ratio}")


CURVES = {
    "window": window_curve,
    "flows": flows_curve,
    "rate": rate_curve,
    "pacing": pacing_curve,
    "validate": validate_curve,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--long",
        action="store_true",
        help="the scale cases' durations and the 10 Gb/s row (many minutes)",
    )
    parser.add_argument(
        "--only",
        default=",".join(CURVES),
        help="comma-separated curves to run: " + ", ".join(CURVES),
    )
    args = parser.parse_args()
    for name in args.only.split(","):
        CURVES[name](args.long)


if __name__ == "__main__":
    main()
