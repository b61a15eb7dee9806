"""Gates: ordered preconditions, all reasons collected, blocking stops, preflight never raises."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rungbench.errors import Reason, Refusal
from rungbench.evidence.gate import Gate, Precondition, require


def _fails(code: str, *, subject: str | None = None) -> Sequence[Reason]:
    return (Reason(code, f"{code} happened", subject),)


def test_passing_gate_runs_every_precondition_in_order() -> None:
    """A gate whose preconditions hold runs them all, in order, and reports passed."""
    calls: list[str] = []

    def ok(name: str) -> Precondition:
        return Precondition(name, lambda: calls.append(name) or ())

    report = Gate("g", (ok("first"), ok("second"), ok("third"))).evaluate()
    assert report.passed
    assert calls == ["first", "second", "third"]
    assert report.checked == ("first", "second", "third")


def test_refusal_carries_every_reason_in_order() -> None:
    """Non-blocking failures are all collected; the Refusal lists their codes in order."""
    gate = Gate(
        "publish",
        (
            Precondition("a", lambda: _fails("absent")),
            Precondition("b", lambda: ()),
            Precondition("c", lambda: _fails("stale") + tuple(_fails("different"))),
        ),
    )
    with pytest.raises(Refusal) as info:
        gate.evaluate()
    assert info.value.gate == "publish"
    assert info.value.codes == ("absent", "stale", "different")
    assert [r.subject for r in info.value.reasons] == ["a", "c", "c"]


def test_blocking_failure_skips_later_preconditions() -> None:
    """A blocking precondition that fails stops the gate; later ones never run."""
    ran: list[str] = []
    gate = Gate(
        "label",
        (
            Precondition("soft", lambda: _fails("idle_host")),
            Precondition("qualification", lambda: _fails("absent"), blocking=True),
            Precondition("engine", lambda: ran.append("engine") or ()),
        ),
    )
    report = gate.preflight()
    assert report.codes == ("idle_host", "absent")
    assert report.checked == ("soft", "qualification")
    assert report.skipped == ("engine",)
    assert ran == []
    assert not report.passed


def test_preflight_returns_reasons_without_raising() -> None:
    """preflight reports a failing gate's reasons as data; evaluate raises the same reasons."""
    gate = Gate("g", (require("budget", lambda: False, "over_budget", "spent 12 of 10"),))
    report = gate.preflight()
    assert report.to_json() == {
        "gate": "g",
        "passed": False,
        "reasons": [{"code": "over_budget", "detail": "spent 12 of 10", "subject": "budget"}],
        "checked": ["budget"],
        "skipped": [],
    }
    with pytest.raises(Refusal) as info:
        gate.evaluate()
    assert info.value.reasons == report.reasons


def test_a_check_may_raise_refusal() -> None:
    """A precondition body that raises Refusal contributes its reasons like a returned list."""

    def body() -> Sequence[Reason]:
        raise Refusal([Reason("different", "rebuilt bytes differ", "qualification")])

    report = Gate("g", (Precondition("q", body),)).preflight()
    assert [(r.code, r.subject) for r in report.reasons] == [("different", "qualification")]


def test_other_errors_are_not_swallowed() -> None:
    """An ordinary exception in a check propagates: a gate never turns a crash into a pass."""

    def body() -> Sequence[Reason]:
        raise RuntimeError("broken check")

    with pytest.raises(RuntimeError, match="broken check"):
        Gate("g", (Precondition("q", body),)).preflight()


def test_duplicate_precondition_names_rejected() -> None:
    """A gate cannot list the same precondition name twice."""
    with pytest.raises(ValueError, match="repeats"):
        Gate("g", (require("x", lambda: True, "c", ""), require("x", lambda: True, "c", "")))


def test_require_holds_when_condition_true() -> None:
    """require() yields no reason when its condition holds."""
    assert Gate("g", (require("x", lambda: True, "c", "d"),)).evaluate().codes == ()


def test_every_reason_of_a_raised_refusal_is_collected() -> None:
    """A check that raises Refusal with two reasons contributes both, in order."""

    def raises() -> Sequence[Reason]:
        raise Refusal([Reason("first", "one"), Reason("second", "two")], gate="inner")

    report = Gate("g", (Precondition("p", raises),)).preflight()
    assert report.codes == ("first", "second")
    assert all(r.subject == "p" for r in report.reasons)
