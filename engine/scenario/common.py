"""The vocabulary every part of a scenario shares: the limits that keep any request bounded,
ids, the error collector that reports cross-field problems at their paths, the base model."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from engine.units import ByteSize, Duration, Rate

# Ids appear in dotted parameter paths ("flows.backup.tcp.rcv_buf") and series keys
# ("link.access1.branch>cloud"), so they cannot contain dots, '>' or ':'.
Id = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
]
PositiveDuration = Annotated[Duration, Field(gt=0)]
# Integers stay exact in every JSON reader (doubles) and fit the 64-bit JSON encoders and
# databases we store scenarios with; beyond, a request would be an overflow, not a network.
MAX_INT = 2**53
Count = Annotated[int, Field(le=MAX_INT)]
PositiveByteSize = Annotated[ByteSize, Field(gt=0, le=MAX_INT)]
# At least 1 bit/s: below it nothing a run can hold is carried (a 64 KiB datagram takes six
# days at 1 bit/s), and rates such as 1e-320 bit/s overflow the arithmetic of every
# transmission to infinity; they are refused where they are written, not simulated.
MIN_RATE = 1.0
PositiveRate = Annotated[Rate, Field(ge=MIN_RATE)]


def not_a_bool(value: Any) -> Any:
    """JSON's `true` and `false` are not numbers, whatever Python's bool is a subclass of."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer, not true or false")
    return value


#: Seeds are below this: 64-bit, and a bound a double states exactly, so the OpenAPI
#: document (whose bounds are doubles) gives the server's own.
SEED_END = 2**63
#: A run's seed.
Seed = Annotated[int, Field(ge=0, lt=SEED_END), BeforeValidator(not_a_bool)]
Probability = Annotated[float, Field(ge=0, le=1)]

MAX_ITEMS = 10_000  # per list: keeps validation and routing bounded for any request
# Packet captures are kept in memory until the run ends and stored with its result: these
# bound one capture, all of a run's, and the file bytes they can make (headers + snaplen).
MAX_CAPTURE_PACKETS = 100_000
MAX_CAPTURE_TOTAL = 200_000
MAX_CAPTURE_BYTES = 64 * 2**20
MAX_CAPTURES = 16
PCAP_FILE_HEADER = 24  # libpcap's file header (engine.capture writes both)
PCAP_RECORD_HEADER = 16  # libpcap's per-packet header


class _Errors:
    """Line errors with their own `loc`, raised together as one ValidationError."""

    def __init__(self, title: str) -> None:
        """Start an empty collection for the model named `title`."""
        self.title = title
        self.lines: list[InitErrorDetails] = []

    def add(self, loc: tuple[str | int, ...], error_type: str, message: str, value: Any) -> None:
        """Record an error of `error_type` at `loc` (relative to the model validated)."""
        self.lines.append(
            {"type": PydanticCustomError(error_type, message), "loc": loc, "input": value}
        )

    def raise_if_any(self) -> None:
        """Raise the recorded errors; pydantic prefixes each loc with the model's own path."""
        if self.lines:
            raise ValidationError.from_exception_data(self.title, self.lines)


class _Model(BaseModel):
    """Base of every scenario model: unknown fields are errors, docstrings document fields."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)
