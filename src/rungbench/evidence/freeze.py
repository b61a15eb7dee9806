"""Freeze and check: bind named inputs and a built output to their digests.

A frozen record (``rungbench.frozen/1``) names a builder, the digest of every
named input and the digest of the output the builder produced from exactly
those inputs. :func:`check` rebuilds the output from the stored inputs and
compares it byte for byte with the stored output. It refuses, naming the
input, when anything is

- ``absent``: an input, the output, the record or the builder cannot be found;
- ``stale``: the current source of an input (a ref or a file) no longer has the
  frozen digest, or the builder's version moved on;
- ``different``: stored bytes do not hash to the digest that names them, or the
  rebuild differs from the frozen output.

A builder may itself refuse (for example ``incomplete`` when a cohort is not
terminal); its reasons join the others. This is the shape of seed 002's
leakage-gate qualification: pool + cohort A + cohort B → qualification.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import (
    DIGEST_SCHEME,
    Digest,
    bytes_digest,
    canonical_bytes,
    file_digest,
    loads_canonical,
    parse_digest,
)
from rungbench.evidence.gate import Precondition
from rungbench.evidence.store import ObjectStore

FROZEN_SCHEMA: Final = "rungbench.frozen/1"
"""Version tag of the frozen record."""

BuildFn = Callable[[Mapping[str, bytes]], bytes]
"""Turns named input bytes into output bytes; must be deterministic."""


@dataclass(frozen=True)
class Builder:
    """A named, versioned, deterministic function from named inputs to output bytes."""

    name: str
    """Stable name, e.g. ``rungbench.inventory``."""
    version: int
    """Bumped whenever the output for the same inputs may change."""
    inputs: tuple[str, ...]
    """Required input names; empty means any non-empty set of names."""
    build: BuildFn
    """The function itself."""
    ref: str | None = None
    """Import path ``module:attribute`` of this builder, so a check can find it again."""

    @property
    def id(self) -> str:
        """``name/version``, as recorded in frozen records."""
        return f"{self.name}/{self.version}"

    def check_names(self, names: list[str]) -> None:
        """Raise :class:`InputError` unless ``names`` are exactly the inputs this builder takes."""
        if not names:
            raise InputError(f"builder {self.id} needs at least one input", field="inputs")
        if self.inputs and sorted(names) != sorted(self.inputs):
            raise InputError(
                f"builder {self.id} takes inputs {sorted(self.inputs)}, got {sorted(names)}",
                field="inputs",
            )


def json_builder(
    name: str,
    version: int,
    inputs: tuple[str, ...],
    fn: Callable[[Mapping[str, Any]], Any],
    *,
    ref: str | None = None,
) -> Builder:
    """Return a builder over JSON inputs whose output is the canonical JSON of ``fn(values)``."""

    def build(raw: Mapping[str, bytes]) -> bytes:
        values = {key: loads_canonical(data, path=key) for key, data in raw.items()}
        return canonical_bytes(fn(values))

    return Builder(name, version, inputs, build, ref)


def _inventory(raw: Mapping[str, bytes]) -> bytes:
    items = {
        key: {"digest": bytes_digest(data), "bytes": len(data), "lines": data.count(b"\n")}
        for key, data in raw.items()
    }
    return canonical_bytes({"schema": "rungbench.inventory/1", "items": items})


INVENTORY = Builder(
    "rungbench.inventory", 1, (), _inventory, ref="rungbench.evidence.freeze:INVENTORY"
)
"""Built-in builder: per input its digest, byte count and line count."""


class FrozenRecord(BaseModel):
    """The persisted binding of named inputs to digests and of the build to its output."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["rungbench.frozen/1"] = Field(default=FROZEN_SCHEMA, alias="schema")
    """Record version."""
    name: str = Field(min_length=1)
    """Human name of the frozen object, e.g. ``qualification``."""
    builder: str = Field(min_length=3)
    """``name/version`` of the builder that produced the output."""
    builder_ref: str | None = None
    """Import path of the builder, when it has one."""
    inputs: dict[str, Digest] = Field(min_length=1)
    """Input name → ``sha256:<hex>`` digest of its bytes."""
    output: Digest
    """Digest of the built output bytes."""
    digest_scheme: str = DIGEST_SCHEME
    """Canonicalization scheme of this record."""

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-ready data (the form that is stored and digested)."""
        return self.model_dump(by_alias=True, mode="json")


def frozen_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of :class:`FrozenRecord` (by alias, as stored)."""
    return FrozenRecord.model_json_schema(by_alias=True)


