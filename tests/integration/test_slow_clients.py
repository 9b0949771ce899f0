"""Slow and idle clients are cut off (issue 27): a connection whose request headers have not
all arrived TCPFR_HEADER_TIMEOUT seconds after it opened (or after its previous response) is
closed, whether it sent part of them or nothing; a body that has not all arrived
TCPFR_BODY_TIMEOUT seconds after its headers gets a 408 problem+json and the connection is
closed. Meanwhile well-behaved requests are answered. (Loopback only, a bounded number of
sockets; the figures at 1,000 and 20,000 connections: bench/api_slow_clients.py.)"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from servicekit import Stack, free_port

TIMEOUT = 1.0  # both timeouts, seconds
#: A close well after the timeout is still a close: the bound asserted is the timeout's
#: order, not a latency (on a loaded CI machine a pass of the server's timers may lag).
SLACK = 6.0


@pytest.fixture(scope="module")
def strict_api(pg_stack: Stack) -> Iterator[Stack]:
    port = free_port()
    tmp = pg_stack.tmp / f"strict-{port}"
    tmp.mkdir()
    env = {
        **pg_stack.env,
        "PORT": str(port),
        "TCPFR_BODY_TIMEOUT": str(TIMEOUT),
        "TCPFR_RECONCILE_INTERVAL": "0",
    }
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    from api.serve import api_command
    from settings import Settings

    settings = Settings(_env_file=None, port=port, api_processes=1, header_timeout=TIMEOUT)
    try:
        stack.start("api", api_command(settings))
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def _open(port: int, payload: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if payload:
        sock.sendall(payload)
    sock.setblocking(False)
    return sock


def _wait_closed(socks: list[socket.socket], within: float) -> dict[int, bytes]:
    """What the server sent on each socket it closed, by index; stops at `within` seconds."""
    received = [b""] * len(socks)
    done: dict[int, bytes] = {}
    deadline = time.monotonic() + within
    while len(done) < len(socks) and time.monotonic() < deadline:
        for i, sock in enumerate(socks):
            while i not in done:
                try:
                    chunk = sock.recv(65536)
                except BlockingIOError:
                    break
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    done[i] = received[i]
                received[i] += chunk
        time.sleep(0.05)
    return done


def test_partial_and_missing_headers_are_cut_off_while_others_are_served(
    strict_api: Stack,
) -> None:
    port = int(strict_api.env["PORT"])
    socks = [_open(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow:") for _ in range(150)]
    socks += [_open(port, b"") for _ in range(50)]
    try:
        with strict_api.client as client:
            assert client.get("/healthz").status_code == 200  # served beside them
        done = _wait_closed(socks, TIMEOUT + SLACK)
        assert len(done) == len(socks), f"{len(socks) - len(done)} still open"
    finally:
        for sock in socks:
            sock.close()


def test_a_body_that_does_not_arrive_gets_a_408_and_the_connection_closes(
    strict_api: Stack,
) -> None:
    port = int(strict_api.env["PORT"])
    head = (
        b"POST /v1/scenarios/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        b'\r\nContent-Length: 100\r\n\r\n{"na'
    )
    socks = [_open(port, head) for _ in range(10)]
    try:
        done = _wait_closed(socks, TIMEOUT + SLACK)
        assert len(done) == len(socks), f"{len(socks) - len(done)} still open"
        for got in done.values():
            status, _, rest = got.partition(b"\r\n")
            assert status.startswith(b"HTTP/1.1 408"), got[:200]
            problem = json.loads(rest.partition(b"\r\n\r\n")[2])
            assert problem["status"] == 408
            assert problem["type"].endswith("request-timeout")
    finally:
        for sock in socks:
            sock.close()


def test_an_idle_keep_alive_connection_is_closed_after_the_timeout(strict_api: Stack) -> None:
    with httpx.Client(base_url=strict_api.base_url) as client:
        assert client.get("/healthz").status_code == 200
    sock = _open(int(strict_api.env["PORT"]), b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        done = _wait_closed([sock], TIMEOUT + SLACK)
        assert done and done[0].startswith(b"HTTP/1.1 200"), done
    finally:
        sock.close()
