"""Sentences rendered from remedies and diagnoses: data first, prose from it (STYLE.md 17).

`render(remedy)` is a remedy's own sentence, and `advice()` joins the headline
(engine/advice/headline.py: what limits the flow, `Diagnosis.why`) and the remedies, as
candidates none yet measured, into `Diagnosis.advice`. `changes()` is the one way a list of changes
is written ("rcv_buf 8,760 B → 35,040 B"), also used by the remedy check and the advisor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.advice.levers import name, show
from engine.advice.model import COST_ORDER, Change, Remedy
from engine.units import format_rate

if TYPE_CHECKING:
    from engine.advice.context import Context

BUSY_OTHERS = 0.05  # share of a resource taken by other traffic worth mentioning
SHOWN_HELPFUL = 3
SHOWN_WONT = 2


def rate(bps: float | None) -> str:
    return format_rate(bps or 0.0, digits=3)


def seconds(t: float) -> str:
    return f"{t:,.0f} s" if t >= 10 else f"{t:,.2g} s"


def cost_rank(r: Remedy) -> int:
    return COST_ORDER.get(r.cost_class or "run", len(COST_ORDER))


def changes(items: Sequence[Change]) -> str:
    """ "access1 + access2 rate T1 (1.544 Mbit/s) → T3 (44.736 Mbit/s) and rcv_buf …": paths
    moved to the same value from the same value are written once."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for c in items:
        label = name([c.path]).split(" ")[-1]
        groups.setdefault((label, show(c.path, c.was), show(c.path, c.value)), []).append(c.path)
    parts = [f"{name(paths)} {was} → {now}" for (_, was, now), paths in groups.items()]
    return " and ".join(parts)


def _effect(r: Remedy) -> str:
    e = r.predicted
    if e is None or e.goodput_bps is None:
        return ""
    at_least = f" (at least {seconds(e.completion_time)})" if e.completion_time else ""
    where = {
        "window": "the window",
        "pvc": f"the contract of {e.resource}",
        "shaper": f"the shaper of {e.resource}",
        "link": e.resource,
        "ack": f"the ACKs' way back ({e.resource})",
    }.get(e.limit or "", "")
    return f": the bounds then allow up to {rate(e.goodput_bps)}{at_least}, {where} binding"


_WHY: dict[str, str] = {
    "raise_rcv_buf": "to cover the path's bandwidth-delay product ({bdp:,.0f} B)",
    "raise_snd_buf": "to cover the path's bandwidth-delay product ({bdp:,.0f} B)",
    "upgrade_link": "to the next product of its ladder",
    "raise_cir": "so that the contract no longer binds",
    "raise_be": "so that the contract no longer binds",
    "raise_bc": "so that one full frame ({frame_bits:,} bit) fits in Bc + Be",
    "lower_mss": "so that a full segment's frame fits in Bc + Be",
    "shape": "to the CIR at the entry router (BECN shaping), so that the policer discards nothing",
    "raise_queue": "({subject} dropped {drops:,} packets) so that it holds one "
    "bandwidth-delay product ({bdp:,.0f} B)",
    "enable_sack": "to recover several losses per round trip",
    "enable_delayed_ack": "at the receiver, so that each ACK on the way back acknowledges "
    "{per_ack} segments and clocks {per_ack} times the payload",
    "change_variant": "(bbr does not slow down for random loss)",
    "lower_min_rto": "to Linux's floor, shortening each of the {timeouts} stalls",
    "enable_timestamps": "(RFC 7323, Linux's default) so that the ACK of a retransmission "
    "is an RTT sample and the timer's backoff ends there, where {waiting:.0%} of the flow's "
    "time went waiting for it over {timeouts} timeouts",
    "raise_initial_cwnd": "(RFC 6928, Linux's default), saving about {rounds_saved} round "
    "trips of slow start",
    "lengthen_run": "to see the flow fill the path",
}