@dataclass(frozen=True)
class Frozen:
    """A frozen record together with the digest that names it in the store."""

    digest: str
    """Digest of the record's canonical JSON."""
    record: FrozenRecord
    """The record."""


def freeze(store: ObjectStore, name: str, builder: Builder, inputs: Mapping[str, str]) -> Frozen:
    """Build from stored ``inputs`` (name → digest), store output and record, return them.

    Refuses (``absent``/``different``) when an input is missing or damaged; the
    builder's own refusals pass through.
    """
    builder.check_names(list(inputs))
    for key, value in inputs.items():
        parse_digest(value, field=f"inputs.{key}")
    raw, reasons = _load_inputs(store, inputs)
    if reasons:
        raise Refusal(reasons, gate=f"freeze {name}")
    output = store.put_bytes(builder.build(raw))
    record = FrozenRecord(
        name=name, builder=builder.id, builder_ref=builder.ref, inputs=dict(inputs), output=output
    )
    return Frozen(store.put_json(record.to_json()), record)


def freeze_files(
    store: ObjectStore, name: str, builder: Builder, files: Mapping[str, str | Path]
) -> Frozen:
    """Put each named file into the store, then :func:`freeze` over their digests."""
    builder.check_names(list(files))
    digests = {key: store.put_file(path) for key, path in files.items()}
    return freeze(store, name, builder, digests)


def load_record(store: ObjectStore, digest: str) -> FrozenRecord:
    """Return the verified frozen record named by ``digest``; refuse if absent or damaged."""
    parse_digest(digest, field="frozen")
    try:
        value = store.get_json(digest)
    except IntegrityError as exc:
        raise Refusal([Reason("different", str(exc), "frozen")], gate="freeze-check") from exc
    except InputError as exc:
        if not store.has(digest):
            raise Refusal(
                [Reason("absent", f"frozen record {digest} is not in the store", "frozen")],
                gate="freeze-check",
            ) from exc
        raise
    try:
        return FrozenRecord.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(
            f"not a {FROZEN_SCHEMA} record: {err['msg']}",
            path=str(store.path_for(digest)),
            field=where,
        ) from exc


