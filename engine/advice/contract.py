"""The remedies of a Frame Relay PVC's traffic contract (ITU-T I.370: CIR, Bc, Be, Tc =
Bc / CIR): raise the CIR or Be until the contract no longer binds (Be never past the
access port's rate), Bc where no frame fits the burst, and shaping at the entry router at
the contract's own rate. `rules` calls them for the limits a PVC sets (its capacity, its
policer's discards) and adds the sender's side."""

from __future__ import annotations

import math

from engine.advice.build import make, port_direction, tcp_path
from engine.advice.context import Context, PolicingFacts
from engine.advice.model import Action, Change, Remedy
from engine.net import link_wire
from engine.protocol import TCP_IP_HEADERS
from engine.scenario import Link, Pvc


def pvc_of(ctx: Context) -> Pvc:
    assert ctx.scenario.frame_relay is not None and ctx.facts.pvc is not None
    return next(p for p in ctx.scenario.frame_relay.pvcs if p.id == ctx.facts.pvc)


def raise_contract(ctx: Context, pvc: Pvc) -> list[Remedy | None]:
    """Raise the CIR, or Be, until the contract no longer binds (the port or the window
    does)."""
    values = unbinding(ctx, pvc)
    if values is None:
        return []
    cir, be = values
    base = f"frame_relay.pvcs.{pvc.id}"
    raises: tuple[tuple[Action, str, float], ...] = (
        ("raise_cir", "cir", cir),
        ("raise_be", "be", be),
    )
    return [
        make(
            ctx,
            action,
            [Change(path=f"{base}.{field}", value=value, was=getattr(pvc, field))],
            "pvc",
            subject=f"pvc:{pvc.id}",
        )
        for action, field, value in raises
    ]


def unbinding(ctx: Context, pvc: Pvc) -> tuple[float, int] | None:
    """The CIR, or the Be, at which the contract no longer binds: its long-run rate
    CIR + Be/Tc reaches what the port and the window allow (Be at most `be_most`)."""
    assert pvc.bc is not None
    model = ctx.model
    if model is None:
        return None
    base = f"frame_relay.pvcs.{pvc.id}"
    unbound = model.bound({f"{base}.cir": port_rate(ctx, pvc), f"{base}.be": 0})
    want = min(unbound.capacity_bps, unbound.goodput_bps)  # what the port and window allow
    share = model.bound().capacity_bps / (pvc.cir + pvc.be * pvc.cir / pvc.bc)
    need = want / share  # frame bits per second the contract must let through
    cir = min(port_rate(ctx, pvc), math.ceil(need / (1 + pvc.be / pvc.bc) / 8e3) * 8e3)
    be = math.ceil(max(need - pvc.cir, 0.0) * pvc.bc / pvc.cir / 1e3) * 1000
    return cir, min(be, be_most(ctx, pvc))


def pvc_port(ctx: Context, pvc: Pvc) -> Link | None:
    """The first link the PVC carries: the one leaving one of its routers (the access port
    whose frames the policer counts)."""
    for key in ctx.facts.path:
        link, direction = port_direction(ctx, key)
        if (link.a if direction == "a_to_b" else link.b) in (pvc.src, pvc.dst):
            return link
    return None


def port_rate(ctx: Context, pvc: Pvc) -> float:
    port = pvc_port(ctx, pvc)
    return port.rate if port is not None else pvc.cir


def be_most(ctx: Context, pvc: Pvc) -> int:
    """The largest Be a carrier sells, and the largest that can matter: (port - CIR) x Tc,
    where CIR + Be/Tc reaches the access port's rate. The policer then passes everything the
    port can send, whatever the burst; a larger Be is never used (Cisco's `frame-relay be`
    guidance, Be = (AR - CIR) x Tc). Rounded down to whole kbit."""
    assert pvc.bc is not None
    most = (port_rate(ctx, pvc) - pvc.cir) * pvc.bc / pvc.cir
    return max(int(math.floor(most / 1e3 + 1e-9)) * 1000, 0)


def policed(ctx: Context, p: PolicingFacts) -> tuple[list[Remedy | None], bool]:
    """The contract's remedies for a policed flow, and whether a whole frame fits the
    burst (Bc + Be): when none does, Bc (or a smaller MSS) is all that helps; else Be to
    the window (at most the port's), the CIR, and shaping at the contract's rate."""
    pvc = p.pvc
    assert pvc.bc is not None
    figures: dict[str, float | int | str] = {
        "discarded": p.counters.excess_dropped,
        "link_drops": p.link_drops,
        "frame_bits": p.frame_bits,
    }
    if pvc.bc + pvc.be < p.frame_bits:
        return _frames_fit(ctx, pvc, p.frame_bits, figures), False
    out = [_burst(ctx, pvc, figures)]
    out += raise_contract(ctx, pvc)[:1]  # the CIR; Be is the burst rule's above
    out.append(shape(ctx, pvc, figures))
    return out, True


