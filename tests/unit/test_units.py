"""Parsing of durations, sizes and rates (engine.units)."""

import math

import pytest
from pydantic import BaseModel, ValidationError

from engine import units
from engine.units import (
    LINE_RATES,
    ByteSize,
    Duration,
    Rate,
    UnitError,
    format_duration,
    format_rate,
    format_size,
    parse_bits,
    parse_duration,
    parse_rate,
    parse_size,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5ms", 0.005),
        ("1.5s", 1.5),
        ("200us", 2e-4),
        ("200µs", 2e-4),
        ("2min", 120.0),
        ("1h", 3600.0),
        ("0.1ms", 1e-4),
        ("1.1ms", 0.0011),  # exact decimal scaling, not 0.0011000000000000001
        ("39 ms", 0.039),
        ("3600", 3600.0),
        ("1e-3s", 0.001),
        (0.2, 0.2),
        (3, 3.0),
        (0, 0.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds
    assert type(parse_duration(text)) is float


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("25MB", 25_000_000),
        ("64KiB", 65_536),
        ("8760", 8760),
        ("1.5kB", 1500),
        ("1MiB", 1_048_576),
        ("2 GB", 2_000_000_000),
        ("8 KB", 8000),  # K is the decimal kilo; binary sizes say KiB
        ("1.5e3B", 1500),
        (8760, 8760),
        (8760.0, 8760),
        (2**53, 2**53),  # ints stay exact, up to the largest size
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size
    assert type(parse_size(text)) is int


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("1.544Mbps", 1.544e6),
        ("512kbps", 512e3),
        ("512Kbps", 512e3),
        ("2Mb/s", 2e6),
        ("10 Mbit/s", 10e6),
        ("1 MB/s", 8e6),
        ("1Gbps", 1e9),
        ("T1", 1.544e6),
        ("E1", 2.048e6),
        ("T3", 44.736e6),
        ("E3", 34.368e6),
        ("OC3", 155.52e6),
        ("OC12", 622.08e6),
        ("DS0", 64e3),
        ("10BaseT", 10e6),
        ("100BaseT", 100e6),
        ("1000BaseT", 1e9),
        ("t1", 1.544e6),
        (" T3 ", 44.736e6),
        (1544000, 1.544e6),
        ("1544000", 1.544e6),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


def test_line_rate_table_is_read_only():
    with pytest.raises(TypeError):
        LINE_RATES["T1"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize(
    ("parse", "value", "message"),
    [
        (parse_duration, "5MB", "invalid duration '5MB': 'MB' is a size, not a duration"),
        (parse_rate, "5ms", "invalid rate '5ms': 'ms' is a duration, not a rate"),
        (parse_size, "1Mbps", "invalid size '1Mbps': 'Mbps' is a rate, not a size"),
        (parse_duration, "5 s s", "'s s' is in [time] ** 2, not a duration"),
        (parse_duration, -1, "duration must not be negative, got -1"),
        (parse_size, "-3kB", "size must not be negative, got '-3kB'"),
        (parse_duration, math.nan, "duration must be a finite number, got nan"),
        (parse_rate, math.inf, "rate must be a finite number, got inf"),
        (parse_duration, "1e999s", "duration '1e999s' is out of range"),
        (parse_duration, 10**400, "is out of range"),
        # Finite but past what a simulated clock, a byte count or a link can hold.
        (parse_duration, 1e308, "duration 1e+308 is out of range: at most 1e+09 s"),
        (parse_duration, "2e7 min", "is out of range: at most 1e+09 s"),
        (parse_rate, "2000Tbps", "is out of range: at most 1e+15 bit/s"),
        (parse_size, 2**60, "is out of range: at most 9.0072e+15 B"),
        (parse_size, "1.5B", "size must be a whole number of bytes, got '1.5B' = 1.5 B"),
        (parse_size, 0.5, "size must be a whole number of bytes, got 0.5 = 0.5 B"),
        (parse_size, "5 xyz", "invalid size '5 xyz': unknown unit 'xyz'"),
        (parse_rate, "fast", "invalid rate 'fast': expected e.g."),
        # An unknown unit lists the valid ones.
        (parse_rate, "5 Mbs", "rate units: bps, kbps, Mbps, Gbps"),
        (parse_rate, "T2", "line rates: DS0, T1, E1"),
        (parse_duration, "5 jiffies", "duration units: s, ms, us, ns, min, h"),
        (parse_size, "5 xyz", "size units: B, kB, MB, GB, KiB"),
        (parse_rate, "nan", "invalid rate 'nan'"),
        (parse_duration, "", "invalid duration ''"),
        (parse_duration, True, "expected a number or a string"),
        (parse_duration, None, "expected a number or a string"),
        (parse_duration, [1], "expected a number or a string"),
    ],
)
def test_invalid_values_are_rejected_with_a_clear_message(parse, value, message):
    with pytest.raises(UnitError) as excinfo:
        parse(value)
    assert message in str(excinfo.value)


class _Sample(BaseModel):
    delay: Duration
    size: ByteSize
    rate: Rate


def test_annotated_types_validate_to_plain_numbers():
    sample = _Sample(delay="200ms", size="64KiB", rate="T1")
    assert sample.model_dump() == {"delay": 0.2, "size": 65536, "rate": 1544000.0}
    assert sample.model_dump(mode="json") == {"delay": 0.2, "size": 65536, "rate": 1544000.0}


def test_annotated_type_errors_carry_the_field_path():
    with pytest.raises(ValidationError) as excinfo:
        _Sample(delay="5MB", size=1, rate=1)
    (error,) = excinfo.value.errors()
    assert error["loc"] == ("delay",)
    assert error["type"] == "duration_parsing"
    assert error["msg"] == "invalid duration '5MB': 'MB' is a size, not a duration"


def test_json_schema_shows_number_or_string_for_inputs_and_number_for_outputs():
    properties = _Sample.model_json_schema()["properties"]
    assert properties["delay"]["anyOf"] == [
        {"type": "number", "minimum": 0},
        {"type": "string"},
    ]
    assert "200ms" in properties["delay"]["examples"]
    assert properties["size"]["anyOf"][0]["type"] == "integer"
    assert "T1" in properties["rate"]["description"]
    output = _Sample.model_json_schema(mode="serialization")["properties"]
    assert output["rate"]["type"] == "number"
    assert "anyOf" not in output["rate"]


def test_formatting_helpers():
    assert format_size(65535) == "65,535 B"
    assert format_rate(1.544e6) == "1.544 Mbit/s"
    assert format_rate(512) == "512 bit/s"
    assert format_duration(0.2) == "200 ms"
    assert format_duration(583.2) == "583.2 s"


def test_plain_numbers_and_line_names_do_not_build_the_unit_registry():
    # The registry (and pint's ~0.2 s import) is only needed for strings with a unit.
    units._registry.cache_clear()
    units._unit_factor.cache_clear()
    assert (parse_size(8760), parse_duration("0.5"), parse_rate("T1")) == (8760, 0.5, 1.544e6)
    assert units._registry.cache_info().currsize == 0
    assert parse_duration("5ms") == 0.005
    assert units._registry.cache_info().currsize == 1


def test_overlong_unit_text_is_rejected_without_parsing():
    with pytest.raises(UnitError, match="unknown unit"):
        parse_duration("5 " + "s*" * 1000)


@pytest.mark.parametrize(
    ("value", "bits"),
    [
        (1544000, 1544000),
        ("1544000", 1544000),
        ("64kbit", 64000),
        ("8kB", 64000),
        ("1.544Mbit", 1544000),
        ("1KiB", 8192),
        (0, 0),
    ],
)
def test_bits_are_plain_numbers_or_sizes_with_units(value, bits):
    assert parse_bits(value) == bits


def test_pvc_bursts_take_units_and_plain_bits_stay_what_they_were():
    from engine.scenario import Pvc

    plain = Pvc(id="p", dlci=100, src="a", dst="b", cir="T1", bc=1544000, be=0)
    with_units = Pvc(id="p", dlci=100, src="a", dst="b", cir="T1", bc="193kB", be="0bit")
    assert plain.bc == with_units.bc == 1544000 and plain.be == with_units.be == 0
    assert plain.model_dump(mode="json") == with_units.model_dump(mode="json")
    with pytest.raises(ValueError, match="bits must be a whole number"):
        Pvc(id="p", dlci=100, src="a", dst="b", cir="T1", bc="1.5bit")
    with pytest.raises(ValueError, match="size units"):
        Pvc(id="p", dlci=100, src="a", dst="b", cir="T1", be="3 parsecs")
