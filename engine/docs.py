"""The reference part of docs/scenario.md, written from the models themselves: every field of
the scenario language, the study (sweep) and the Result, with its type, default and
description. `python -m engine.docs` prints it; `python -m engine.docs --write` puts it
between the markers in docs/scenario.md; a unit test fails when the file is stale or a
field has no description, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from engine.result import Result
from engine.scenario import Scenario, TcpSpec
from engine.study import StudySpec
from engine.tcp.cc import variant
from engine.variants import names

if TYPE_CHECKING:
    from engine.tcp.cc import CongestionOps

DOC = Path(__file__).resolve().parent.parent / "docs" / "scenario.md"
BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m engine.docs --write) -->"
END = "<!-- END GENERATED REFERENCE -->"
ROOTS: list[type[BaseModel]] = [Scenario, StudySpec, Result]

#: Descriptions of the fields whose model says nothing (mostly the Result's counters).
NOTES: dict[str, str] = {
    "Scenario.name": "Required; names the scenario in lists and reports.",
    "Scenario.description": "Free text.",
    "Scenario.nodes": "Hosts, routers and Frame Relay switches.",
    "Scenario.links": "Full-duplex point-to-point links between nodes.",
    "Scenario.frame_relay": "Frame Relay switch thresholds and PVCs, if any.",
    "Scenario.flows": "The traffic: `tcp_bulk` transfers and `udp_cbr` streams, by `kind`.",
    "StudySpec.mode": "`grid`: the cartesian product of the lists; `zip`: the lists in "
    "parallel (equal lengths).",
    "StudySpec.replications": "Seeds seed .. seed+n-1 for each point.",
    "StudySpec.baseline": "The point the others are compared with, as {path: value}.",
    "Result.engine_version": "Engine that produced the result (part of its identity).",
    "Result.scenario_hash": "sha256 of the canonical scenario JSON (units normalised).",
    "Result.seed": "The run's seed.",
    "Result.sim_time": "Simulated seconds at the end of the run.",
    "Result.wall_time": "Seconds of the worker's clock the simulation took.",
    "Result.events": "Simulation events processed.",
    "Result.warnings": "Advisory findings about the scenario (also in the 202 of the POST).",
    "Result.flows": "Per flow id: its summary (`kind` tcp or udp).",
    "Result.links": "Per link direction, key `<link>:<from>><to>`: its summary.",
    "Result.pvcs": "Per PVC id: its summary.",
    "Result.captures": "The packet captures the scenario asked for (the files are served "
    "apart: `GET /v1/runs/{id}/pcap`).",
    "CaptureSummary.link": "Id of the link captured.",
    "CaptureSummary.direction": "`a_to_b`, `b_to_a` or `both`, as the scenario's capture.",
    "Result.diagnosis": "Per TCP flow: what limits it, the analytic bounds, advice in words.",
    "Result.series": "Keys `flow.<id>.<metric>`, `link.<id>.<from>><to>.<metric>`, "
    "`pvc.<id>.<metric>`.",
    "Link.id": "Unique among links; names its results and series.",
    "Link.a": "Node at one end.",
    "Link.b": "Node at the other end.",
    "Link.loss": "Random or scripted loss on the link.",
    "FrameRelaySpec.switch": "Thresholds of every Frame Relay switch.",
    "FrameRelaySpec.pvcs": "Permanent virtual circuits between routers across the cloud.",
    "TcpBulkFlow.id": "Unique among flows; names its results and series.",
    "TcpBulkFlow.kind": "`tcp_bulk`: an FTP-like transfer.",
    "TcpBulkFlow.tcp": "The TCP sender and receiver settings.",
    "UdpCbrFlow.id": "Unique among flows; names its results and series.",
    "UdpCbrFlow.kind": "`udp_cbr`: constant bit rate datagrams.",
    "TcpFlowSummary.delay_p50": "Median one-way delay of data packets, s.",
    "TcpFlowSummary.delay_p95": "95th percentile one-way delay, s.",
    "TcpFlowSummary.delay_p99": "99th percentile one-way delay, s.",
    "UdpFlowSummary.delay_p50": "Median one-way delay, s.",
    "UdpFlowSummary.delay_p95": "95th percentile one-way delay, s.",
    "UdpFlowSummary.delay_p99": "99th percentile one-way delay, s.",
    "Diagnosis.bdp_bytes": "Bandwidth-delay product of the path, bytes.",
    "QueueSpec.discipline": "`droptail`, or `red` (Random Early Detection).",
    "LossSpec.model": "`none`, `bernoulli` (rate), `ber` (bit error rate), "
    "`gilbert_elliott` (bursts) or `script` (drop listed data packets).",
    "TcpSpec.delayed_ack": "The receiver's delayed ACKs.",
    "DelayedAckSpec.enabled": "Delay ACKs (RFC 1122/5681).",
    "TcpSpec.cubic_fast_convergence": "CUBIC: release bandwidth faster when the window "
    "shrinks again before reaching its last maximum (RFC 9438 section 4.7).",
    "TcpSpec.cubic_tcp_friendliness": "CUBIC: never below what Reno would achieve "
    "(RFC 9438 section 4.3, the Reno-friendly region).",
    "Node.id": "Unique among nodes; referenced by links, PVCs and flows.",
    "Node.kind": "`host` ends flows, `router` forwards, `fr_switch` is a Frame Relay switch.",
    "Pvc.id": "Unique among PVCs; names its `pvc.<id>.*` results and series.",
    "Pvc.src": "Router at the PVC's forward entry.",
    "Pvc.dst": "Router at the PVC's forward exit.",
    "Series.unit": "Unit of `v`: bytes, s, bit/s, packets, ratio, state (`bbr_state`).",
    "Series.t": "Sample times, simulated seconds.",
    "Series.v": "Values. Rate series (`*_bps`, `utilization`): the mean over the interval "
    "ending at `t`; the others hold from `t` to the next sample.",
    "TcpFlowSummary.kind": "`tcp`.",
    "TcpFlowSummary.completed": "Every byte of a finite transfer was delivered in order.",
    "TcpFlowSummary.bytes_delivered": "Bytes delivered in order to the receiving application.",
    "TcpFlowSummary.goodput_bps": "bytes_delivered x 8 / the flow's active time, bit/s.",
    "TcpFlowSummary.segments_sent": "Data segments transmitted, retransmissions included.",
    "TcpFlowSummary.retransmissions": "Data segments sent again.",
    "TcpFlowSummary.timeouts": "Retransmission timer expiries the sender acted on (a SYN's "
    "included; an expiry with nothing outstanding is none).",
    "TcpFlowSummary.fast_retransmits": "Losses recovered by fast retransmit.",
    "TcpFlowSummary.dup_acks": "Duplicate ACKs received.",
    "TcpFlowSummary.rtt_mean": "Mean round-trip time sample, s.",
    "TcpFlowSummary.rtt_min": "Smallest round-trip time sample, s.",
    "TcpFlowSummary.rtt_max": "Largest round-trip time sample, s.",
    "TcpFlowSummary.cwnd_max": "Largest congestion window, bytes: the peak of the `cwnd` "
    "series (for variant `none`, which has none, the send window). It is the sender's "
    "congestion state, not what it may have in flight: it may exceed the receive window or "
    "the send buffer (fast recovery's inflation, a window grown while the receiver's held "
    "the flight), which then cap the flight at min(cwnd, rwnd, snd_buf).",
    "TcpFlowSummary.cwnd_mean": "Time-average of the `cwnd` series over the flow's life, "
    "bytes (as cwnd_max, not capped by the receive window or the send buffer).",
    "UdpFlowSummary.kind": "`udp`.",
    "UdpFlowSummary.packets_sent": "Datagrams sent.",
    "UdpFlowSummary.packets_received": "Datagrams received.",
    "UdpFlowSummary.packets_dropped": "Datagrams dropped anywhere on the path.",
    "UdpFlowSummary.pdr": "Datagrams delivered / (delivered + dropped): those still in "
    "flight when the run ends count as neither.",
    "UdpFlowSummary.plr": "Datagrams dropped / (delivered + dropped).",
    "UdpFlowSummary.throughput_bps": "Payload bits received per second of the flow's activity.",
    "UdpFlowSummary.delay_mean": "Mean one-way delay, s.",
    "UdpFlowSummary.jitter": "Mean |difference| of consecutive one-way delays, s.",
    "LinkSummary.utilization": "Fraction of the run the direction was transmitting.",
    "LinkSummary.queue_max": "Most packets waiting at once.",
    "PvcSummary.frames": "Frames that entered the PVC.",
    "PvcSummary.de_marked": "Frames marked discard-eligible (beyond Bc).",
    "PvcSummary.de_dropped": "DE frames discarded by a congested switch.",
    "PvcSummary.excess_dropped": "Frames beyond Bc + Be, discarded at the entry.",
    "PvcSummary.fecn_marked": "Frames marked FECN by a congested switch.",
    "PvcSummary.becn_marked": "Frames marked BECN toward the sender.",
    "Bounds.achieved_bps": "The goodput the run achieved, bit/s.",
    "Diagnosis.limit": "What limits the flow.",
    "Diagnosis.bounds": "The analytic ceilings of the flow's rate, bit/s.",
}


def _unwrap(tp: Any) -> tuple[Any, list[Any]]:
    meta: list[Any] = []
    while get_origin(tp) is typing.Annotated:
        args = get_args(tp)
        tp, meta = args[0], [*meta, *args[1:]]
    return tp, meta


def _unit_kind(meta: list[Any]) -> str | None:
    for m in meta:
        schema = getattr(m, "json_schema", None)
        if isinstance(schema, dict) and getattr(m, "mode", None) == "validation":
            text = str(schema.get("description", ""))
            for word, name in (
                ("Duration", "duration"),
                ("Size", "size"),
                ("Rate", "rate"),
                ("Amount of data", "bits"),
            ):
                if text.startswith(word):
                    return name
    return None


def type_name(
    tp: Any, seen: list[type[BaseModel]] | None = None, metadata: list[Any] | None = None
) -> str:
    """A field's type in the words of the doc; models met are appended to `seen`."""
    tp, meta = _unwrap(tp)
    unit = _unit_kind([*(metadata or []), *meta])
    if unit:
        return unit
    for m in [*(metadata or []), *meta]:  # a name in a registry read when validating
        choices = getattr(m, "choices", None)
        if callable(choices):
            return " \\| ".join(f"`{a}`" for a in choices())
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        inner = " \\| ".join(type_name(a, seen) for a in args)
        return f"{inner} or null" if len(args) < len(get_args(tp)) else inner
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in get_args(tp))
    if origin in (list, tuple) or origin is typing.Sequence:
        args = list(get_args(tp))
        return f"list of {type_name(args[0], seen)}" if args else "list"
    if origin is dict:
        args = list(get_args(tp))
        return f"map of {type_name(args[1], seen)}" if args else "map"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if seen is not None and tp not in seen:
            seen.append(tp)
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        made = info.default_factory()  # type: ignore[call-arg]
        if isinstance(made, BaseModel):
            return "its defaults"
        return "`" + repr(made).replace("'", '"') + "`"
    if info.default is PydanticUndefined:
        return "required"
    value = info.default
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, BaseModel):
        return "its defaults"
    return f"`{value}`"


