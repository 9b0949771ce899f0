"""Packet captures (engine/capture.py): the scenario's `capture` checks, the libpcap file
read back field by field, and Wireshark's own reading of it (tshark): its packet count is
the link's, its TCP analysis finds the engine's retransmissions, and in a window-limited
transfer never more bytes in flight than the receive window."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
import yaml
from engine_helpers import IP_TCP, bulk, cbr, one_link, run, script_loss, ser
from pydantic import ValidationError
from tshark import count, expert_problems, fields, require_tshark

from engine import Scenario, load_scenario, simulate
from engine.analysis import estimate
from engine.capture import isn, node_address
from engine.net import wire_bytes
from engine.presets import preset_text

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY = 1_000_000.0, 0.01


# --- a reader of our own, independent of the writer -----------------------------------------


def read_pcap(data: bytes) -> tuple[dict, list[dict]]:
    magic, major, minor, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", data)
    header = {"magic": magic, "version": (major, minor), "snaplen": snaplen, "linktype": linktype}
    packets, at = [], 24
    while at < len(data):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", data, at)
        body = data[at + 16 : at + 16 + incl]
        at += 16 + incl
        ip = struct.unpack_from("!BBHHHBBH4s4s", body)
        p = {
            "t": sec + nsec * 1e-9,
            "incl": incl,
            "orig": orig,
            "total": ip[2],
            "ttl": ip[5],
            "proto": ip[6],
            "src": ip[8],
            "dst": ip[9],
            "ip_sum_ok": _ones(body[:20]) == 0xFFFF,
        }
        if ip[6] == 6:
            sport, dport, seq, ack, off, flags, win = struct.unpack_from("!HHIIBBH", body, 20)
            p.update(
                sport=sport,
                dport=dport,
                seq=seq,
                ack=ack,
                flags=flags,
                win=win,
                options=body[40 : 20 + (off >> 4) * 4],
                payload=ip[2] - 20 - (off >> 4) * 4,
            )
        else:
            sport, dport, length, _ = struct.unpack_from("!HHHH", body, 20)
            p.update(sport=sport, dport=dport, payload=length - 8)
        packets.append(p)
    return header, packets


def _ones(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def lossy_link(**capture) -> Scenario:
    """h1 -> h2 over one 1 Mb/s, 10 ms link `wan`: 50 segments after a handshake, the 10th
    data packet dropped; both directions captured."""
    doc = one_link(
        flows=[bulk(nbytes=50 * MSS, handshake=True, variant="newreno")],
        rate=RATE,
        delay=DELAY,
        loss=script_loss(9),
    ).model_dump(mode="json")
    doc["capture"] = [{"link": "wan", "direction": "both", "max_packets": 1000, **capture}]
    return Scenario.model_validate(doc)


def preset_doc(name: str) -> dict:
    return yaml.safe_load(preset_text(name))


def preset(name: str, capture: list[dict]) -> Scenario:
    return load_scenario({**preset_doc(name), "capture": capture})


# --- the scenario's `capture` ---------------------------------------------------------------


def _errors(doc: dict) -> list[tuple]:
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(doc)
    return [(e["loc"], e["type"]) for e in info.value.errors()]


def test_captures_name_links_and_flows_that_exist() -> None:
    doc = lossy_link().model_dump(mode="json")
    doc["capture"] = [
        {"link": "nope", "direction": "both", "max_packets": 10},
        {"link": "wan", "direction": "a_to_b", "max_packets": 10, "flows": ["x"]},
    ]
    assert _errors(doc) == [
        (("capture", 0, "link"), "unknown_link"),
        (("capture", 1, "flows", 0), "unknown_flow"),
    ]


def test_a_link_direction_is_captured_once() -> None:
    doc = lossy_link().model_dump(mode="json")
    doc["capture"] = [
        {"link": "wan", "direction": "both", "max_packets": 10},
        {"link": "wan", "direction": "b_to_a", "max_packets": 10},
    ]
    assert _errors(doc) == [(("capture", 1, "direction"), "duplicate_capture")]
    doc["capture"][0]["direction"] = "a_to_b"
    Scenario.model_validate(doc)  # the two directions apart are fine


def test_captures_are_bounded() -> None:
    doc = lossy_link().model_dump(mode="json")
    doc["capture"] = [{"link": "wan", "direction": "both", "max_packets": 100_001}]
    assert _errors(doc)[0][0] == ("capture", 0, "max_packets")
    doc["links"] += [{**doc["links"][0], "id": "m"}, {**doc["links"][0], "id": "n"}]
    doc["capture"] = [
        {"link": k, "direction": "both", "max_packets": 100_000} for k in ("wan", "m", "n")
    ]
    assert _errors(doc) == [(("capture",), "too_many_packets")]
    # 100,000 whole 1,500 B packets and their record headers: 151.6 MB > 64 MiB.
    doc["capture"] = [
        {"link": "wan", "direction": "both", "max_packets": 100_000, "snaplen": 65535}
    ]
    assert _errors(doc) == [(("capture",), "capture_too_large")]


def test_scenarios_without_captures_keep_their_hash() -> None:
    plain = Scenario.model_validate({**lossy_link().model_dump(mode="json"), "capture": []})
    assert '"capture"' not in plain.canonical_json()
    assert lossy_link().scenario_hash() != plain.scenario_hash()


def test_the_estimate_counts_captured_packets() -> None:
    scenario = lossy_link()
    est = estimate(scenario)
    result = run(scenario)
    real = result.captures[0].packets
    assert real / 2 <= est["capture_packets"] <= 2 * real
    assert est["capture_bytes"] >= 24 + real * (16 + 96) * 0.5
    assert estimate(lossy_link(max_packets=5))["capture_packets"] == 5


# --- the file, read back --------------------------------------------------------------------


def test_the_file_holds_what_went_onto_the_link() -> None:
    scenario = lossy_link()
    result = run(scenario)
    data = result.pcap("wan", "both")
    summary = result.captures[0]
    assert summary.sha256 == hashlib.sha256(data).hexdigest() and summary.bytes == len(data)
    header, packets = read_pcap(data)
    assert header == {"magic": 0xA1B23C4D, "version": (2, 4), "snaplen": 96, "linktype": 101}
    # h1's interface: all it sent (the dropped segment too: it was sent), and all h2 sent
    # but the last ACK, which leaves h2 as the last byte arrives, when the run ends.
    sent = result.links["wan:h1>h2"].packets + result.links["wan:h2>h1"].packets
    assert len(packets) == summary.packets == sent - 1 and summary.missed == 0
    assert [p["t"] for p in packets] == sorted(p["t"] for p in packets)
    assert packets[-1]["t"] <= result.sim_time

    a, b = node_address("h1"), node_address("h2")
    syn, synack, first = packets[0], packets[1], packets[2]
    isn_a, isn_b = isn("f", "src"), isn("f", "dst")
    assert (syn["src"], syn["dst"], syn["sport"], syn["dport"]) == (a, b, 49152, 9)
    assert syn["flags"] == 0x02 and syn["seq"] == isn_a and syn["total"] == IP_TCP + 12
    assert syn["options"][:4] == struct.pack("!BBH", 2, 4, MSS)
    # The SYN-ACK leaves h2 as the SYN arrives and reaches h1 one round trip of 52 B
    # packets after the SYN left: two serialisations and two delays.
    assert synack["t"] == pytest.approx(2 * (ser(wire_bytes("ppp", 52), RATE) + DELAY), abs=1e-9)
    assert synack["flags"] == 0x12 and synack["seq"] == isn_b and synack["ack"] == isn_a + 1
    assert (synack["src"], synack["sport"], synack["dport"]) == (b, 9, 49152)
    assert first["seq"] == isn_a + 1 and first["ack"] == isn_b + 1 and first["payload"] == MSS
    for p in packets:
        assert p["ip_sum_ok"] and p["ttl"] == 64  # no router on the way
        assert p["orig"] == p["total"] and p["incl"] == min(p["orig"], 96)
    # Every data byte is sent once, the dropped one twice: the sequence space is whole.
    data_seqs = [p["seq"] - isn_a - 1 for p in packets if p["src"] == a and p["payload"]]
    assert sorted(set(data_seqs)) == [k * MSS for k in range(50)]
    assert len(data_seqs) == 50 + result.flows["f"].retransmissions


def test_captures_are_deterministic_and_cut_at_max_packets() -> None:
    full = run(lossy_link())
    assert run(lossy_link()).pcap("wan", "both") == full.pcap("wan", "both")
    cut = run(lossy_link(max_packets=10))
    summary = cut.captures[0]
    # Missed: the rest, and the last ACK (still on its way when the run ends).
    assert summary.packets == 10 and summary.missed == full.captures[0].packets + 1 - 10
    data = cut.pcap("wan", "both")
    assert len(read_pcap(data)[1]) == 10 and full.pcap("wan", "both")[: len(data)] == data


def test_one_direction_and_a_flow_filter() -> None:
    doc = one_link(
        flows=[bulk(nbytes=20 * MSS), cbr(rate=64_000, packet_size=160, stop=1.0)],
        rate=RATE,
        delay=DELAY,
    ).model_dump(mode="json")
    doc["capture"] = [{"link": "wan", "direction": "a_to_b", "flows": ["u"], "max_packets": 1000}]
    result = simulate(Scenario.model_validate(doc))
    _, packets = read_pcap(result.pcap("wan", "a_to_b"))
    # 64 kb/s of 160 B datagrams for 1 s: 50, each 8 + 160 B of UDP.
    assert len(packets) == result.flows["u"].packets_sent == 50
    assert {(p["proto"], p["sport"], p["dport"], p["payload"]) for p in packets} == {
        (17, 49153, 9, 160)
    }


# --- Wireshark's reading (tshark) -----------------------------------------------------------


@pytest.fixture(scope="module")
def drops_reno(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """riverbed-drops-reno (30 MB, Reno, random drops in the cloud) captured at the
    sender's first link, both directions."""
    require_tshark()
    result = simulate(
        preset(
            "riverbed-drops-reno", [{"link": "lan1", "direction": "both", "max_packets": 100_000}]
        )
    )
    path = tmp_path_factory.mktemp("pcap") / "drops-reno.pcap"
    path.write_bytes(result.pcap("lan1", "both"))
    return path, result


