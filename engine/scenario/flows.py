"""What runs over the network: TCP bulk transfers, UDP constant-bit-rate streams, packet
captures, and the `Flow` union tagged by `kind`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from engine.scenario.common import (
    MAX_CAPTURE_PACKETS,
    MAX_ITEMS,
    Id,
    PositiveByteSize,
    PositiveRate,
    _Errors,
    _Model,
)
from engine.scenario.tcp import TcpSpec
from engine.units import ByteSize, Duration, format_duration


class _FlowBase(_Model):
    """Fields every flow has."""

    id: Id
    src: str
    """Sending host."""
    dst: str
    """Receiving host."""
    start: Duration = 0.0
    """When the flow starts, in simulated time."""
    stop: Duration | None = None
    """When the flow stops sending; None means at the end of the run."""

    @model_validator(mode="after")
    def _check_times(self) -> _FlowBase:
        """A flow stops after it starts."""
        errors = _Errors(type(self).__name__)
        if self.stop is not None and self.stop <= self.start:
            errors.add(
                ("stop",),
                "invalid_range",
                f"stop {format_duration(self.stop)} must be after start "
                f"{format_duration(self.start)}",
                self.stop,
            )
        errors.raise_if_any()
        return self


class TcpBulkFlow(_FlowBase):
    """An FTP-like bulk transfer over TCP."""

    kind: Literal["tcp_bulk"]
    bytes: PositiveByteSize | None = None
    """File size; None means unlimited until stop or the end of the run."""
    tcp: TcpSpec = Field(default_factory=TcpSpec)


class UdpCbrFlow(_FlowBase):
    """Constant-bit-rate UDP traffic."""

    kind: Literal["udp_cbr"]
    rate: PositiveRate
    """Sending rate of UDP payload."""
    packet_size: Annotated[ByteSize, Field(ge=1, le=65507)] = 512
    """UDP payload bytes per datagram."""


class CaptureSpec(_Model):
    """A packet capture of a link, as a capture on one end's interface would see it, served
    as a libpcap file that Wireshark reads (`GET /v1/runs/{id}/pcap?link=...&direction=...`).

    A packet leaving the capturing end is recorded when its transmission starts, after its
    egress queue (packets the queue drops were never sent), whether or not the link then
    loses it; a packet arriving there is recorded when its last bit has arrived (packets
    lost on the link never arrive). Headers are real IPv4 and TCP/UDP: see "Packet
    captures" in docs/scenario.md for the addresses, ports and sequence numbers."""

    link: str
    """Id of the link captured."""
    direction: Literal["a_to_b", "b_to_a", "both"]
    """`a_to_b`: packets from the link's `a` node to its `b` node; `b_to_a` the reverse;
    `both`: the two directions in one file, in time order (what Wireshark's TCP analysis
    needs: a flow's data and its ACKs)."""
    at: Literal["a", "b"] | None = None
    """The end of the link whose interface is captured; None means the sending end of a
    one-way capture (`a` for a_to_b, `b` for b_to_a) and `a` for both."""
    flows: list[str] | None = Field(default=None, max_length=MAX_ITEMS)
    """Only these flows' packets; None means every flow's."""
    max_packets: int = Field(ge=1, le=MAX_CAPTURE_PACKETS)
    """The first this many packets are kept; the run's result counts the ones after."""
    snaplen: int = Field(default=96, ge=80, le=65535)
    """Bytes kept of each packet, IP header first (80 keeps every IPv4 + TCP header whole);
    the payload is zeros and each record keeps the packet's original length."""

    @model_validator(mode="after")
    def _default_end(self) -> CaptureSpec:
        """Name the capturing end when it was left out, so equal captures hash alike."""
        if self.at is None:
            self.at = "b" if self.direction == "b_to_a" else "a"
        return self


# pydantic's own error types; rebuilding one of them by name regenerates its message.
_KNOWN_ERROR_TYPES = frozenset(get_args(core_schema.ErrorType))


def _without_union_tag(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Drop the union tag from error locs: `flows.0.bytes`, not `flows.0.tcp_bulk.bytes`.

    Paths in errors then match the document the client sent (and our own whole-scenario
    errors), which is what problem+json reports.
    """
    try:
        return handler(value)
    except ValidationError as exc:
        tag = value.get("kind") if isinstance(value, Mapping) else getattr(value, "kind", None)
        lines: list[InitErrorDetails] = []
        for error in exc.errors():
            loc = error["loc"]
            if tag is not None and loc[:1] == (tag,):
                loc = loc[1:]
            line: InitErrorDetails
            if error["type"] in _KNOWN_ERROR_TYPES:
                line = {"type": error["type"], "loc": loc, "input": error["input"]}
                if "ctx" in error:
                    line["ctx"] = error["ctx"]
            else:
                error_type = PydanticCustomError(error["type"], error["msg"])
                line = {"type": error_type, "loc": loc, "input": error["input"]}
            lines.append(line)
        raise ValidationError.from_exception_data(exc.title, lines) from None


Flow = Annotated[
    Annotated[TcpBulkFlow | UdpCbrFlow, Field(discriminator="kind")],
    WrapValidator(_without_union_tag),
]
