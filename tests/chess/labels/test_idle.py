"""The idle-host gate: a configured load threshold that refuses with host_busy."""

from __future__ import annotations

import pytest

from rungbench.chess.labels.idle import IdleGate, one_minute_load
from rungbench.errors import Refusal


def test_gate_passes_at_threshold_and_refuses_above() -> None:
    """Load equal to the threshold passes; above it refuses naming the moment."""
    assert IdleGate(max_load=2.0, read_load=lambda: 2.0).check("before x") == 2.0
    with pytest.raises(Refusal) as caught:
        IdleGate(max_load=2.0, read_load=lambda: 2.01).check("before publication")
    assert caught.value.codes == ("host_busy",)
    assert caught.value.reasons[0].subject == "before publication"
    assert caught.value.reasons[0].data["load"] == 2.01


def test_gate_configuration_is_recorded() -> None:
    """The recorded gate names its metric and threshold."""
    assert IdleGate(max_load=3.5).to_json() == {"metric": "loadavg_1m", "max_load": 3.5,
                                                 "own_engines_discounted": True}


def test_own_engines_are_discounted() -> None:
    """Load 3.0 with two of the stage's own engines running nets 1.0: passes a 1.5 threshold."""
    gate = IdleGate(max_load=1.5, read_load=lambda: 3.0)
    assert gate.check("before an uncached search", own=2) == 1.0
    with pytest.raises(Refusal):
        gate.check("before engine start")


def test_real_load_is_a_non_negative_number() -> None:
    """The host's load average reads as a finite non-negative float."""
    assert 0.0 <= one_minute_load() < 1e6