def _frames_fit(
    ctx: Context, pvc: Pvc, frame_bits: int, figures: dict[str, float | int | str]
) -> list[Remedy | None]:
    """No frame fits Bc + Be whole: Bc raised to let one through, or an MSS whose frames
    fit the burst as it is."""
    assert pvc.bc is not None
    subject = f"pvc:{pvc.id}"
    bc = math.ceil((frame_bits - pvc.be) / 1e3) * 1000
    first = pvc_port(ctx, pvc)
    overhead = link_wire(first, 1000) - 1000 if first is not None else 0
    mss = int((pvc.bc + pvc.be) // 8) - overhead - TCP_IP_HEADERS
    change = Change(path=f"frame_relay.pvcs.{pvc.id}.bc", value=bc, was=pvc.bc)
    out = [make(ctx, "raise_bc", [change], "pvc", subject=subject, figures=figures)]
    if mss >= 64:
        change = Change(path=tcp_path(ctx, "mss"), value=mss, was=ctx.flow.tcp.mss)
        out.append(make(ctx, "lower_mss", [change], "endpoint", subject=subject, figures=figures))
    return out


def _burst(ctx: Context, pvc: Pvc, figures: dict[str, float | int | str]) -> Remedy | None:
    """Be that covers the window's bursts, and lets the contract's long-run rate reach what
    the port allows where covering the window alone would leave it binding (a 16 KiB window
    behind T1 ports: 100 kbit still holds the flow at 1.02 Mbit/s, 161 kbit reaches the port
    as the CIR's remedy does, at half its price); never past the port. None when Bc + Be
    already covers the window, or Be is already that large."""
    assert pvc.bc is not None
    window_bits = (ctx.facts.window_bytes or 0) * 8
    most = be_most(ctx, pvc)
    cover = math.ceil((window_bits - pvc.bc) / 1e3) * 1000
    values = unbinding(ctx, pvc)
    be = min(max(cover, values[1] if values else 0), most)
    if pvc.bc + pvc.be >= window_bits or be <= pvc.be:
        return None
    sized: dict[str, float | int | str] = {"window_bits": window_bits}
    if be == most and be != cover:  # the port, not the window, sizes it
        sized = {"port_bps": port_rate(ctx, pvc)}
    elif be > cover:  # the contract's long-run rate sizes it
        sized = {}
    change = Change(path=f"frame_relay.pvcs.{pvc.id}.be", value=be, was=pvc.be)
    return make(
        ctx, "raise_be", [change], "pvc", subject=f"pvc:{pvc.id}", figures={**figures, **sized}
    )


def shape(ctx: Context, pvc: Pvc, figures: dict[str, float | int | str]) -> Remedy | None:
    """Shaping at the entry router, at a rate that helps: the contract's own, CIR + Be/Tc
    (at most the port), with the contract's Bc, so that the bursts wait in the shaper
    instead of being discarded. Never shaping to the CIR alone: below what a policed flow
    gets, it makes the transfer slower (issue 23's first case, +64%)."""
    base = f"frame_relay.pvcs.{pvc.id}"
    assert pvc.bc is not None
    contract = min(port_rate(ctx, pvc), pvc.cir + pvc.be * pvc.cir / pvc.bc)
    rate = math.floor(contract / 8e3) * 8e3  # below the contract, never above it
    shaper = pvc.shaping
    now = shaper.rate if shaper is not None and shaper.rate is not None else None
    if now is None and (pvc.becn_shaping or shaper is not None):
        now = pvc.cir  # BECN shaping, and a shaper without a rate, run at the CIR
    if now is not None and now >= rate:
        return None  # already shaped at the contract's rate or above
    changes = [
        Change(path=f"{base}.shaping.rate", value=rate, was=shaper.rate if shaper else None),
        # Bursts no deeper than the contract's committed burst pass the policer.
        Change(path=f"{base}.shaping.bc", value=pvc.bc, was=shaper.bc if shaper else None),
    ]
    if pvc.becn_shaping:
        changes.append(Change(path=f"{base}.becn_shaping", value=False, was=True))
    # It closes the gap under the contract's bound (no discard, no recovery), like a queue.
    return make(
        ctx,
        "shape",
        changes,
        "shaping",
        subject=f"pvc:{pvc.id}",
        raises_bound=False,
        figures=figures,
    )
