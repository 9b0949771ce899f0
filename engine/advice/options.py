"""The levers of one advice request, resolved against its scenario: which values each may
take (a grid to bisect, a ladder to climb, choices to try), the changes a value makes
(window scaling comes with a window above 64 KiB), and what a value costs.

`LeverSpec` is the request's form (`PATH[+PATH...][=COST][:V1,V2,...]` on the command line);
`default_levers()` picks the levers that can matter for the target's flows when the request
names none: their windows, variant, SACK and initial window (free), the bottleneck's queue
(cheap), its PVC's CIR, Be and shaping, and the tier of the path's slowest links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.advice.levers import (
    CostTable,
    LeverType,
    ladder_for,
    lever_type,
    name,
    parse_value,
    tier_price,
)
from engine.analysis.paths import PathFacts, flow_facts
from engine.protocol import TCP_IP_HEADERS
from engine.scenario import Link, Pvc, Scenario, TcpBulkFlow
from engine.scenario.topology import Topology
from engine.study import StudyError, apply_changes, get_path
from engine.tcp.cc import variant
from engine.variants import names

Shape = Literal["numeric", "ordered", "choice"]

# The variants a default variant lever tries: what stacks run today (Linux's CUBIC and BBR,
# and NewReno, the RFC 6582 baseline most others implement). `none` (a fixed window) and
# the 1990s' Tahoe, Reno and ns-2's Sack1 are the seed studies' subjects, not fixes; a
# request lists them in `values` to compare them (docs/advice.md).
DEFAULT_VARIANTS: tuple[str, ...] = ("newreno", "cubic", "bbr")


class LeverSpec(BaseModel):
    """A lever the user may pull: one or more paths moved together, optionally priced and
    limited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[str] = Field(
        min_length=1, max_length=16, description="Dotted paths, moved together"
    )
    cost: float | None = Field(
        default=None, ge=0, description="Flat cost of any change; null: the cost table's"
    )
    values: list[Any] | None = Field(
        default=None,
        min_length=1,
        max_length=32,
        description="The values to try, cheapest first; null: the catalogue's (a grid, the "
        "tier ladder, every variant)",
    )
    maximum: Any | None = Field(default=None, description="Highest value of a bisected lever")

    @model_validator(mode="after")
    def _known(self) -> LeverSpec:
        kinds = set()
        for path in self.paths:
            t = lever_type(path)
            if t is None or not t.searchable:
                raise ValueError(f"{path}: not a lever the advisor searches (docs/advice.md)")
            kinds.add(t.label)
        if len(kinds - WINDOW_BUFFERS) > 1 or (kinds & WINDOW_BUFFERS and kinds - WINDOW_BUFFERS):
            raise ValueError(f"paths moved together must be the same setting, got {sorted(kinds)}")
        known = names()
        unknown = [v for v in self.values or [] if kinds == {"variant"} and v not in known]
        if unknown:
            raise ValueError(f"values: {unknown} are not variants ({', '.join(known)})")
        return self

    @classmethod
    def parse(cls, text: str) -> LeverSpec:
        """`links.access1.rate+links.access2.rate=4500:T3,OC3`."""
        head, _, values = text.partition(":")
        paths, _, cost = head.partition("=")
        return cls(
            paths=[p.strip() for p in paths.split("+") if p.strip()],
            cost=float(cost) if cost.strip() else None,
            values=[_literal(v) for v in values.split(",")] if values.strip() else None,
        )


def _literal(text: str) -> Any:
    text = text.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@dataclass(eq=False)
