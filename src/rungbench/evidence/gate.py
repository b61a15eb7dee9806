"""Gates: ordered preconditions that refuse with machine-readable reasons.

A gate runs its preconditions in their registered order and collects every
reason. A precondition marked ``blocking`` stops the gate when it fails: the
preconditions after it are skipped (recorded as such), because they depend on
what it guards; the seed 002 label stage, for example, must not construct an
engine process once terminal qualification has failed. A gate raises
:class:`~rungbench.errors.Refusal` carrying all collected reasons in order; it
never warns and continues. :meth:`Gate.preflight` runs the same checks and
returns the report without raising.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rungbench.errors import Reason, Refusal

Check = Callable[[], Sequence[Reason]]
"""A precondition body: returns the reasons it fails for (empty when it holds).

It may also raise :class:`Refusal`; its reasons are then collected the same way.
"""


@dataclass(frozen=True)
class Precondition:
    """One named, ordered condition of a gate."""

    name: str
    """Stable name of the condition, shown in reports."""
    check: Check
    """The body; see :data:`Check`."""
    blocking: bool = False
    """When true, a failure skips every later precondition of the gate."""


@dataclass(frozen=True)
class GateReport:
    """What evaluating a gate found."""

    gate: str
    """Name of the gate."""
    reasons: tuple[Reason, ...]
    """Every reason collected, in precondition order."""
    checked: tuple[str, ...]
    """Preconditions that ran, in order."""
    skipped: tuple[str, ...]
    """Preconditions not run because a blocking one failed before them."""

    @property
    def passed(self) -> bool:
        """Whether every precondition ran and held."""
        return not self.reasons and not self.skipped

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes in order."""
        return tuple(r.code for r in self.reasons)

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready mapping."""
        return {
            "gate": self.gate,
            "passed": self.passed,
            "reasons": [r.to_json() for r in self.reasons],
            "checked": list(self.checked),
            "skipped": list(self.skipped),
        }

    def raise_if_refused(self) -> None:
        """Raise :class:`Refusal` with every collected reason unless the gate passed."""
        if self.reasons:
            raise Refusal(self.reasons, gate=self.gate)


@dataclass(frozen=True)
class Gate:
    """A named, ordered list of preconditions."""

    name: str
    """Name of the gate, carried by its refusals."""
    preconditions: tuple[Precondition, ...]
    """Conditions in evaluation order."""

    def __post_init__(self) -> None:
        names = [p.name for p in self.preconditions]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"gate {self.name!r} repeats preconditions {duplicates}")

    def preflight(self) -> GateReport:
        """Run the preconditions in order and return what they found, never raising Refusal."""
        reasons: list[Reason] = []
        checked: list[str] = []
        for index, pre in enumerate(self.preconditions):
            checked.append(pre.name)
            found = _run_check(pre)
            reasons.extend(found)
            if found and pre.blocking:
                skipped = tuple(p.name for p in self.preconditions[index + 1 :])
                return GateReport(self.name, tuple(reasons), tuple(checked), skipped)
        return GateReport(self.name, tuple(reasons), tuple(checked), ())

    def evaluate(self) -> GateReport:
        """Run the preconditions; raise :class:`Refusal` with all reasons if any failed."""
        report = self.preflight()
        report.raise_if_refused()
        return report


def _run_check(pre: Precondition) -> tuple[Reason, ...]:
    try:
        found = tuple(pre.check())
    except Refusal as refusal:
        found = refusal.reasons
    return tuple(_with_subject(r, pre.name) for r in found)


def _with_subject(reason: Reason, name: str) -> Reason:
    if reason.subject is not None:
        return reason
    return Reason(reason.code, reason.detail, name, reason.data)


def require(
    name: str, condition: Callable[[], bool], code: str, detail: str, *, blocking: bool = False
) -> Precondition:
    """Return a precondition that fails with ``code``/``detail`` when ``condition()`` is false."""

    def check() -> Sequence[Reason]:
        return () if condition() else (Reason(code, detail, name),)

    return Precondition(name, check, blocking=blocking)