def _why(r: Remedy) -> str:
    text = _WHY.get(r.action, "")
    if r.action == "raise_be" and "window_bits" in r.figures:
        text = (
            "so that Bc + Be covers the window ({window_bits:,} bit), letting its bursts "
            "through marked DE"
        )
    if r.action == "raise_be" and "port_bps" in r.figures:
        text = (
            f"so that CIR + Be/Tc reaches the access port's {rate(float(r.figures['port_bps']))}: "
            "the policer then passes all the port can send, whatever the burst (a larger Be "
            "is never used)"
        )
    if r.action == "change_variant" and "shallow_queue" in r.figures:
        text = (
            "(bbr paces at the bottleneck's rate, and needs no queue of a bandwidth-delay "
            "product at {shallow_queue} to keep it busy after a loss)"
        )
    if r.action == "change_variant" and any(c.path.endswith(".sack") for c in r.changes):
        text = text[:-1] + ", and recovers a burst of losses with SACK)"
    if r.cost_class == "queue" and r.action in ("raise_rcv_buf", "raise_snd_buf"):
        text += ", with a queue that absorbs slow start's bursts"
    if r.action == "shape" and any(c.path.endswith(".shaping.rate") for c in r.changes):
        text = "at the entry router, at the contract's rate (CIR + Be/Tc, at most the port), "
        text += "so that the bursts wait in the shaper and the policer discards nothing"
    if r.action == "shape" and any(".shaping_" in c.path for c in r.changes):
        text = "at the router's interface, to the port's rate, so that it no longer holds the "
        text += "flow back"
    if r.action == "upgrade_link" and any(c.path.endswith(".rcv_buf") for c in r.changes):
        text += ", with a window that covers its bandwidth-delay product"
    try:
        return text.format(subject=r.subject, **r.figures)
    except (KeyError, ValueError):
        return text.split("(")[0].strip()


def render(r: Remedy, ctx: Context | None = None) -> str:
    """The remedy's sentence."""
    if not r.changes:
        return _no_setting(r)
    what = changes(r.changes)
    if not r.helps:
        return f"Won't help: {what}, because {_why_not(r, ctx)}."
    verb = "Lengthen the run:" if r.action == "lengthen_run" else "Set"
    text = f"{verb} {what} {_why(r)}{_effect(r)}."
    if "queue_short" in r.figures:
        text += (
            f" But the queue of {r.figures['queue_short']} holds {r.figures['queue_packets']:,} "
            "packets, under half that product: slow start's bursts will overflow it unless "
            "it grows too."
        )
    return text.replace("  ", " ")


def _why_not(r: Remedy, ctx: Context | None) -> str:
    e = r.predicted
    achieved = ctx.summary.goodput_bps if ctx is not None else None
    if r.why_not == "lowers_bound" and e is not None:
        return f"it caps the flow at {rate(e.goodput_bps)}, below the {rate(achieved)} it gets now"
    if e is not None and e.limit == "ack":
        return (
            f"the ACKs' way back ({e.resource}) still holds the flow at "
            f"{rate(e.goodput_bps)} whatever the link"
        )
    if e is not None and e.limit == "window":
        return f"the window still holds the flow at {rate(e.goodput_bps)} whatever the link"
    if e is not None:
        return f"{e.resource} still holds the flow at {rate(e.goodput_bps)}"
    return "the bounds leave no room"


def _no_setting(r: Remedy) -> str:
    f = r.figures
    if "error_drops" in f:
        return (
            f"{r.subject} lost {f['error_drops']:,} packets to line errors ({f['loss_model']}): "
            "no setting removes them; only fixing the line does."
        )
    if "others" in f:
        return (
            f"Other traffic took {float(f['others']):.0%} of {r.subject} while this flow ran: "
            "nothing in this flow's settings changes that; less competing traffic would."
        )
    return f"Nothing in the scenario sets the limit at {r.subject}."


CANDIDATES = (
    "Candidates, cheapest first, each predicted by the bounds and none yet measured "
    "(a remedy check simulates them):"
)


def advice(why: str, found: Sequence[Remedy]) -> str:
    """`Diagnosis.advice`: what limits the flow, then its remedies as candidates. Nothing
    here is a recommendation: only a remedy check's measured verdict is (engine/advice/check.py).
    """
    helpful = [r.text for r in found if r.helps][:SHOWN_HELPFUL]
    rest = [r.text for r in found if not r.helps][:SHOWN_WONT]
    candidates = [CANDIDATES, *helpful] if helpful else []
    return " ".join([why, *candidates, *rest])
