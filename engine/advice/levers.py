"""The levers a user may pull and what each costs: the catalogue of settings the advisor and
the remedies know (by dotted path, as sweeps address them), the link tier ladder of real
products, and the documented default cost table (docs/advice.md "Costs").

A lever is one or more dotted paths moved together (both access links of a Frame Relay
path), a kind that says how its values are searched (bisected, climbed tier by tier, or
tried one by one), and a cost. Costs are in *cost units*, an illustrative monthly list
price in US dollars; a request may price any lever itself (a flat cost for any change).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.advice.model import CostClass
from engine.units import LINE_RATES, format_rate, parse_bits, parse_duration, parse_rate, parse_size

Kind = Literal[
    "bytes", "packets", "segments", "rate", "bits", "seconds", "tier", "choice", "switch"
]
"""How a lever's values are searched: numbers are bisected (`bytes`, `packets`, `segments`,
`rate`, `bits`, `seconds`), a `tier` climbs the ladder of products, a `choice` and a
`switch` are tried value by value."""

# --- the tier ladder -------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    name: str
    bps: float
    price: float  # cost units per month, per link


def _k(kbps: float) -> float:
    return kbps * 1e3


# Families of real products; "upgrade" means the next one in the link's own family (a T1
# goes to a T3, as the Riverbed lab has it, not to an E1 the carrier does not sell there).
LADDERS: dict[str, tuple[Tier, ...]] = {
    "north_america": (
        Tier("56k", _k(56), 150),
        Tier("DS0", LINE_RATES["DS0"], 175),
        Tier("128k", _k(128), 250),
        Tier("256k", _k(256), 350),
        Tier("384k", _k(384), 400),
        Tier("512k", _k(512), 450),
        Tier("768k", _k(768), 500),
        Tier("T1", LINE_RATES["T1"], 600),
        Tier("T3", LINE_RATES["T3"], 4500),
        Tier("OC3", LINE_RATES["OC3"], 12000),
        Tier("OC12", LINE_RATES["OC12"], 30000),
    ),
    "europe": (
        Tier("DS0", LINE_RATES["DS0"], 175),
        Tier("128k", _k(128), 250),
        Tier("256k", _k(256), 350),
        Tier("512k", _k(512), 450),
        Tier("1024k", _k(1024), 550),
        Tier("E1", LINE_RATES["E1"], 700),
        Tier("E3", LINE_RATES["E3"], 4000),
        Tier("STM1", LINE_RATES["OC3"], 12000),
        Tier("STM4", LINE_RATES["OC12"], 30000),
    ),
    "ethernet": (
        Tier("10BaseT", LINE_RATES["10BaseT"], 800),
        Tier("100BaseT", LINE_RATES["100BaseT"], 1500),
        Tier("1000BaseT", LINE_RATES["1000BaseT"], 3000),
        Tier("10GbE", 10e9, 8000),
    ),
}
ALL_TIERS: tuple[Tier, ...] = tuple(
    sorted({t.bps: t for ladder in LADDERS.values() for t in ladder}.values(), key=lambda t: t.bps)
)


OFF_LADDER_STEP = 1.25  # a rate no one sells climbs to a product at least this much faster


@lru_cache(maxsize=256)
def ladder_for(bps: float) -> tuple[Tier, ...]:
    """The ladder a link of this rate climbs: the family that sells exactly this rate (North
    America first, then Europe, then Ethernet); for a rate no one sells (a lab's 2 Mbit/s),
    every product at least OFF_LADDER_STEP faster, so that an "upgrade" is not 2.4%.
    Kept by rate: a run's remedies and sentences ask it for the same few rates thousands of
    times (1,713 at 1,000 flows, 43,000 comparisons)."""
    for ladder in LADDERS.values():
        if any(math.isclose(t.bps, bps, rel_tol=1e-9) for t in ladder):
            return ladder
    return tuple(t for t in ALL_TIERS if t.bps < bps or t.bps >= bps * OFF_LADDER_STEP)


def tier_named(bps: float) -> Tier | None:
    for t in ladder_for(bps):
        if math.isclose(t.bps, bps, rel_tol=1e-9):
            return t
    return None


def tier_price(bps: float) -> float:
    """The monthly price of a link of this rate: its product's (in the family that sells
    it: 1000BaseT at Ethernet's price, not OC-12's), or, for a rate no one sells, the
    dearest product at or below it (it costs what the product under it does)."""
    named = tier_named(bps)
    if named is not None:
        return named.price
    below = [t.price for t in ALL_TIERS if t.bps <= bps * (1 + 1e-9)]
    return max(below) if below else 0.0


# --- the cost table ----------------------------------------------------------------------


class CostTable(BaseModel):
    """The default prices (docs/advice.md "Costs"), in cost units per month."""

    model_config = ConfigDict(extra="forbid")

    endpoint: float = Field(default=0.0, description="Any TCP setting at the hosts: free")
    queue: float = Field(default=1.0, description="A router queue's size: router memory")
    shaping: float = Field(default=1.0, description="A router's traffic shaper: configuration")
    cir_per_kbps: float = Field(default=1.0, description="Committed information rate, per kb/s")
    be_per_kbps: float = Field(
        default=0.25,
        description="Excess burst, per kb/s of the long-run rate it adds (Be/Tc): sent "
        "discard-eligible, so cheaper than committed rate",
    )


# --- the catalogue -------------------------------------------------------------------------


@dataclass(frozen=True)
class LeverType:
    """What the catalogue knows about one kind of setting."""

    pattern: re.Pattern[str]
    kind: Kind
    cost_class: CostClass
    label: str  # a short name for sentences: "rcv_buf", "rate", "Be"
    step: float = 1.0  # the grid a bisected value is rounded up to (MSS for windows)
    highest: float = math.inf
    searchable: bool = True  # False: remedies only (lower is better, or not monotone)


_ID = r"[A-Za-z0-9_][A-Za-z0-9_\-]*"


def _t(pattern: str, kind: Kind, cost: CostClass, label: str, **kw: Any) -> LeverType:
    return LeverType(re.compile(pattern), kind, cost, label, **kw)


CATALOGUE: tuple[LeverType, ...] = (
    _t(rf"^flows\.{_ID}\.tcp\.rcv_buf$", "bytes", "endpoint", "rcv_buf", highest=2**30),
    _t(rf"^flows\.{_ID}\.tcp\.snd_buf$", "bytes", "endpoint", "snd_buf", highest=2**30),
    _t(rf"^flows\.{_ID}\.tcp\.window_scaling$", "switch", "endpoint", "window_scaling"),
    _t(rf"^flows\.{_ID}\.tcp\.sack$", "switch", "endpoint", "sack"),
    _t(rf"^flows\.{_ID}\.tcp\.timestamps$", "switch", "endpoint", "timestamps"),
    _t(rf"^flows\.{_ID}\.tcp\.delayed_ack\.enabled$", "switch", "endpoint", "delayed_ack"),
    _t(rf"^flows\.{_ID}\.tcp\.variant$", "choice", "endpoint", "variant"),
    _t(rf"^flows\.{_ID}\.tcp\.initial_cwnd$", "segments", "endpoint", "initial_cwnd", highest=100),
    _t(rf"^flows\.{_ID}\.tcp\.min_rto$", "seconds", "endpoint", "min_rto", searchable=False),
    _t(rf"^flows\.{_ID}\.tcp\.mss$", "bytes", "endpoint", "mss", searchable=False),
    _t(rf"^links\.{_ID}\.queue(_a_to_b|_b_to_a)?\.limit_packets$", "packets", "queue", "queue"),
    _t(rf"^links\.{_ID}\.queue(_a_to_b|_b_to_a)?\.limit_bytes$", "bytes", "queue", "queue"),
    _t(rf"^links\.{_ID}\.rate$", "tier", "link", "rate"),
    _t(rf"^links\.{_ID}\.rate_b_to_a$", "tier", "link", "rate_b_to_a"),
    _t(rf"^links\.{_ID}\.delay$", "seconds", "link", "delay", searchable=False),
    _t(rf"^frame_relay\.pvcs\.{_ID}\.cir$", "rate", "pvc", "CIR", step=8e3),
    _t(rf"^frame_relay\.pvcs\.{_ID}\.be$", "bits", "pvc", "Be", step=1e3),
    _t(rf"^frame_relay\.pvcs\.{_ID}\.bc$", "bits", "pvc", "Bc", searchable=False),
    _t(rf"^frame_relay\.pvcs\.{_ID}\.becn_shaping$", "switch", "shaping", "becn_shaping"),
    # Shaping at any rate (issue 25 item 5): bisected up to the knee of its bound, the
    # contract's rate, past which the policer would discard again.
    _t(rf"^frame_relay\.pvcs\.{_ID}\.shaping\.rate$", "rate", "shaping", "shaping", step=8e3),
    _t(
        rf"^frame_relay\.pvcs\.{_ID}\.shaping\.bc$",
        "bits",
        "shaping",
        "shaper Bc",
        searchable=False,
    ),
    # An interface's shaper (`Link.shaping_a_to_b`): a router's configuration, as a PVC's.
    _t(rf"^links\.{_ID}\.shaping_(a_to_b|b_to_a)\.rate$", "rate", "shaping", "shaping", step=8e3),
    _t(
        rf"^links\.{_ID}\.shaping_(a_to_b|b_to_a)\.bc$",
        "bits",
        "shaping",
        "shaper Bc",
        searchable=False,
    ),
    _t(r"^duration$", "seconds", "run", "duration", searchable=False),
)


@lru_cache(maxsize=8192)
def lever_type(path: str) -> LeverType | None:
    for t in CATALOGUE:
        if t.pattern.match(path):
            return t
    return None


def parse_value(path: str, value: Any) -> Any:
    """A lever's value in base units (a tier name "T3" becomes 44736000.0)."""
    t = lever_type(path)
    if t is None or value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float) and t.kind in ("tier", "rate", "seconds"):
        return float(value)  # already in base units: no parsing on the diagnosis' path
    if isinstance(value, int) and t.kind in ("bytes", "bits", "packets", "segments"):
        return value
    if t.kind in ("tier", "rate"):
        return parse_rate(value)
    if t.kind == "bytes":
        return parse_size(value)
    if t.kind == "bits":
        return parse_bits(value)
    if t.kind == "seconds":
        return parse_duration(value)
    if t.kind in ("packets", "segments"):
        return int(value)
    return value


