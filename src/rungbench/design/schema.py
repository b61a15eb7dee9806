"""The key schema of a registered preset: every key typed, its allowed values listed, and
what it drives stated (docs/ARCHITECTURE.md, "Presets and studies").

A preset kind is a :class:`PresetModel`: unknown keys are refused (a misspelt
``confidense`` names the key it resembles), a value outside the allowed set is refused with
the key and the set, and each field says which part of the study it drives
(:data:`DRIVES`). The model is what the code reads, so a registered value that drives
nothing cannot be written down; ``docs/presets.md`` is generated from the same fields
(:func:`markdown_tables`) so the documentation cannot drift from the parser.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rungbench.errors import InputError

Drives = Literal["identity", "schedule", "request", "retry", "analysis", "wording", "gate",
                 "audit", "budget"]
"""What a registered key drives: which cells exist (``schedule``), what is sent
(``request``), how failures are retried (``retry``), the estimates (``analysis``), the
words of a claim (``wording``), a refusal (``gate``), the outcome-blind audit's checked
figures (``audit``), or which design the preset is (``identity``)."""
DRIVES: tuple[str, ...] = typing.get_args(Drives)
"""Every value of :data:`Drives`."""

M = TypeVar("M", bound="PresetModel")


class PresetModel(BaseModel):
    """A preset table: strict types, unknown keys refused, nothing mutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def key(drives: Drives, description: str, **kwargs: Any) -> Any:
    """A preset field: what it ``drives`` and what it means (shown in docs/presets.md)."""
    return Field(description=description, json_schema_extra={"drives": drives}, **kwargs)


def parse_preset(model: type[M], document: dict[str, Any], *, source: str) -> M:
    """``document`` validated as ``model``; the first violation raises :class:`InputError`
    naming ``source`` and the dotted key."""
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        # an unknown key first: a misspelt key also makes the key it meant "missing"
        error = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        where = dotted(error["loc"])
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, KeyRefusal):
            where = f"{where}.{cause.key}" if where else cause.key
        raise InputError(_message(model, error), path=source, field=where or None) from None


class KeyRefusal(ValueError):
    """Raised by a preset validator to refuse a value, naming the key (relative to the table
    the validator checks) so the error names it too."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)


def dotted(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a preset key: ``arms[2].width``, ``analysis.interval``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(model: type[PresetModel], error: Any) -> str:
    kind, loc, value = error["type"], error["loc"], error.get("input")
    if kind == "extra_forbidden":
        known = _sibling_keys(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
        return f"unknown key {str(loc[-1])!r}{hint}"
    if kind == "missing":
        return "missing key"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        allowed = error.get("ctx", {}).get("expected", "")
        return f"value {value!r} is not allowed; allowed: {allowed}"
    return f"{error['msg']}, got {value!r}"


def _sibling_keys(model: type[PresetModel], loc: tuple[int | str, ...]) -> list[str]:
    """The field names of the table at ``loc`` (empty when it cannot be followed)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _table_type(field.annotation)
    return sorted(getattr(current, "model_fields", {}))


def _table_type(annotation: Any) -> Any:
    """The model class inside ``annotation`` (``X``, ``list[X]``, ``X | None``), or it."""
    for arg in typing.get_args(annotation):
        found = _table_type(arg)
        if isinstance(found, type) and issubclass(found, PresetModel):
            return found
    return annotation


@dataclass(frozen=True)
class KeyDoc:
    """One registered key as docs/presets.md lists it."""

    key: str
    """Dotted key (``analysis.interval``; ``arms[].width`` for a key of every table)."""
    type: str
    """Its TOML type."""
    allowed: str
    """Allowed values or range (empty when any value of the type is)."""
    drives: str
    """What it drives (:data:`Drives`)."""
    description: str
    """What it means."""


def key_docs(model: type[PresetModel], prefix: str = "") -> Iterator[KeyDoc]:
    """Every key of ``model``, tables walked in field order."""
    for name, field in model.model_fields.items():
        dotted_name = f"{prefix}{name}"
        table = _table_type(field.annotation)
        if isinstance(table, type) and issubclass(table, PresetModel):
            many = typing.get_origin(_strip_optional(field.annotation)) in (list, tuple)
            yield from key_docs(table, f"{dotted_name}[]." if many else f"{dotted_name}.")
            continue
        extra = field.json_schema_extra
        drives = extra.get("drives", "") if isinstance(extra, dict) else ""
        yield KeyDoc(dotted_name, _type_name(field.annotation),
                     _allowed(field.annotation, field.metadata), str(drives),
                     field.description or "")


def _strip_optional(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


def _type_name(annotation: Any) -> str:
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        kinds = {type(a).__name__ for a in typing.get_args(annotation)}
        return _toml_name(kinds.pop()) if len(kinds) == 1 else "value"
    if origin in (list, tuple):
        inner = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"array of {_type_name(inner[0])}" if inner else "array"
    if origin is dict:
        return "table"
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    return _toml_name(getattr(annotation, "__name__", str(annotation)))


def _toml_name(python: str) -> str:
    return {"str": "string", "int": "integer", "float": "float", "bool": "boolean"}.get(
        python, python)


def _allowed(annotation: Any, metadata: list[Any]) -> str:
    annotation = _strip_optional(annotation)
    while typing.get_origin(annotation) in (list, tuple, typing.Annotated):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        metadata = [*metadata, *getattr(annotation, "__metadata__", ())]
        annotation = args[0]
    if typing.get_origin(annotation) is Literal:
        return ", ".join(repr(a) for a in typing.get_args(annotation))
    bounds = []
    for meta in metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"),
                           ("min_length", "length ≥"), ("max_length", "length ≤")):
            if getattr(meta, attr, None) is not None:
                bounds.append(f"{sign} {getattr(meta, attr)}")
    return ", ".join(bounds)


def markdown_table(title: str, model: type[PresetModel], presets: list[str]) -> str:
    """The docs/presets.md section of one preset kind."""
    rows = ["| key | type | allowed | drives | what it is |", "|---|---|---|---|---|"]
    for doc in key_docs(model):
        cells = (f"`{doc.key}`", doc.type, doc.allowed.replace("|", "\\|"), doc.drives,
                 doc.description.replace("|", "\\|").replace("\n", " "))
        rows.append("| " + " | ".join(cells) + " |")
    used = ", ".join(f"`{p}`" for p in presets)
    return f"## {title}\n\nPresets of this kind: {used}.\n\n" + "\n".join(rows) + "\n"


def require_distinct(values: Sequence[str], name: str) -> None:
    """Raise :class:`KeyRefusal` on key ``name`` when ``values`` repeats one."""
    repeated = sorted({v for v in values if list(values).count(v) > 1})
    if repeated:
        raise KeyRefusal(name, f"{name} lists {repeated[0]!r} twice")