def test_tshark_reads_the_lossy_capture_whole(drops_reno) -> None:
    path, result = drops_reno
    assert expert_problems(path) == 0
    sent = result.links["lan1:ws>branch"].packets + result.links["lan1:branch>ws"].packets
    assert count(path) == result.captures[0].packets == sent
    # ws's packets leave it here; the server's ACKs crossed dc, cloud and branch.
    ttl = {tuple(row) for row in fields(path, "ip", "ip.src", "ip.ttl")}
    ws, server = (".".join(map(str, node_address(n))) for n in ("ws", "server"))
    assert ttl == {(ws, "64"), (server, "61")}


def test_tshark_finds_the_engines_retransmissions(drops_reno) -> None:
    path, result = drops_reno
    backup = result.flows["backup"]
    assert backup.retransmissions > 100  # p = 0.0065 over ~20,500 segments
    assert (
        count(path, "tcp.analysis.retransmission || tcp.analysis.fast_retransmission")
        == backup.retransmissions
    )
    assert count(path, "tcp.analysis.fast_retransmission") == backup.fast_retransmits
    assert (
        count(
            path,
            "tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order"
            " || tcp.analysis.lost_segment",
        )
        == 0
    )


def _flight(path: Path) -> list[int]:
    return [
        int(v[0])
        for v in fields(path, "tcp.analysis.bytes_in_flight", "tcp.analysis.bytes_in_flight")
    ]


