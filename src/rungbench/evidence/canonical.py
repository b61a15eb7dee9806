"""Canonical JSON and ``sha256:<hex>`` digests (docs/ARCHITECTURE.md, "Layers").

Canonical bytes are UTF-8 JSON with sorted keys and no insignificant whitespace.
NaN, infinities and non-string keys are rejected rather than coerced, because a
digest must name exactly one meaning.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Annotated, Any

from pydantic import StringConstraints

from rungbench.errors import InputError

DIGEST_SCHEME = "rungbench-canonical-json/1"
"""Version of the canonicalization; bump it if the byte form ever changes."""

DIGEST_PREFIX = "sha256:"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
"""Regular expression every digest matches."""
_DIGEST_RE = re.compile(DIGEST_PATTERN)

Digest = Annotated[str, StringConstraints(pattern=DIGEST_PATTERN)]
"""A ``sha256:<64 lowercase hex>`` digest, as a pydantic field type."""


def _check(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"non-finite number {value!r} cannot be canonical JSON", field=where)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"non-string key {key!r} cannot be canonical JSON", field=where)
            _check(item, f"{where}.{key}" if where else key)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise InputError(f"type {type(value).__name__} cannot be canonical JSON", field=where)


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical UTF-8 JSON encoding of ``value``.

    Raises :class:`InputError` for NaN, infinities, non-string keys, types JSON
    cannot hold, and strings that are not valid Unicode (lone surrogates).
    """
    _check(value, "")
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"string is not valid Unicode: {exc.reason}") from exc


def scheme_record() -> dict[str, Any]:
    """Return the versioned description of the byte form every digest is taken over."""
    return {
        "scheme": DIGEST_SCHEME,
        "hash": "sha256",
        "encoding": "utf-8",
        "keys": "sorted by code point, strings only",
        "separators": [",", ":"],
        "non_finite": "rejected",
        "ascii_escaping": False,
    }


def bytes_digest(data: bytes) -> str:
    """Return ``sha256:<hex>`` of raw bytes."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Return the digest of the canonical JSON encoding of ``value``."""
    return bytes_digest(canonical_bytes(value))


def file_digest(path: str) -> str:
    """Return ``sha256:<hex>`` of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return DIGEST_PREFIX + h.hexdigest()


def is_digest(text: str) -> bool:
    """Return whether ``text`` is a well-formed ``sha256:<64 lowercase hex>`` digest."""
    return bool(_DIGEST_RE.match(text))


def parse_digest(text: str, *, field: str = "digest") -> str:
    """Return the 64-hex part of a digest, raising :class:`InputError` on a malformed one."""
    if not is_digest(text):
        raise InputError(
            f"malformed digest {text!r}: expected sha256:<64 lowercase hex>", field=field
        )
    return text[len(DIGEST_PREFIX) :]


def loads_canonical(data: bytes, *, path: str | None = None) -> Any:
    """Parse JSON bytes, raising :class:`InputError` naming ``path`` when they are not JSON.

    NaN/Infinity constants and duplicate object keys are rejected: either would let
    two different byte strings carry one meaning, or one byte string two meanings.
    """
    try:
        return json.loads(
            data.decode("utf-8"),
            parse_constant=_reject_constant,
            object_pairs_hook=_unique_pairs,
        )
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from exc


def is_canonical(data: bytes) -> bool:
    """Return whether ``data`` is exactly the canonical encoding of the JSON it holds."""
    try:
        return canonical_bytes(loads_canonical(data)) == data
    except InputError:
        return False


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite constant {name} is not allowed")