class Lever:
    """A lever resolved against the scenario."""

    spec: LeverSpec
    type: LeverType
    current: Any
    mss: int
    scaling_paths: dict[str, bool]  # window_scaling path of each rcv_buf path -> its value
    costs: CostTable
    scenario: dict[str, Any]

    @property
    def paths(self) -> list[str]:
        return self.spec.paths

    @property
    def name(self) -> str:
        return name(self.paths)

    @property
    def shape(self) -> Shape:
        if self.type.kind in ("choice", "switch"):
            return "choice"
        if self.type.kind == "tier" or self.spec.values is not None:
            return "ordered"
        return "numeric"

    def changes(self, value: Any) -> dict[str, Any]:
        """{path: value} for every path, with the companions a value needs."""
        out = {p: value for p in self.paths}
        if self.type.label == "shaping":
            for p in self.paths:
                pvc = p.rsplit(".", 2)[0]
                if get_path(self.scenario, pvc + ".becn_shaping"):
                    out[pvc + ".becn_shaping"] = False  # Pvc.shaping replaces it
                # Bursts no deeper than the contract's committed burst pass the policer.
                out[pvc + ".shaping.bc"] = get_path(self.scenario, pvc + ".bc")
        if self.type.label == "rcv_buf" and value > 65535:
            for path, on in self.scaling_paths.items():
                if not on:
                    out[path] = True
        return out

    # --- values -------------------------------------------------------------------------

    def step(self) -> float:
        if self.type.label in ("rcv_buf", "snd_buf"):
            return float(self.mss)
        if self.type.kind == "bytes":  # a queue in bytes: whole full-sized packets
            return float(self.mss + TCP_IP_HEADERS)
        return self.type.step

    def grid(self, x: float) -> Any:
        """x rounded up to the lever's grid (whole segments, kbit, 8 kb/s...)."""
        step = self.step()
        v = math.ceil(x / step - 1e-9) * step
        return int(v) if self.type.kind in ("bytes", "packets", "segments", "bits") else v

    def highest(self) -> float:
        top = self.type.highest
        if self.spec.maximum is not None:
            top = min(top, float(parse_value(self.paths[0], self.spec.maximum)))
        return top

    def ordered(self) -> list[Any]:
        """An ordered lever's values above the current one, cheapest first."""
        if self.spec.values is not None:
            values = sorted(parse_value(self.paths[0], v) for v in self.spec.values)
        else:
            values = [t.bps for t in ladder_for(float(self.current))]
        return [v for v in values if v > self.current * (1 + 1e-9)]

    def choices(self) -> list[Any]:
        if self.spec.values is not None:
            values = [parse_value(self.paths[0], v) for v in self.spec.values]
        elif self.type.kind == "switch":
            values = [not self.current]
        else:
            values = list(DEFAULT_VARIANTS)
        return [v for v in dict.fromkeys(values) if v != self.current]

    # --- cost ---------------------------------------------------------------------------

    def cost(self, value: Any) -> float:
        """What moving the lever from its current value to `value` costs per month."""
        if self.spec.cost is not None:
            return self.spec.cost
        c = self.costs
        label = self.type.label
        if self.type.cost_class == "endpoint":
            return c.endpoint
        if self.type.cost_class == "queue":
            return c.queue
        if self.type.cost_class == "shaping":
            return c.shaping
        if self.type.kind == "tier":
            return float(
                sum(max(tier_price(value) - tier_price(self._now(p)), 0.0) for p in self.paths)
            )
        if label == "CIR":
            return float(max(value - self.current, 0.0)) / 1e3 * c.cir_per_kbps
        if label == "Be":
            return (
                sum(
                    max(self._excess(p, value) - self._excess(p, self._now(p)), 0.0)
                    for p in self.paths
                )
                / 1e3
                * c.be_per_kbps
            )
        return 0.0  # a what-if the user did not price (a link's delay)

    def _now(self, path: str) -> float:
        return float(parse_value(path, get_path(self.scenario, path)))

    def _excess(self, path: str, be: float) -> float:
        """The long-run rate Be adds to a PVC's contract: Be per Tc = Be x CIR / Bc."""
        pvc = get_path(self.scenario, path.rsplit(".", 1)[0])
        bc = float(pvc.get("bc") or pvc["cir"])
        return be * float(pvc["cir"]) / bc


def resolve(scenario: Scenario, specs: list[LeverSpec], costs: CostTable) -> list[Lever]:
    """The levers of `specs`, each checked against the scenario (every path must exist)."""
    data = scenario.model_dump(mode="json")
    tcp = {f.id: f.tcp for f in scenario.flows if isinstance(f, TcpBulkFlow)}
    out = []
    for spec in specs:
        t = lever_type(spec.paths[0])
        assert t is not None  # LeverSpec checked it
        currents = []
        for path in spec.paths:
            # A shaper not yet configured is a lever too: its rate is unset, not missing.
            if _missing(data, path) and not (t.label == "shaping" and _unset_shaper(data, path)):
                raise ValueError(f"{path}: the scenario has nothing there")
            currents.append(parse_value(path, get_path(data, path)))
        flows = [p.split(".")[1] for p in spec.paths if p.startswith("flows.")]
        mss = min((tcp[f].mss for f in flows if f in tcp), default=1460)
        scaling = {
            f"flows.{f}.tcp.window_scaling": tcp[f].window_scaling for f in flows if f in tcp
        }
        current = currents[0] if t.kind != "tier" else min(currents)
        lever = Lever(spec, t, current, mss, scaling, costs, data)
        _try(scenario, lever)
        out.append(lever)
    return out


def _unset_shaper(data: dict[str, Any], path: str) -> bool:
    pvc = get_path(data, path.rsplit(".", 2)[0])
    return isinstance(pvc, dict) and "shaping" in pvc and pvc["shaping"] is None


