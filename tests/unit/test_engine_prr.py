"""Proportional Rate Reduction (RFC 6937 / RFC 9937), `tcp.recovery: prr`.

The per-ACK sndcnt is checked on RFC 6937's worked example (section 3.1): a window of 20
segments, ssthresh 10, Limited Transmit, first with segment 0 lost, then with segments
0-14 lost; the RFC's "sent" and "RB" rows are copied below as the RFC prints them. Then
the sender: PRR spreads the window reduction over the round trip and ends recovery with
ssthresh in flight.
"""

import re

import pytest
from engine_helpers import (
    SEGMENT_TIME,
    after,
    bulk,
    one_link,
    run,
    script_loss,
    series,
    time_ack_reaches,
    value_at,
)

from engine.tcp.recovery.prr import Prr

pytestmark = pytest.mark.unit

MSS = 1460

# RFC 6937 section 3.1, the PRR chart for a single loss (both reduction bounds alike).
SINGLE_LOSS = """
   ack#   X  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19
   sent:     N  N  R     N     N     N     N     N     N        N  N
   RB:                                                          s  s
"""
# The same, segments 0-14 lost: only the ACKs of 15-19 come back.
BURST_CRB = """
   ack#   X  X  X  X  X  X  X  X  X  X  X  X  X  X  X 15 16 17 18 19
   pipe:                                              19 19  4  4  4
   sent:                                               N  N  R  R  R
   RB:                                                       b  b  b
"""
BURST_SSRB = """
   ack#   X  X  X  X  X  X  X  X  X  X  X  X  X  X  X 15 16 17 18 19
   pipe:                                              19 19  4  5  6
   sent:                                               N  N 2R 2R 2R
   RB:                                                      bd  d  d
"""


def chart(text: str) -> dict[str, list[str]]:
    """The RFC's chart as rows of cells, one per ack# column (read by column position)."""
    lines = [line for line in text.splitlines() if line.strip()]
    ends = [m.end() for m in re.finditer(r"\S+", lines[0])][1:]
    rows = {}
    for line in lines:
        name = line.split()[0].rstrip(":#")
        rows[name] = [line[end - 2 : end].strip() for end in ends]
    return rows


def rfc_example(losses: int, *, ssrb: bool, safe_ack: bool = True) -> dict[str, list[str]]:
    """Run the RFC's example through `Prr`, in segments of 1 byte, and return the rows.

    The sender has 20 segments out, segments 0..losses-1 lost, and the ACK of each other
    segment arrives in order. Limited Transmit sends a new segment on each of the first
    two duplicate ACKs; the third starts recovery (ssthresh 10, RecoverFS 20, the
    FlightSize before Limited Transmit). Pipe is as RFC 6675 counts it: outstanding, less
    SACKed, less lost, plus what was retransmitted; the RFC's first chart leaves out the
    fast retransmission, as its RFC 6675 row shows (cwnd 11 = ssthresh + that segment),
    and so does this model there. `safe_ack=True` is RFC 6937's SSRB, which adds one
    segment on every ACK.
    """
    prr = Prr(1, ssrb=ssrb)
    outstanding, sacked, retransmitted, in_recovery = 20, 0, 0, False
    rows: dict[str, list[str]] = {"ack": [], "pipe": [], "sent": [], "RB": []}
    for seg in range(20):
        rows["ack"].append(str(seg) if seg >= losses else "X")
        if seg < losses:
            for row in ("pipe", "sent", "RB"):
                rows[row].append("")
            continue
        sacked += 1
        if not in_recovery and sacked == 3:
            in_recovery = True
            prr.start(20, 10)
        counted_retx = retransmitted if losses > 1 else 0
        pipe = outstanding - sacked - (losses if in_recovery else 0) + counted_retx
        rows["pipe"].append(str(pipe))
        if not in_recovery:
            outstanding += 1  # Limited Transmit
            rows["sent"].append("N")
            rows["RB"].append("")
            continue
        count = prr.sndcnt(1, pipe, safe_ack)
        sent = ""
        for _ in range(count):
            if retransmitted < losses:
                retransmitted += 1
                sent += "R"
            else:
                outstanding += 1
                sent += "N"
            prr.out += 1
        rows["sent"].append(sent if len(sent) < 2 else f"{len(sent)}{sent[0]}")
        rows["RB"].append(prr.bound if sent and prr.bound != "p" else "")  # as the RFC marks it
    return rows


@pytest.mark.parametrize("ssrb", [True, False], ids=["ssrb", "crb"])
def test_single_loss_sends_every_other_ack_then_tops_up_to_ssthresh(ssrb):
    rfc = chart(SINGLE_LOSS)
    ours = rfc_example(1, ssrb=ssrb)
    assert ours["ack"] == rfc["ack"]
    assert ours["sent"] == rfc["sent"]
    assert ours["RB"] == rfc["RB"]
    # Section 3.1: PRR sends as much as RFC 6675 over the round trip, 9 segments.
    assert sum(len(s) for s in rfc["sent"][3:]) == 9


def test_burst_loss_conservative_bound_sends_what_was_delivered():
    rfc = chart(BURST_CRB)
    ours = rfc_example(15, ssrb=False)
    for row in ("ack", "pipe", "sent", "RB"):
        assert ours[row][15:] == rfc[row][15:], row


def test_burst_loss_slow_start_bound_sends_one_more_per_ack():
    rfc = chart(BURST_SSRB)
    ours = rfc_example(15, ssrb=True)
    for row in ("ack", "pipe", "sent", "RB"):
        assert ours[row][15:] == rfc[row][15:], row