def resolve_builder(ref: str) -> Builder:
    """Import ``module:attribute`` and return it; raise :class:`InputError` if not a Builder."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"builder reference {ref!r} is not module:attribute", field="builder")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot import builder {ref!r}: {exc}", field="builder") from exc
    if not isinstance(found, Builder):
        raise InputError(f"{ref!r} is a {type(found).__name__}, not a Builder", field="builder")
    return found


def check_reasons(
    store: ObjectStore,
    frozen: str,
    *,
    builder: Builder | None = None,
    current: Mapping[str, str | None] | None = None,
) -> tuple[Reason, ...]:
    """Return every reason the frozen object ``frozen`` fails its check (empty: it holds).

    ``current`` maps input names to the digest their live source has now (None:
    the source is gone); it is how staleness is seen.
    """
    try:
        record = load_record(store, frozen)
    except Refusal as refusal:
        return refusal.reasons
    reasons: list[Reason] = []
    chosen, builder_reasons = _choose_builder(record, builder)
    reasons.extend(builder_reasons)
    reasons.extend(_staleness(record, current or {}))
    raw, input_reasons = _load_inputs(store, record.inputs)
    reasons.extend(input_reasons)
    if chosen is not None and not input_reasons:
        reasons.extend(_rebuild(store, record, chosen, raw))
    return tuple(reasons)


def check(
    store: ObjectStore,
    frozen: str,
    *,
    builder: Builder | None = None,
    current: Mapping[str, str | None] | None = None,
) -> FrozenRecord:
    """Rebuild ``frozen`` and compare byte for byte; raise :class:`Refusal` on any reason."""
    reasons = check_reasons(store, frozen, builder=builder, current=current)
    if reasons:
        raise Refusal(reasons, gate="freeze-check")
    return load_record(store, frozen)


def check_precondition(
    name: str,
    store: ObjectStore,
    frozen: str,
    *,
    builder: Builder | None = None,
    current: Callable[[], Mapping[str, str | None]] | None = None,
    blocking: bool = True,
) -> Precondition:
    """Return a gate precondition that holds when ``frozen`` passes :func:`check_reasons`.

    ``current`` is called at evaluation time, so a gate sees the sources as they
    are when it runs, not when it was built.
    """

    def run() -> tuple[Reason, ...]:
        live = current() if current is not None else None
        return check_reasons(store, frozen, builder=builder, current=live)

    return Precondition(name, run, blocking=blocking)


def current_from_files(files: Mapping[str, str | Path]) -> dict[str, str | None]:
    """Return name → digest of each file as it is now (None when the file is missing)."""
    return {
        key: file_digest(str(path)) if Path(path).is_file() else None for key, path in files.items()
    }


def _choose_builder(
    record: FrozenRecord, builder: Builder | None
) -> tuple[Builder | None, list[Reason]]:
    if builder is None:
        if record.builder_ref is None:
            detail = f"builder {record.builder} has no import path; pass it explicitly"
            return None, [Reason("absent", detail, "builder")]
        try:
            builder = resolve_builder(record.builder_ref)
        except InputError as exc:
            return None, [Reason("absent", str(exc), "builder")]
    name, _, version = record.builder.rpartition("/")
    if builder.name != name:
        detail = f"record was built by {record.builder}, check uses {builder.id}"
        return None, [Reason("different", detail, "builder")]
    if str(builder.version) != version:
        detail = f"record was built by {record.builder}, the builder is now {builder.id}"
        return None, [Reason("stale", detail, "builder")]
    return builder, []


def _staleness(record: FrozenRecord, current: Mapping[str, str | None]) -> list[Reason]:
    unknown = sorted(set(current) - set(record.inputs))
    if unknown:
        raise InputError(
            f"record {record.name!r} has no inputs {unknown}; it has {sorted(record.inputs)}",
            field="current",
        )
    reasons: list[Reason] = []
    for key in sorted(current):
        now, then = current[key], record.inputs[key]
        if now is None:
            reasons.append(Reason("absent", f"the source of input {key!r} is gone", key))
        elif now != then:
            detail = f"input {key!r} is now {now}, frozen as {then}"
            reasons.append(Reason("stale", detail, key, {"frozen": then, "current": now}))
    return reasons


def _load_inputs(
    store: ObjectStore, inputs: Mapping[str, str]
) -> tuple[dict[str, bytes], list[Reason]]:
    raw: dict[str, bytes] = {}
    reasons: list[Reason] = []
    for key in sorted(inputs):
        found = _load_one(store, key, inputs[key])
        if isinstance(found, Reason):
            reasons.append(found)
        else:
            raw[key] = found
    return raw, reasons


def _load_one(store: ObjectStore, key: str, digest: str) -> bytes | Reason:
    if not store.has(digest):
        return Reason("absent", f"input {key!r} ({digest}) is not in the store", key)
    try:
        return store.get_bytes(digest)
    except IntegrityError as exc:
        return Reason("different", f"input {key!r}: {exc}", key, {"expected": digest})


def _rebuild(
    store: ObjectStore, record: FrozenRecord, builder: Builder, raw: Mapping[str, bytes]
) -> list[Reason]:
    try:
        rebuilt = builder.build(raw)
    except Refusal as refusal:
        return list(refusal.reasons)
    actual = bytes_digest(rebuilt)
    subject = record.name
    if actual != record.output:
        detail = f"rebuilt {subject!r} is {actual}, frozen as {record.output}"
        return [Reason("different", detail, subject, {"frozen": record.output, "rebuilt": actual})]
    found = _load_one(store, subject, record.output)
    if isinstance(found, Reason):
        return [found]
    if found != rebuilt:  # unreachable unless sha256 collides; the comparison is the contract
        return [Reason("different", f"stored {subject!r} differs byte-wise", subject)]
    return []
