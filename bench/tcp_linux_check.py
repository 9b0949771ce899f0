"""TCP as Linux runs it (issue 25 items 2-4): the heavy versions of the checks the unit
tests make small. Prints figures; asserts nothing.

    .venv/bin/python bench/tcp_linux_check.py [--only slowstart,gig,policer,rack]
                                              [--gig-bytes 1e9] [--seeds 3] [--jobs 2]

- slowstart: 100 Mb/s, 50 ms each way, 2,000-packet bottleneck queue, 4 MB buffers, no
  loss, CUBIC with HyStart, IW 10, delayed ACKs: a 100 MB transfer with `ack_counting`
  segments (Linux) and acks (RFC 5681), each against the slow-start model of
  tests/unit/test_engine_linux_slow_start.py; the window's growth per slow-start round,
  where HyStart left slow start, and how busy the bottleneck was.
- gig: 1 Gb/s, 40 ms each way (80 ms round trip), 0.1% random loss on the bottleneck, a
  7,000-packet bottleneck queue (about one BDP), 64 MiB buffers, SACK, IW 10, 200 ms
  minimum RTO, a 1 GB transfer. CUBIC against Mathis' and Padhye's bounds at its own loss
  rate and RTT; BBR v1's goodput over the second half of the transfer's time over the
  bottleneck's payload rate (1 Gb/s x 1460 / 1508), for each seed and their mean. The
  sender's own link is 10 Gb/s with a 200,000-packet queue, so that no burst is dropped
  at the host (until hosts hold data in the socket instead, issue 25 item 1).
- policer: BBR through a Frame Relay PVC (CIR 256 kbit/s, Bc 32 kbit, Be 0; 768 kbit/s
  ports), 5 MB, with and without `bbr_lt_bw`: the policer's discards and goodput over the
  policed payload rate.
- rack: a retransmission lost again in recovery (data packet 40 of a 64-segment slow
  start, then its retransmission), RACK-TLP against RFC 6675: when it is resent, timeouts,
  completion.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from test_engine_bbr_policer import POLICED, policed_transfer  # noqa: E402
from test_engine_linux_slow_start import BDP, IW, MSS, T_PKT, R, transfer  # noqa: E402

from engine import Scenario, simulate  # noqa: E402
from engine.net import wire_bytes  # noqa: E402

GIG_PAYLOAD = 1e9 * MSS / wire_bytes("ppp", MSS + 40)


def at(series: Any, t: float) -> float:
    """The value a change-driven series holds at time t."""
    value = series.v[0]
    for ts, v in zip(series.t, series.v, strict=True):
        if ts > t:
            break
        value = v
    return value


# --- slow start ------------------------------------------------------------------------


def slow_start(mode: str, nbytes: int) -> str:
    scenario = transfer(mode)
    body = scenario.model_dump()
    body["flows"][0]["bytes"] = nbytes
    t0 = time.process_time()
    r = simulate(Scenario.model_validate(body))
    cpu = time.process_time() - t0
    f = r.flows["f"]
    n = math.ceil(nbytes / MSS)
    k = next(i for i in range(40) if IW * 2**i >= BDP)
    model = R + k * R + (n - sum(IW * 2**i for i in range(k))) * T_PKT + 0.05 + T_PKT
    ss = r.series["flow.f.ssthresh"]
    cwnd = r.series["flow.f.cwnd"]
    at400 = next(t for t, v in zip(cwnd.t, cwnd.v, strict=True) if v >= 400 * MSS)
    # Rounds are read off the seq and ack traces of the unit test's 20 MB run: a 100 MB
    # run has more points than a trace keeps (TRACE_CAP), and thinning blurs them.
    short = simulate(transfer(mode))
    growth = rounds(short, short.series["flow.f.ssthresh"].t[0])
    return (
        f"  {mode:8s} completion {f.completion_time:7.3f} s   model {model:7.3f} s "
        f"({f.completion_time / model - 1:+.1%})   400 segments at {at400:.2f} s   "
        f"HyStart exit {ss.v[0] / MSS:5.0f} segments at {ss.t[0]:.2f} s (BDP {BDP:.0f})   "
        f"bottleneck busy {r.links['wan:r1>r2'].utilization:.1%}   retx {f.retransmissions}\n"
        f"           growth per slow-start round: {', '.join(f'{g:.2f}' for g in growth)}"
        f"   ({cpu:.0f} s cpu)"
    )


def rounds(r: Any, exit_t: float) -> list[float]:
    seq, ack, cwnd = r.series["flow.f.seq"], r.series["flow.f.ack"], r.series["flow.f.cwnd"]
    t = next(ts for ts, v in zip(seq.t, seq.v, strict=True) if v > 0)
    out = []
    while True:
        end = at(seq, t)
        t_next = next(ts for ts, v in zip(ack.t, ack.v, strict=True) if v >= end)
        if t_next >= exit_t:
            return out
        out.append(at(cwnd, t_next) / at(cwnd, t))
        t = t_next


# --- 1 Gb/s, 0.1% loss -----------------------------------------------------------------------


def gig_scenario(variant: str, nbytes: float, seed: int) -> Scenario:
    tcp = {
        "variant": variant,
        "rcv_buf": 64 << 20,
        "snd_buf": 64 << 20,
        "window_scaling": True,
        "initial_cwnd": 10,
        "min_rto": "200ms",
        "sack": True,
    }
    host_queue = {"discipline": "droptail", "limit_packets": 200_000}
    return Scenario.model_validate(
        {
            "name": f"gig-{variant}",
            "seed": seed,
            "duration": "20000s",
            "nodes": [
                {"id": "h1", "kind": "host"},
                {"id": "r1", "kind": "router"},
                {"id": "r2", "kind": "router"},
                {"id": "h2", "kind": "host"},
            ],
            "links": [
                {"id": "lan1", "a": "h1", "b": "r1", "rate": "10Gbps", "delay": "0.01ms",
                 "queue": host_queue},
                {"id": "wan", "a": "r1", "b": "r2", "rate": "1Gbps", "delay": "40ms",
                 "encap": "ppp", "queue": {"discipline": "droptail", "limit_packets": 7000},
                 "loss": {"model": "bernoulli", "rate": 0.001, "direction": "a_to_b"}},
                {"id": "lan2", "a": "r2", "b": "h2", "rate": "10Gbps", "delay": "0.01ms"},
            ],
            "flows": [
                {"id": "f", "kind": "tcp_bulk", "src": "h1", "dst": "h2", "bytes": int(nbytes),
                 "tcp": tcp}
            ],
        }
    )  # fmt: skip


def gig(variant: str, nbytes: float, seed: int) -> dict[str, float]:
    t0 = time.process_time()
    r = simulate(gig_scenario(variant, nbytes, seed))
    f = r.flows["f"]
    end = f.completion_time or r.sim_time
    half = end / 2
    ack = r.series["flow.f.ack"]
    second = (nbytes - at(ack, half)) * 8 / (end - half)
    return {
        "seed": seed,
        "goodput": f.goodput_bps,
        "second_half": second,
        "plr": f.plr or 0.0,
        "rtt": f.rtt_mean or 0.08,
        "retx": f.retransmissions,
        "timeouts": f.timeouts,
        "host_drops": r.links["lan1:h1>r1"].drops,
        "cpu": time.process_time() - t0,
    }


def mathis(p: float, rtt: float) -> float:
    """MSS/RTT sqrt(3/(2p)), b = 1: counting segments, a delayed ACK grows the window
    as two ACKs would (Linux), and CUBIC's Reno-friendly region grows as Reno does."""
    return MSS * 8 / rtt * math.sqrt(3 / (2 * p))