def test_tshark_never_sees_more_in_flight_than_the_receive_window(tmp_path: Path) -> None:
    require_tshark()
    result = simulate(
        preset("riverbed-t1-64k", [{"link": "lan1", "direction": "both", "max_packets": 100_000}])
    )
    path = tmp_path / "t1-64k.pcap"
    path.write_bytes(result.pcap("lan1", "both"))
    assert result.flows["backup"].retransmissions == 0 and expert_problems(path) == 0
    flight = _flight(path)
    # Window-limited: the flight fills the 65,535 B window to within a segment, never over.
    assert 65535 - MSS < max(flight) <= 65535


def test_tshark_applies_the_negotiated_window_scale(tmp_path: Path) -> None:
    require_tshark()
    result = simulate(
        preset(
            "riverbed-t1-200k-ws", [{"link": "lan1", "direction": "both", "max_packets": 100_000}]
        )
    )
    path = tmp_path / "t1-200k.pcap"
    path.write_bytes(result.pcap("lan1", "both"))
    # 200,000 B needs shift 2 (RFC 7323 2.3: 200,000 >> 2 = 50,000 fits 16 bits).
    acks = fields(
        path,
        "tcp.srcport == 9 && tcp.flags.syn == 0",
        "tcp.window_size_value",
        "tcp.window_size",
        "tcp.window_size_scalefactor",
    )
    assert {tuple(a) for a in acks} == {("50000", "200000", "4")}
    assert 200_000 - MSS < max(_flight(path)) <= 200_000


