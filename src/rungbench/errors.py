"""The one error tree of rungbench.

::

    RungbenchError                 root; the CLI maps it to exit code 1
    ├── InputError (ValueError)    bad input, naming the file, line and field
    │   └── ExtraMissing           a command needs an optional extra that is not installed
    ├── IntegrityError             a digest did not match the bytes it names
    └── Refusal                    a gate said no, with machine-readable reason codes (exit 3)

A gate raises; it never warns and continues.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class RungbenchError(Exception):
    """Raised for every failure rungbench itself detects."""


class InputError(RungbenchError, ValueError):
    """Raised when input is malformed; the message names the path, line or field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = ":".join(str(p) for p in (path, line) if p is not None)
        prefix = f"{where}: " if where else ""
        suffix = f" (field {field!r})" if field else ""
        super().__init__(f"{prefix}{message}{suffix}")


class ExtraMissing(InputError):
    """Raised when a command needs an optional extra (``rungbench[name]``) not installed."""


def missing_extra(module: str, extra: str) -> str | None:
    """Why ``module`` of the optional extra ``extra`` cannot be used here (None: it can)."""
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed; pip install 'rungbench[{extra}]'"
    return None


def require_extra(module: str, extra: str, *, field: str) -> None:
    """Raise :class:`ExtraMissing` (naming ``field``) unless ``module`` is installed."""
    why = missing_extra(module, extra)
    if why is not None:
        raise ExtraMissing(why, field=field)


class IntegrityError(RungbenchError):
    """Raised when stored bytes do not hash to the digest that names them."""


@dataclass(frozen=True)
class Reason:
    """One machine-readable cause of a refusal."""

    code: str
    """Stable reason code, e.g. ``absent``, ``stale``, ``different``."""
    detail: str = ""
    """Human-readable explanation naming the offending input."""
    subject: str | None = None
    """The input, file or field the reason is about."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Extra machine-readable context (digests, counts)."""

    def to_json(self) -> dict[str, Any]:
        """Return the reason as a JSON-ready mapping."""
        out: dict[str, Any] = {"code": self.code, "detail": self.detail}
        if self.subject is not None:
            out["subject"] = self.subject
        if self.data:
            out["data"] = dict(self.data)
        return out


class Refusal(RungbenchError):
    """Raised when a gate refuses; carries one or more reason codes."""

    def __init__(self, reasons: Sequence[Reason], *, gate: str = "") -> None:
        if not reasons:
            raise ValueError("a Refusal needs at least one reason")
        self.reasons = tuple(reasons)
        self.gate = gate
        codes = ", ".join(r.code for r in self.reasons)
        head = f"{gate} refused" if gate else "refused"
        details = "; ".join(f"{r.code}: {r.detail}" for r in self.reasons if r.detail)
        super().__init__(f"{head} [{codes}]" + (f" — {details}" if details else ""))

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes in order."""
        return tuple(r.code for r in self.reasons)

    def to_json(self) -> dict[str, Any]:
        """Return the refusal as a JSON-ready mapping."""
        return {"refused": True, "gate": self.gate, "reasons": [r.to_json() for r in self.reasons]}