def description(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    text = info.description or NOTES.get(f"{model.__name__}.{name}", "")
    return " ".join(text.split()).replace("|", "\\|")


def models() -> list[type[BaseModel]]:
    """Every model reachable from the roots, in the order the doc presents them."""
    seen: list[type[BaseModel]] = list(ROOTS)
    i = 0
    while i < len(seen):
        for info in seen[i].model_fields.values():
            type_name(info.annotation, seen)
        i += 1
    return seen


def undocumented() -> list[str]:
    """`Model.field` of every field with no description anywhere."""
    return [
        f"{m.__name__}.{n}"
        for m in models()
        for n, info in m.model_fields.items()
        if not description(m, n, info)
    ]


def reference() -> str:
    out = []
    for model in models():
        out.append(f"### {model.__name__}\n")
        doc = " ".join((model.__doc__ or "").split())
        if doc:
            out.append(f"{doc}\n")
        out.append("| field | type | default | description |")
        out.append("|---|---|---|---|")
        for name, info in model.model_fields.items():
            out.append(
                f"| `{name}` | {type_name(info.annotation, metadata=info.metadata)} | "
                f"{_default(info)} | "
                f"{description(model, name, info)} |"
            )
        out.append("")
    out.append(variants_table())
    return "\n".join(out)


def variants_table() -> str:
    """Every registered TCP variant (`tcp.variant`) with the traits its class declares."""
    out = [
        "### TCP variants\n",
        "The values of `tcp.variant`, each with what the engine runs for it: the loss "
        "recovery without SACK, whether SACK applies, the slow start when `tcp.slow_start` "
        "is left out, whether its rate follows loss (the Mathis bound of the diagnosis), "
        "the window it keeps on a loss, and the series it adds to `flow.<id>.*`.\n",
        "| variant | what it is | recovery | SACK | slow start | loss-based | "
        "decrease on loss | series |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names():
        cls = variant(name)
        spec = TcpSpec(variant=name, sack=True)
        if cls.implies_sack:
            sack = "always"
        elif cls.sack_recovery(spec):
            sack = "with `tcp.sack`"
        else:
            sack = "no effect"
        slow_start = "its own" if cls.own_slow_start else f"`{cls.default_slow_start}`"
        decrease = f"{cls.decrease_factor(spec):g}" if cls.loss_based and cls.limits_window else "-"
        series = ", ".join(f"`{n}`" for n, _ in cls.traces) or "-"
        out.append(
            f"| `{name}` | {cls.summary} | `{cls.recovery.name}` | {sack} | {slow_start} | "
            f"{_loss_based(cls)} | {decrease} | {series} |"
        )
    out.append("")
    return "\n".join(out)


def render(text: str) -> str:
    """`text` (docs/scenario.md) with its generated part rewritten."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{reference()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if "--write" in argv:
        DOC.write_text(render(DOC.read_text()))
        return 0
    sys.stdout.write(reference())
    return 0


def _loss_based(cls: type[CongestionOps]) -> str:
    if not cls.limits_window:
        return "timeouts only"
    return "yes" if cls.loss_based else "no"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