def _try(scenario: Scenario, lever: Lever) -> None:
    """Reject a lever whose first change the scenario language refuses (a shaper on a
    scenario version without one, a value out of range), before any run is spent on it."""
    if lever.shape == "choice":
        values = lever.choices()
    elif lever.shape == "ordered":
        values = lever.ordered()
    else:
        values = [lever.grid(float(lever.current or 0) + lever.step())]
    if not values:
        return
    try:
        apply_changes(scenario, lever.changes(values[0]))
    except StudyError as exc:
        raise ValueError(f"{lever.paths[0]}: {exc.message}") from None


def _missing(data: dict[str, Any], path: str) -> bool:
    parent, _, field = path.rpartition(".")
    try:
        node = get_path(data, parent)
    except Exception:  # an unknown list item: StudyError names it
        return True
    return not isinstance(node, dict) or field not in node


#: Settings that may move together as one: a flow's window is the smaller of its receive and
#: send buffers, so where both hold it, neither raised alone can lift it (a 64 KiB satellite
#: transfer's advice found nothing that helps until both moved; the remedies raise both).
WINDOW_BUFFERS = frozenset({"rcv_buf", "snd_buf"})


def _way_back(flow: TcpBulkFlow, fact: PathFacts, links: dict[str, Link]) -> dict[str, LeverSpec]:
    """Where the ACKs' way back clocks less than the path carries (ADSL's uplink): fewer ACKs
    per segment (delayed ACKs at the receiver, where they are off) and that way's rate."""
    clock, port = fact.ack_clock_bps, fact.ack_port
    if clock is None or port is None or clock >= fact.link_bps:
        return {}
    out = {}
    if not flow.tcp.delayed_ack.enabled:
        path = f"flows.{flow.id}.tcp.delayed_ack.enabled"
        out[path] = LeverSpec(paths=[path])
    link_id, ends = port.split(":")
    link = links[link_id]
    own = ends.split(">")[0] == link.b and link.rate_b_to_a is not None
    path = f"links.{link_id}.{'rate_b_to_a' if own else 'rate'}"
    out[path] = LeverSpec(paths=[path])
    return out


def default_levers(scenario: Scenario, flows: list[str]) -> list[LeverSpec]:
    """The levers that can matter for these flows when the request names none."""
    topo = Topology(scenario)
    facts = flow_facts(scenario, topo)[0]
    by_id = {f.id: f for f in scenario.flows if isinstance(f, TcpBulkFlow)}
    mine = [by_id[f] for f in flows if f in by_id]
    out: list[LeverSpec] = []

    def each(field: str) -> LeverSpec:
        return LeverSpec(paths=[f"flows.{f.id}.tcp.{field}" for f in mine])

    out.append(each("rcv_buf"))
    if any(f.tcp.snd_buf is not None for f in mine):
        sends = [f"flows.{f.id}.tcp.snd_buf" for f in mine if f.tcp.snd_buf]
        out.append(LeverSpec(paths=sends))
        out.append(LeverSpec(paths=each("rcv_buf").paths + sends))  # the window itself
    out.append(each("variant"))
    if any(variant(f.tcp.variant).sack_would_add(f.tcp) for f in mine):
        out.append(each("sack"))
    out.append(each("initial_cwnd"))
    links = {link.id: link for link in scenario.links}
    groups: dict[str, LeverSpec] = {}
    for f in mine:
        fact = facts[f.id]
        if fact.pvc is not None:
            base = f"frame_relay.pvcs.{fact.pvc}"
            # Shaping at any rate where the scenario language has it (issue 25), else BECN
            # shaping to the CIR.
            shaper = "shaping.rate" if "shaping" in Pvc.model_fields else "becn_shaping"
            for field in ("cir", "be", shaper):
                groups[f"{base}.{field}"] = LeverSpec(paths=[f"{base}.{field}"])
        slowest = min(links[k.split(":")[0]].rate for k in fact.path)
        tier = sorted(
            {
                k.split(":")[0]
                for k in fact.path
                if math.isclose(links[k.split(":")[0]].rate, slowest, rel_tol=1e-9)
            }
        )
        groups["|".join(tier)] = LeverSpec(paths=[f"links.{i}.rate" for i in tier])
        groups.update(_way_back(f, fact, links))
        link_id = fact.bottleneck.split(":")[0]
        if not fact.bottleneck.startswith("pvc:"):
            queue = (
                "queue.limit_bytes" if links[link_id].queue.limit_bytes else "queue.limit_packets"
            )
            groups[f"links.{link_id}.{queue}"] = LeverSpec(paths=[f"links.{link_id}.{queue}"])
    return out + list(groups.values())
