"""Bounds shared by the flows of one run whose paths are alike (engine/advice/whatif.py).

A run's diagnosis asks every TCP flow's path model for the bounds of its remedies' changes,
and most flows of a large run are alike: a thousand senders, each on its own access link
of the same rate, delay and queue, through the same bottleneck, with the same TCP settings.
Their bounds under the same changes are the same figures; only the names differ (the
resource's port key). `SharedBounds` keeps each figure once per kind of path: a path's
kind (`PathModel.kind`) is what its bounds read — each hop's link settings but its id and
ends, the direction crossed, which hops cross the same link, the PVC, the TCP settings,
the transfer's size — and a change is keyed by what it touches on that path (the path's
n-th link, the flow's own settings) rather than by the names it uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

B = TypeVar("B")

# The fields that name a link and its ends, not what its bounds read.
_NAMES = ("id", "a", "b")
SCAN = 16  # models compared at most under one cheap key before one gets a number of its own


class SharedBounds(Generic[B]):
    """The bounds one run's path models have worked out, by path kind and change key, each
    with the port keys of the model that worked it out (`keys`)."""

    def __init__(self) -> None:
        self._links: dict[int, tuple[BaseModel, int]] = {}
        self._seen: dict[tuple[Any, ...], list[tuple[BaseModel, int]]] = {}
        self._count = 0
        self._kinds: dict[tuple[Any, ...], int] = {}
        self._found: dict[tuple[Any, ...], tuple[B, tuple[str, ...]]] = {}

    def link_kind(self, link: BaseModel) -> int:
        """A number the same for links whose settings but their names are equal."""
        known = self._links.get(id(link))
        if known is not None:
            return known[1]
        named = vars(link)
        kind = self._intern(
            ("link", named.get("rate"), named.get("delay")),
            link,
            lambda rep: {**named, **{k: getattr(rep, k) for k in _NAMES}} == vars(rep),
        )
        self._links[id(link)] = (link, kind)  # holds the link, so that its id stays its own
        return kind

    def model_kind(self, model: BaseModel | None) -> int:
        """A number the same for equal models (TCP settings, a PVC)."""
        if model is None:
            return -1
        head = tuple(v for v in vars(model).values() if isinstance(v, int | float | str))
        return self._intern((type(model), *head[:4]), model, model.__eq__)

    def _intern(self, head: tuple[Any, ...], model: BaseModel, same: Any) -> int:
        """`model`'s number: that of an equal one met before under the same cheap `head`
        (at most SCAN compared: past them, a number of its own), else a new one."""
        seen = self._seen.setdefault(head, [])
        for rep, number in seen:
            if same(rep):
                return number
        number = self._count = self._count + 1
        if len(seen) < SCAN:
            seen.append((model, number))
        return number

    def kind(self, kind: tuple[Any, ...]) -> int:
        """A path kind's number: hashed once per path, not once per bound asked for."""
        return self._kinds.setdefault(kind, len(self._kinds))

    def get(self, key: tuple[Any, ...]) -> tuple[B, tuple[str, ...]] | None:
        return self._found.get(key)

    def put(self, key: tuple[Any, ...], bound: B, keys: tuple[str, ...]) -> None:
        self._found[key] = (bound, keys)


def change_key(
    changes: Mapping[str, Any], flow: str, links: Mapping[str, int]
) -> tuple[tuple[Any, ...], ...]:
    """The changes as what they touch on a path whose links are `links` (id: index) and
    whose flow is `flow`: the same key for the same changes to two alike paths. A path
    naming neither stays as it is (the model ignores it). Values by their repr, as the
    model's own cache, so that True, 1 and 1.0 stay apart; split where the model splits."""
    out: list[tuple[Any, ...]] = []
    for path, value in changes.items():
        parts = path.split(".", 2)
        if len(parts) == 3 and parts[0] == "links" and parts[1] in links:
            out.append(("link", links[parts[1]], parts[2], repr(value)))
        elif len(parts) == 3 and parts[0] == "flows" and parts[1] == flow:
            out.append(("flow", parts[2], repr(value)))
        else:
            out.append(("path", path, repr(value)))
    return tuple(out)


def renamed(resource: str, mine: tuple[str, ...], theirs: tuple[str, ...]) -> str:
    """`resource` named by the model that worked a bound out (its port keys `theirs`), as
    the alike model whose port keys are `mine` names it."""
    if mine == theirs:
        return resource
    prefix = "shaper:" if resource.startswith("shaper:") else ""
    port = resource[len(prefix) :]
    for their, my in zip(theirs, mine, strict=True):
        if their == port:
            return prefix + my
    return resource  # a PVC's, named alike on both paths (its id is part of the kind)
