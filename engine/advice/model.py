"""A remedy as data (issue 23 scope 1): the concrete change, what the analytic bounds predict
it does, what it costs, and the sentence rendered from those. `Diagnosis.remedies` holds a
list of them; `Diagnosis.advice` is the sentence derived from the list.

Pure pydantic models with no engine imports, so that engine/result.py can hold them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CostClass = Literal["endpoint", "queue", "shaping", "pvc", "link", "run"]
"""What a change costs, cheapest first: an endpoint setting (free), a router's queue (cheap),
a router's shaper (cheap), the PVC's contract (priced per kb/s), a link tier (the next real
product), the experiment itself (a longer run: no network change)."""

COST_ORDER: dict[str, int] = {
    "endpoint": 0,
    "queue": 1,
    "shaping": 2,
    "pvc": 3,
    "link": 4,
    "run": 5,
}

Action = Literal[
    "raise_rcv_buf",
    "raise_snd_buf",
    "enable_sack",
    "enable_delayed_ack",
    "change_variant",
    "raise_initial_cwnd",
    "lower_min_rto",
    "enable_timestamps",
    "raise_queue",
    "upgrade_link",
    "raise_cir",
    "raise_be",
    "raise_bc",
    "shape",
    "lower_mss",
    "lengthen_run",
    "no_setting",
]

WhyNot = Literal[
    "bound_unchanged",  # the change leaves the binding bound where it is
    "lowers_bound",  # the change caps the flow below what it achieves now
    "no_setting",  # nothing in the scenario sets this limit
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Change(_Model):
    """One setting to change, as sweeps address it."""

    path: str = Field(description="Dotted path, as sweeps use them: flows.backup.tcp.rcv_buf")
    value: Any = Field(description="The new value, in base units (bytes, bit/s, bits, s)")
    was: Any = Field(default=None, description="The scenario's value now (null when unset)")


class Effect(_Model):
    """What the analytic bounds allow after the change: an optimistic figure (the
    simulation may show less, never more)."""

    goodput_bps: float | None = Field(description="Upper bound of the flow's goodput, bit/s")
    completion_time: float | None = Field(
        default=None, description="Lower bound of a finite transfer's completion time, s"
    )
    limit: Literal["link", "pvc", "shaper", "window", "ack"] | None = Field(
        default=None,
        description="The bound that binds after the change (`ack`: the ACKs' way back)",
    )
    resource: str | None = Field(
        default=None,
        description="Where: a port '<link>:<from>><to>' (for `ack`, the way back's) or 'pvc:<id>'",
    )


class Remedy(_Model):
    """One concrete change that addresses a flow's limit, or a statement that nothing in the
    scenario sets it (`changes` empty)."""

    action: Action = Field(description="What kind of change: raise_rcv_buf, upgrade_link, shape…")
    changes: list[Change] = Field(description="Empty when the limit has no setting")
    cost_class: CostClass | None = Field(description="Null when nothing can be bought")
    subject: str | None = Field(
        default=None,
        description="What it is about: a port '<link>:<from>><to>', 'pvc:<id>' or the flow",
    )
    figures: dict[str, float | int | str] = Field(
        default_factory=dict,
        description="The measured or derived figures the sentence quotes (queue size, "
        "drops, window, BDP...), by name",
    )
    predicted: Effect | None = Field(description="What the bounds allow after the change")
    helps: bool = Field(description="False: shown as 'won't help', never recommended")
    why_not: WhyNot | None = Field(
        default=None,
        description="Why it won't help: bound_unchanged (the bound that binds stays), "
        "lowers_bound (it caps the flow below what it gets now), no_setting (nothing sets "
        "this limit)",
    )
    text: str = Field(description="The sentence, rendered from the fields above")