def test_burst_loss_linux_adds_the_extra_segment_only_on_acks_that_advance_snd_una():
    # RFC 9937's SafeACK (Linux's FLAG_SND_UNA_ADVANCED): these are all duplicate ACKs,
    # so SSRB sends only what was delivered, as CRB does.
    ours = rfc_example(15, ssrb=True, safe_ack=False)
    assert ours["sent"][15:] == ["N", "N", "R", "R", "R"]


def test_proportional_part_converges_on_ssthresh():
    # Section 4: as prr_delivered reaches RecoverFS, prr_out reaches ssthresh.
    prr = Prr(MSS)
    prr.start(20 * MSS, 7 * MSS)  # CUBIC's 0.7
    total = 0
    for _ in range(20):
        count = prr.sndcnt(MSS, 15 * MSS, safe_ack=False)  # pipe stays above ssthresh
        prr.out += count
        total += count
    assert total == 7 * MSS


# --- the sender ----------------------------------------------------------------------------
#
# 1 Mbit/s, 50 ms, the receive window well above what the path holds: the sender is
# cwnd-limited, so recovery may send new data.


def recovery_run(recovery: str, *drops: int, variant: str = "newreno", **tcp):
    return run(
        one_link(
            rate=1e6,
            delay=0.05,
            loss=script_loss(*drops),
            flows=[
                bulk(
                    nbytes=300 * MSS,
                    variant=variant,
                    rcv_buf=200 * MSS,
                    window_scaling=True,
                    recovery=recovery,
                    **tcp,
                )
            ],
        )
    )


def new_data_sent_after(result, t0: float) -> float:
    """When the highest sequence sent first rises after t0 (new data)."""
    ts, vs = series(result, "flow.f.seq")
    top = value_at(result, "flow.f.seq", t0)
    return next(t for t, v in zip(ts, vs, strict=True) if t > t0 and v > top)


@pytest.mark.parametrize("sack", [False, True])
def test_prr_spreads_the_reduction_classic_inflation_waits_half_a_window(sack):
    prr = recovery_run("prr", 60, sack=sack)
    classic = recovery_run("classic", 60, sack=sack)
    for result in (prr, classic):
        flow = result.flows["f"]
        assert (flow.fast_retransmits, flow.timeouts, flow.retransmissions) == (1, 0, 1)
    t_fr = series(prr, "flow.f.ssthresh")[0][0]
    ssthresh = series(prr, "flow.f.ssthresh")[1][0]
    flight = 2 * ssthresh  # RFC 5681 eq. (4)
    # The bottleneck paces the duplicate ACKs one segment time apart. PRR: new data by
    # the second ACK after the fast retransmit (ssthresh / RecoverFS = 1/2) ...
    assert new_data_sent_after(prr, t_fr) < t_fr + 3 * SEGMENT_TIME
    # ... and cwnd falls by one segment every other ACK, never rising in recovery.
    t_full = time_ack_reaches(prr, value_at(prr, "flow.f.seq", t_fr))
    cwnd = [v for t, v in after(prr, "flow.f.cwnd", t_fr) if t < t_full]
    assert all(b <= a for a, b in zip(cwnd, cwnd[1:], strict=False))
    # Classic: nothing new until half the window's duplicate ACKs have inflated cwnd
    # past the flight (RFC 6675 with cwnd = ssthresh: until pipe falls below it).
    t_classic = series(classic, "flow.f.ssthresh")[0][0]
    assert new_data_sent_after(classic, t_classic) >= (
        t_classic + (flight / 2 / MSS - 4) * SEGMENT_TIME
    )


@pytest.mark.parametrize("sack", [False, True])
def test_prr_ends_recovery_with_ssthresh_in_flight(sack):
    result = recovery_run("prr", 60, sack=sack)
    t_fr = series(result, "flow.f.ssthresh")[0][0]
    ssthresh = series(result, "flow.f.ssthresh")[1][0]
    t_full = time_ack_reaches(result, value_at(result, "flow.f.seq", t_fr))
    assert value_at(result, "flow.f.cwnd", t_full) == ssthresh
    # RFC 6937 section 4: with a single loss the window ends exactly at ssthresh (the
    # `inflight` trace is snd_nxt - snd_una, which equals pipe once nothing is SACKed).
    assert abs(value_at(result, "flow.f.inflight", t_full) - ssthresh) < MSS


def test_after_a_burst_loss_the_slow_start_bound_climbs_to_ssthresh_the_conservative_holds():
    # Only SACK tells the sender that 40 consecutive segments are gone (pipe far below
    # ssthresh); without it duplicate ACKs count one segment each.
    sack = True
    drops = tuple(range(60, 100))
    ssrb = recovery_run("prr", *drops, sack=sack, prr_bound="ssrb")
    crb = recovery_run("prr", *drops, sack=sack, prr_bound="crb")
    t_fr = series(ssrb, "flow.f.ssthresh")[0][0]
    assert series(crb, "flow.f.ssthresh")[0][0] == t_fr
    ssthresh = series(ssrb, "flow.f.ssthresh")[1][0]
    entry = value_at(ssrb, "flow.f.cwnd", t_fr)
    assert entry == value_at(crb, "flow.f.cwnd", t_fr) < ssthresh - 5 * MSS
    # The ACKs that follow each advance snd_una (each repairs a hole): SSRB sends one
    # segment more than each delivered, so cwnd = pipe + sndcnt climbs a segment per ACK.
    steps = [v for _, v in after(ssrb, "flow.f.cwnd", t_fr)][:6]
    assert steps == [entry + k * MSS for k in range(6)]
    # CRB sends only what was delivered: pipe, and cwnd with it, stay where they were.
    t_next = after(crb, "flow.f.ack", t_fr + 1e-9)[0][0]
    assert value_at(crb, "flow.f.cwnd", t_next + 5 * SEGMENT_TIME) == entry
