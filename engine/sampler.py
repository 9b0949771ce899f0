"""`simulate()`'s `RateSampler`: the rate series (goodput per TCP flow, utilisation per
port) sampled every `sample_interval`, read natively from the compiled flows and ports. Its
own module: it reads `TcpFlow` and `Egress`, which themselves use the recorder's probes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from engine.flows import TcpFlow
from engine.net import Egress
from engine.trace import Trace

SAMPLER_BLOCK: Final = 64  # beats read before they become points: bounded memory, numpy per block
#: A block is SAMPLER_BLOCK beats, or more when its rows are narrow, up to this many values:
#: each block costs a dozen numpy calls per series whatever its length (a one-flow run of
#: 200 s flushed 32 times, 5.6 M instructions, 2% of the run).
SAMPLER_VALUES: Final = 4096


class RateSampler:
    """The rate series sampled every `interval`: goodput per TCP flow, utilisation per port.

    A beat only reads each flow's delivered bytes and each port's busy time into a row,
    appended to plain lists; every SAMPLER_BLOCK beats, and on `flush()`, numpy turns the
    rows into rates and each series takes its points in one call. Values and thinning are
    those of sampling each series point by point: the same IEEE operations on the same
    numbers, appended in the same order.
    """

    def __init__(
        self,
        interval: float,
        flows: Sequence[TcpFlow],
        goodput: list[Trace],
        ports: Sequence[Egress],
    ):
        self.interval = interval
        # TcpFlow objects, and their goodput traces in the same order. Typed as the
        # compiled classes they are, so that a beat reads each counter natively.
        self.flows: list[TcpFlow] = list(flows)
        self.goodput = goodput
        self.ports: list[Egress] = list(ports)
        self.utilization: list[Trace] = []
        for port in ports:  # once per run
            assert port.probe is not None  # simulate() gives every port a probe
            self.utilization.append(port.probe.utilization)
        # The row before the block's first (at first, zeros).
        self.last_bytes: list[int] = [0] * len(self.flows)
        self.last_busy: list[float] = [0.0] * len(self.ports)
        # A block of beats, one row each, in flat lists: appending to a list is a native
        # call, where an array's append parsed each number with a format string (680
        # instructions an item; 9,000 items a beat at 1,000 flows).
        self._t: list[float] = []
        self._delivered: list[int] = []
        self._busy: list[float] = []
        self._beats = 0
        # Which beat flushes: the block's length (the points are the same whatever it is).
        self.block = max(SAMPLER_BLOCK, SAMPLER_VALUES // max(1, len(flows) + len(ports)))

    def beat(self, now: float) -> None:
        self._t.append(now)
        delivered = self._delivered
        for flow in self.flows:
            delivered.append(flow.delivered_bytes)
        busy = self._busy
        for port in self.ports:
            # Egress.busy_time(now), as np.maximum(0.0, x) computes each max (NaN too).
            wait = port.busy_until - now
            done = port.busy_total - (0.0 if wait <= 0.0 else wait)
            busy.append(0.0 if done <= 0.0 else done)
        self._beats += 1
        if self._beats >= self.block:
            self.flush()

    def flush(self) -> None:
        """Turn the beats read so far into points of every series."""
        k = self._beats
        if not k:
            return
        t = np.fromiter(self._t, np.float64, k)
        delivered_row, busy_row = self._delivered, self._busy
        self._t, self._delivered, self._busy = [], [], []
        interval = self.interval
        # Each row less the one before it (the last row of the block before, for the
        # first): one array of the rows after that last one, and two views of it shifted
        # by a row, elementwise as stacked rows would be.
        if self.flows:
            width = len(self.flows)
            rows = np.fromiter(self.last_bytes + delivered_row, np.int64, (k + 1) * width)
            rates = ((rows[width:] - rows[:-width]) * 8 / interval).reshape(k, width)
            self.last_bytes = delivered_row[-width:]
            for j, trace in enumerate(self.goodput):
                trace.sample_block(t, rates[:, j])
        if self.ports:
            width = len(self.ports)
            rows = np.fromiter(self.last_busy + busy_row, np.float64, (k + 1) * width)
            ratios = ((rows[width:] - rows[:-width]) / interval).reshape(k, width)
            self.last_busy = busy_row[-width:]
            for j, trace in enumerate(self.utilization):
                trace.sample_block(t, ratios[:, j])
        self._beats = 0
