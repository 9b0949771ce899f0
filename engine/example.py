"""The example scenario of the OpenAPI document ("Try it out" starts from it) and of
docs/scenario.md: small, valid, and a few seconds of simulated time, so it runs at once.
A test submits it to the API."""

from __future__ import annotations

from typing import Any

EXAMPLE_SCENARIO: dict[str, Any] = {
    "name": "example-t1-64k",
    "description": "A 1 MB transfer over a T1 with a 64 KiB receive window",
    "duration": "60s",
    "nodes": [
        {"id": "client", "kind": "host"},
        {"id": "branch", "kind": "router"},
        {"id": "server", "kind": "host"},
    ],
    "links": [
        {"id": "lan", "a": "client", "b": "branch", "rate": "100BaseT", "delay": "0.1ms"},
        {
            "id": "wan",
            "a": "branch",
            "b": "server",
            "rate": "T1",
            "delay": "40ms",
            "encap": "ppp",
            "queue": {"limit_packets": 50},
        },
    ],
    "flows": [
        {
            "id": "transfer",
            "kind": "tcp_bulk",
            "src": "client",
            "dst": "server",
            "bytes": "1MB",
            "tcp": {"variant": "newreno", "rcv_buf": "64KiB", "window_scaling": True},
        },
    ],
}
