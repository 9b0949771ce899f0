"""The remedies of a diagnosed TCP flow: every one a concrete change (issue 23 scope 1).

For the limit the diagnosis named, the rules below build `Remedy` values: the `{path, value}`
changes (in the dotted paths sweeps use), the figures they rest on, the effect the analytic
bounds predict (engine/advice/whatif.py) and the cost class. The rules:

- never propose what the scenario already has: a change equal to the current value is
  dropped, and a remedy left with no change is not offered (SACK already on, BECN shaping
  already on, the initial window already 10);
- name the link direction, queue or PVC that dropped, with its size and its count;
- a change the bounds say cannot move the limit is kept only as "won't help: …, because …"
  (`helps` false), never recommended: a faster link for a window-limited flow, shaping to a
  CIR below what the flow already gets;
- a limit nothing in the scenario sets (line errors, other traffic) is said so, with no
  change (`action` no_setting).

The sentences are rendered from these values by engine/advice/words.py; `why()` writes
`Diagnosis.why`, and `words.advice()` adds the list to it as candidates for a check.
"""

from __future__ import annotations

from engine.advice import rules, words
from engine.advice.context import Context, PolicingFacts
from engine.advice.headline import headline
from engine.advice.model import Remedy

__all__ = ["Context", "PolicingFacts", "remedies", "why"]


def remedies(ctx: Context) -> list[Remedy]:
    """The flow's remedies: the helpful ones cheapest first, then what won't help."""
    table = {
        "receive_window": rules.window,
        "send_buffer": rules.window,
        "link_capacity": rules.capacity,
        "pvc_policing": rules.policing,
        "loss": rules.loss,
        "timeouts": rules.timeouts,
        "congestion_window": rules.cwnd,
        "ack_clock": rules.ack_clock,
    }
    out = [r for r in table.get(ctx.limit, rules.unfinished)(ctx) if r is not None]
    return sorted(out, key=lambda r: (not r.helps, words.cost_rank(r)))


def why(ctx: Context) -> str:
    """`Diagnosis.why`: what limits the flow, with no remedy."""
    return headline(ctx)