def padhye(p: float, rtt: float, t0: float) -> float:
    """Padhye et al. (1998), with timeouts: 1 / (RTT sqrt(2p/3) + T0 min(1, 3 sqrt(3p/8))
    p (1 + 32 p^2)) segments per second, b = 1."""
    return (
        MSS
        * 8
        / (
            rtt * math.sqrt(2 * p / 3)
            + t0 * min(1, 3 * math.sqrt(3 * p / 8)) * p * (1 + 32 * p * p)
        )
    )


# --- the policer, RACK ----------------------------------------------------------------------


def policer(lt_bw: bool, nbytes: str) -> dict[str, float]:
    body = policed_transfer(lt_bw).model_dump()
    body["flows"][0]["bytes"] = nbytes
    r = simulate(Scenario.model_validate(body))
    lt = [v for v in r.series["flow.f.bbr_lt_bw"].v if v > 0]
    return {
        "goodput": r.flows["f"].goodput_bps,
        "discards": r.pvcs["p1"].excess_dropped,
        "timeouts": r.flows["f"].timeouts,
        "lt": statistics.fmean(lt) if lt else 0.0,
        "engaged": len(lt),
    }


def rack_case() -> list[str]:
    from test_engine_rack import retransmission_times
    from test_engine_rack import transfer as rack_transfer

    once = rack_transfer("rack", (40,), 300, 64)
    first = retransmission_times(once)[0]
    index = int(at(once.series["flow.f.seq"], first - 1e-9) // MSS)
    out = []
    for mode in ("rack", "dupack"):
        r = rack_transfer(mode, (40, index), 300, 64)
        t = retransmission_times(r)
        f = r.flows["f"]
        out.append(
            f"  {mode:6s} retransmissions at {', '.join(f'{x:.3f}' for x in t)} s   "
            f"timeouts {f.timeouts}   completion {f.completion_time:.3f} s"
        )
    return out


def print_gig(done: dict[str, Any], seeds: int, gig_bytes: float) -> None:
    """The 1 Gb/s case: CUBIC against Padhye and Mathis, BBR's share per seed."""
    print(f"gig: 1 Gb/s, 80 ms, 0.1% loss, {gig_bytes / 1e9:g} GB, SACK")
    c = done["cubic"]
    lo, hi = padhye(c["plr"], c["rtt"], 0.2), mathis(c["plr"], c["rtt"])
    # The band test_engine_mathis.py holds Reno-family goodput to: 0.5 to 1.5 Mathis.
    inside = 0.5 * lo <= c["goodput"] <= 1.5 * hi
    print(
        f"  cubic  goodput {c['goodput'] / 1e6:7.2f} Mb/s   loss {c['plr']:.4%}   "
        f"rtt {c['rtt'] * 1e3:.1f} ms   Padhye {lo / 1e6:.2f}, Mathis {hi / 1e6:.2f} Mb/s "
        f"(x{c['goodput'] / hi:.2f}: {'inside' if inside else 'OUTSIDE'} 0.5 Padhye .. "
        f"1.5 Mathis)   timeouts {c['timeouts']}   host drops {c['host_drops']}   "
        f"({c['cpu']:.0f} s cpu)"
    )
    shares = []
    for seed in range(1, seeds + 1):
        b = done[f"bbr{seed}"]
        shares.append(b["second_half"] / GIG_PAYLOAD)
        print(
            f"  bbr    seed {seed}: goodput {b['goodput'] / 1e6:7.1f} Mb/s   second half "
            f"{b['second_half'] / 1e6:7.1f} Mb/s = {shares[-1]:.3f} of "
            f"{GIG_PAYLOAD / 1e6:.1f}   loss {b['plr']:.3%}   retx {b['retx']}   "
            f"timeouts {b['timeouts']}   host drops {b['host_drops']}   ({b['cpu']:.0f} s cpu)"
        )
    print(f"  bbr    second half, mean of {seeds}: {statistics.fmean(shares):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="slowstart,gig,policer,rack")
    ap.add_argument("--gig-bytes", type=float, default=1e9)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    only = set(args.only.split(","))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        jobs: dict[str, Any] = {}
        if "gig" in only:
            jobs["cubic"] = pool.submit(gig, "cubic", args.gig_bytes, 1)
            for seed in range(1, args.seeds + 1):
                jobs[f"bbr{seed}"] = pool.submit(gig, "bbr", args.gig_bytes, seed)
        if "slowstart" in only:
            for mode in ("segments", "acks"):
                jobs[f"ss-{mode}"] = pool.submit(slow_start, mode, 100_000_000)
        if "policer" in only:
            for lt in (True, False):
                jobs[f"pol-{lt}"] = pool.submit(policer, lt, "5MB")
        if "rack" in only:
            jobs["rack"] = pool.submit(rack_case)
        done = {k: v.result() for k, v in jobs.items()}
    if "slowstart" in only:
        print("slowstart: 100 Mb/s, 50 ms, 2,000-packet queue, 4 MB buffers, CUBIC + HyStart")
        print(done["ss-segments"])
        print(done["ss-acks"])
    if "gig" in only:
        print_gig(done, args.seeds, args.gig_bytes)
    if "policer" in only:
        print(
            f"policer: BBR through CIR 256 kbit/s, Bc 32 kbit, Be 0, 5 MB (policed {POLICED:,.0f} bit/s)"
        )
        for lt in (True, False):
            p = done[f"pol-{lt}"]
            print(
                f"  lt_bw {'on ' if lt else 'off'}  discards {p['discards']:5.0f}   goodput "
                f"{p['goodput']:,.0f} bit/s = {p['goodput'] / POLICED:.3f} of policed   "
                f"timeouts {p['timeouts']:.0f}   lt_bw mean {p['lt']:,.0f} bit/s over {p['engaged']} points"
            )
    if "rack" in only:
        print("rack: packet 40 and its retransmission lost, 2 Mb/s, 50 ms, 64-segment window")
        print("\n".join(done["rack"]))


if __name__ == "__main__":
    main()
