"""The RFC 5681 family: Tahoe, Reno, NewReno and ns-2's Sack1. One window growth
(`RenoGrowth`: slow start, then one segment per round trip, halved on a loss); the
variants differ in how they recover from a loss (engine.tcp.recovery):

- `tahoe`: fast retransmit, then slow start from one segment (4.3BSD-Tahoe, ns-2's
  Agent/TCP);
- `reno`: RFC 5681 fast recovery, which ends on the first ACK of new data;
- `newreno`: RFC 6582, in recovery until everything sent before the loss is acknowledged;
- `sack`: ns-2's Sack1, Reno's window with RFC 6675 SACK recovery (the receiver SACKs
  whatever `tcp.sack` says).
"""

from __future__ import annotations

from engine.tcp.cc.base import RenoGrowth
from engine.tcp.recovery.reno import NewRenoRecovery, RenoRecovery, TahoeRecovery
from engine.tcp.recovery.sack import SackRecovery
from engine.variants import register


class Tahoe(RenoGrowth):
    name = "tahoe"
    summary = "RFC 5681 growth; fast retransmit, then slow start from one segment (4.3BSD)"
    recovery = TahoeRecovery


class Reno(RenoGrowth):
    name = "reno"
    summary = "RFC 5681 fast retransmit and fast recovery, which ends on the first new ACK"
    recovery = RenoRecovery


class NewReno(RenoGrowth):
    name = "newreno"
    summary = "RFC 6582: fast recovery lasts until the whole window is acknowledged"
    recovery = NewRenoRecovery


class Sack1(RenoGrowth):
    name = "sack"
    summary = "ns-2's Sack1: Reno's window with RFC 6675 SACK recovery"
    implies_sack = True
    recovery = SackRecovery


register(Tahoe)
register(Reno)
register(NewReno)
register(Sack1)
