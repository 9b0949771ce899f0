"""Validation errors a person can act on: what was expected, the valid values when there are
few, the field name they probably meant, and where malformed JSON breaks (line, column).

Pydantic's errors are exact but terse ("Extra inputs are not permitted", "Unable to extract
tag using discriminator 'kind'"); this rewrites their `msg` from the model the body was
validated against, keeping `loc` and `type` so clients that match on them still do.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

#: Names people use for a field, from other tools and from the words of the domain.
ALIASES = {
    "window": "rcv_buf",
    "rwnd": "rcv_buf",
    "receive_window": "rcv_buf",
    "recv_buf": "rcv_buf",
    "rcvbuf": "rcv_buf",
    "send_buf": "snd_buf",
    "sndbuf": "snd_buf",
    "cc": "variant",
    "congestion_control": "variant",
    "algorithm": "variant",
    "bandwidth": "rate",
    "speed": "rate",
    "capacity": "rate",
    "latency": "delay",
    "size": "bytes",
    "file_size": "bytes",
    "type": "kind",
    "source": "src",
    "destination": "dst",
    "dest": "dst",
    "from": "a",
    "to": "b",
    "buffer": "queue",
    "qlimit": "queue",
    "loss_rate": "loss",
    "iw": "initial_cwnd",
    "init_cwnd": "initial_cwnd",
}
LIST_AT_MOST = 16  # list the valid field names when there are no more than this


def suggest(name: str, valid: Sequence[str]) -> str | None:
    """The valid name `name` most likely meant, if any."""
    alias = ALIASES.get(name.casefold())
    if alias in valid:
        return alias
    folded = {v.casefold(): v for v in valid}
    if name.casefold() in folded:
        return folded[name.casefold()]
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return close[0] if close else None


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [_unwrap(a) for a in get_args(tp) if a is not type(None)]
    return [tp]


def _tag(model: Any, field: str) -> str | None:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    info = model.model_fields.get(field)
    if info is None:
        return None
    args = get_args(_unwrap(info.annotation))
    return args[0] if get_origin(_unwrap(info.annotation)) is Literal and len(args) == 1 else None


def resolve(root: Any, loc: Sequence[str | int]) -> Any:
    """The type at `loc` under `root` (a model, list, dict or union), or None."""
    tp: Any = root
    for part in loc:
        members = _members(tp)
        if len(members) > 1:
            # A discriminated union names the member by its tag in `loc`.
            chosen = [m for m in members if part in {_tag(m, "kind"), _tag(m, "model")}]
            if chosen:
                tp = chosen[0]
                continue
            models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
            having = [m for m in models if str(part) in m.model_fields]
            if not having:
                return None
            tp = having[0]
        else:
            tp = members[0]
        origin = get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            info = tp.model_fields.get(str(part))
            if info is None:
                return None
            tp = info.annotation
        elif origin in (list, tuple, Sequence) and isinstance(part, int):
            tp = get_args(tp)[0] if get_args(tp) else None
        elif origin is dict:
            tp = get_args(tp)[1] if get_args(tp) else None
        else:
            return None
    return tp


def _models(tp: Any) -> list[type[BaseModel]]:
    return [m for m in _members(tp) if isinstance(m, type) and issubclass(m, BaseModel)]


def _model(tp: Any) -> type[BaseModel] | None:
    models = _models(tp)
    return models[0] if len(models) == 1 else None


def _quoted(values: Sequence[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def improve(errors: Sequence[Mapping[str, Any]], root: Any) -> list[dict[str, Any]]:
    """Pydantic error dicts (`loc` without the leading "body") with clearer `msg`s."""
    out = []
    for err in errors:
        err = dict(err)
        loc = list(err.get("loc", ()))
        kind = err.get("type")
        ctx = err.get("ctx") or {}
        if kind == "extra_forbidden" and loc:
            models = _models(resolve(root, loc[:-1]))
            if models:
                valid = list(dict.fromkeys(f for m in models for f in m.model_fields))
                name = str(loc[-1])
                guess = suggest(name, valid)
                msg = f"unknown field {name!r}"
                msg += f"; did you mean {guess!r}?" if guess else ""
                if len(valid) <= LIST_AT_MOST:
                    msg += f" Valid fields here: {', '.join(valid)}"
                err["msg"] = msg
        elif kind in ("union_tag_not_found", "union_tag_invalid"):
            field = str(ctx.get("discriminator", "kind")).strip("'\"")
            tags = [t for m in _members(resolve(root, loc)) if (t := _tag(m, field))]
            if not tags and ctx.get("expected_tags"):
                tags = re.findall(r"'([^']*)'", str(ctx["expected_tags"]))
            if kind == "union_tag_not_found":
                err["msg"] = f"{field!r} is required: one of {_quoted(tags)}"
                err["type"] = "missing"
            else:
                tag = str(ctx.get("tag", ""))
                guess = suggest(tag, tags)
                err["msg"] = f"unknown {field} {tag!r}: expected one of {_quoted(tags)}" + (
                    f"; did you mean {guess!r}?" if guess else ""
                )
            err["loc"] = [*loc, field]
        elif kind == "literal_error":
            options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
            given = err.get("input")
            guess = suggest(given, options) if isinstance(given, str) else None
            if guess:
                err["msg"] = f"{err.get('msg', '')}; did you mean {guess!r}?"
        elif kind == "missing" and loc:
            err["msg"] = f"required field {str(loc[-1])!r} is missing"
        out.append(err)
    return out


def wrapping_hint(errors: list[dict[str, Any]], root: Any, scenario: Any) -> dict[str, Any] | None:
    """One error for a body that is a bare scenario where a request wraps it, or None."""
    model = _model(root)
    if model is None or not (isinstance(scenario, type) and issubclass(scenario, BaseModel)):
        return None
    extra = {
        str(e["loc"][0])
        for e in errors
        if e.get("type") == "extra_forbidden" and len(e.get("loc", ())) == 1
    }
    if len(extra & set(scenario.model_fields)) < 2:
        return None
    if "scenario" in model.model_fields:
        how = 'wrap it as {"scenario": {...}} (or send {"preset": ...} or {"scenario_id": ...})'
    elif "base" in model.model_fields:
        how = 'a sweep takes {"base": {"scenario": {...}}, "parameters": {...}}'
    else:
        return None
    return {
        "loc": [],
        "msg": f"this body looks like a bare scenario: {how}",
        "type": "bare_scenario",
    }


def line_column(doc: str | bytes, pos: int) -> tuple[int, int]:
    """1-based line and column of character offset `pos` in `doc`."""
    text = doc.decode("utf-8", "replace") if isinstance(doc, bytes) else str(doc)
    before = text[:pos]
    line = before.count("\n") + 1
    return line, pos - (before.rfind("\n") + 1) + 1