def test_tshark_reads_sack_blocks_udp_and_checksums(tmp_path: Path) -> None:
    require_tshark()
    doc = preset_doc("riverbed-drops-reno")
    flow = doc["flows"][0]
    flow["bytes"] = 3_000_000
    flow["tcp"].update(variant="sack", rcv_buf=200_000, window_scaling=True)
    doc["links"][2]["loss"]["rate"] = 0.02
    doc["flows"].append(
        {
            "id": "voice",
            "kind": "udp_cbr",
            "src": "ws",
            "dst": "server",
            "rate": "64kbps",
            "packet_size": 160,
            "start": "1s",
            "stop": "5s",
        }
    )
    doc["capture"] = [{"link": "lan1", "direction": "both", "max_packets": 50_000, "snaplen": 200}]
    result = simulate(load_scenario(doc))
    path = tmp_path / "sack.pcap"
    path.write_bytes(result.pcap("lan1", "both"))
    assert expert_problems(path) == 0
    assert (
        count(path, "tcp.analysis.retransmission || tcp.analysis.fast_retransmission")
        == result.flows["backup"].retransmissions
        > 0
    )
    # SACK blocks (relative numbers) lie above the cumulative ACK and hold whole segments.
    blocks = fields(
        path, "tcp.options.sack_le", "tcp.ack", "tcp.options.sack_le", "tcp.options.sack_re"
    )
    assert blocks
    for ack, les, res in blocks:
        for le, re in zip(les.split(","), res.split(","), strict=True):
            assert int(ack) < int(le) < int(re) and (int(re) - int(le)) % MSS == 0
    # 64 kb/s of 160 B payloads from 1 s to 5 s: 200 datagrams of 8 + 160 B.
    assert fields(path, "udp", "udp.length") == [["168"]] * 200
    # Checksums, verified: 0 is Wireshark's "bad"; data segments cut at snaplen stay unverified.
    options = (
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
    )
    status = fields(
        path,
        "ip",
        "ip.checksum.status",
        "tcp.checksum.status",
        "udp.checksum.status",
        options=options,
    )
    assert all("0" not in row for row in status)
    assert (
        sum(row[1] == "1" for row in status) > 1000 and sum(row[2] == "1" for row in status) == 200
    )


def test_engine_cli_writes_the_captures(tmp_path: Path) -> None:
    from engine.cli import main

    scenario = tmp_path / "s.json"
    scenario.write_text(lossy_link(direction="a_to_b").model_dump_json())
    assert main(["run", str(scenario), "--pcap-dir", str(tmp_path / "out")]) == 0
    data = (tmp_path / "out" / "wan-a_to_b.pcap").read_bytes()
    assert data == simulate(lossy_link(direction="a_to_b")).pcap("wan", "a_to_b")


def test_capturing_changes_nothing_simulated() -> None:
    captured = run(lossy_link())
    plain = run(Scenario.model_validate({**lossy_link().model_dump(mode="json"), "capture": []}))
    assert plain.captures == [] and plain.pcap("wan", "both") is None
    for part in ("flows", "links", "events", "sim_time", "series", "diagnosis"):
        assert getattr(captured, part) == getattr(plain, part), part


def test_the_capturing_end() -> None:
    ends = {d: lossy_link(direction=d).capture[0].at for d in ("a_to_b", "b_to_a", "both")}
    assert ends == {"a_to_b": "a", "b_to_a": "b", "both": "a"}  # the sender's side
    sent = run(lossy_link(direction="a_to_b"))
    got = run(lossy_link(direction="a_to_b", at="b"))
    _, leaving = read_pcap(sent.pcap("wan", "a_to_b"))
    _, arriving = read_pcap(got.pcap("wan", "a_to_b"))
    # h2 sees all h1 sent but the dropped segment, each a 1500 B serialisation and the
    # delay after it left h1.
    assert len(arriving) == len(leaving) - 1 == got.captures[0].packets
    left = {
        (q["seq"], round(q["t"] - ser(wire_bytes("ppp", q["total"]), RATE) - DELAY, 6))
        for q in arriving
    }
    lost = [p for p in leaving if (p["seq"], round(p["t"], 6)) not in left]
    assert len(lost) == 1 and lost[0]["seq"] == isn("f", "src") + 1 + 9 * MSS


def test_timestamps_are_on_every_segment_after_the_handshake() -> None:
    """With `timestamps`, data and ACKs carry NOP, NOP and the 10-byte option (RFC 7323 3.2),
    so the file's lengths stay the engine's: 1,448 B of payload in a 1,500 B datagram, 52 B
    ACKs; an ACK's TSecr is the TSval of the segment it echoes, on a 1 ms clock."""
    doc = lossy_link().model_dump(mode="json")
    doc["flows"][0]["tcp"].update(timestamps=True, sack=True)
    result = run(Scenario.model_validate(doc))
    _, packets = read_pcap(result.pcap("wan", "both"))
    a = node_address("h1")
    data = [p for p in packets[2:] if p["src"] == a]
    acks = [p for p in packets[2:] if p["src"] != a]
    assert {(p["total"], p["payload"]) for p in data[:-1]} == {(1500, 1448)}
    assert {p["options"][:4] for p in packets[2:]} == {b"\x01\x01\x08\x0a"}
    assert {p["total"] for p in acks if len(p["options"]) == 12} == {52}
    assert any(len(p["options"]) > 12 for p in acks)  # SACK blocks after the loss
    sent = {struct.unpack_from("!I", p["options"], 4)[0] for p in data}
    echoed = {struct.unpack_from("!I", p["options"], 8)[0] for p in acks}
    assert echoed <= sent and len(echoed) > 10
