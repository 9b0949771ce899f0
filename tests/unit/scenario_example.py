"""The example scenario of SCENARIO.md and the helpers the scenario tests share to read
its validation errors."""

import copy

import pytest
import yaml
from pydantic import ValidationError

from engine.scenario import Scenario

# The example of SCENARIO.md, as a client would write it.
EXAMPLE_YAML = """
name: riverbed-t1-8k
description: "WAN backup over a T1 Frame Relay PVC"
seed: 1
duration: 3600s
stop_when_done: true
sample_interval: 100ms
nodes:
  - {id: ws, kind: host}
  - {id: branch, kind: router}
  - {id: cloud, kind: fr_switch}
  - {id: dc, kind: router}
  - {id: server, kind: host}
links:
  - id: lan1
    a: ws
    b: branch
    rate: 10BaseT
    delay: 0.1ms
    encap: ethernet
    mtu: 1500
    queue: {discipline: droptail, limit_packets: 100}
    loss: {model: none}
  - {id: access1, a: branch, b: cloud, rate: T1, delay: 39ms, encap: frame_relay}
  - {id: access2, a: cloud, b: dc, rate: T1, delay: 39ms, encap: frame_relay}
  - {id: lan2, a: dc, b: server, rate: 10BaseT, delay: 0.1ms, encap: ethernet}
frame_relay:
  switch: {congestion_threshold: 0.5, de_discard_threshold: 0.75}
  pvcs:
    - {id: pvc1, dlci: 100, src: branch, dst: dc, cir: 1.544Mbps, bc: 1544000, be: 0}
flows:
  - id: backup
    kind: tcp_bulk
    src: ws
    dst: server
    start: 0s
    bytes: 25MB
    tcp:
      variant: reno
      mss: 1460
      rcv_buf: 8760
      snd_buf: 8760
      window_scaling: false
      initial_cwnd: 1
      delayed_ack: {enabled: true, count: 2, timeout: 200ms}
      min_rto: 1s
      handshake: true
  - {id: cross, kind: udp_cbr, src: ws, dst: server, rate: 256kbps, packet_size: 512,
     start: 10s, stop: 60s}
"""
EXAMPLE = yaml.safe_load(EXAMPLE_YAML)


def example(**changes) -> dict:
    """A deep copy of the example with top-level fields replaced."""
    data = copy.deepcopy(EXAMPLE)
    data.update(changes)
    return data


def errors_of(data: dict) -> list[dict]:
    """The validation errors of `data` (which must be invalid)."""
    with pytest.raises(ValidationError) as excinfo:
        Scenario.model_validate(data)
    return excinfo.value.errors(include_url=False)


def only_error(data: dict) -> dict:
    """The single validation error of `data`."""
    errors = errors_of(data)
    assert len(errors) == 1, errors
    return errors[0]