def _trim(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:,.3g}"


def show(path: str, value: Any) -> str:
    """A lever's value for a sentence: "35,040 B", "T3 (44.736 Mbit/s)", "100 kbit"."""
    t = lever_type(path)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if t is None or isinstance(value, str):
        return str(value)
    if t.kind == "tier":
        tier = tier_named(float(value))
        return f"{tier.name} ({format_rate(value)})" if tier else format_rate(value)
    if t.kind == "rate":
        return format_rate(value)
    if t.kind == "bytes":
        return f"{int(value):,} B"
    if t.kind == "bits":
        return f"{_trim(value / 1e3)} kbit" if value >= 1e3 else f"{_trim(value)} bit"
    if t.kind == "seconds":
        return f"{value * 1e3:,.0f} ms" if value < 1 else f"{value:,.3g} s"
    if t.kind == "packets":
        return f"{int(value):,} packets"
    return f"{value}"


def name(paths: list[str]) -> str:
    """A lever's name for sentences: "rcv_buf", "access1 + access2 rate", "p1 Be"."""
    parts = [p.split(".") for p in paths]
    t = lever_type(paths[0])
    if t is None:
        return " + ".join(paths)
    labels = list(dict.fromkeys(lt.label if (lt := lever_type(p)) else p for p in paths))
    label = " + ".join(labels)  # "rcv_buf + snd_buf": a window's two buffers moved together
    flows = len({tuple(p[:2]) for p in parts})  # a flow's two buffers are one flow
    if t.cost_class in ("endpoint", "run"):
        return label if flows == 1 else f"{label} of {flows} flows"
    owners = " + ".join(p[1] if p[0] == "links" else p[2] for p in parts)
    return f"{owners} {label}"
