"""The E023 key schema's endpoint-validity inputs (src/rungbench/design/preset_models.py):
a registered regret profile and the primary endpoints, each refused naming its key."""

from __future__ import annotations

from importlib import resources

import pytest

from rungbench.design.presets import arms_design
from rungbench.design.registry import parse_design
from rungbench.errors import InputError

PROFILE = "wdl_regret_by_rank = [0.0, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29, 0.31]"
PRIMARIES = 'primary_endpoints = ["wdl_regret", "catastrophic_rate"]'


def _e023(old: str, new: str) -> None:
    text = (resources.files("rungbench.designs") / "e023.toml").read_text(encoding="utf-8")
    assert old in text
    arms_design(parse_design(text.replace(old, new), name="e023", source="mine.toml"))


def test_the_registered_profile_and_primaries_are_read() -> None:
    """arms_design carries the ten registered regret values and both primary endpoints."""
    d = arms_design()
    assert d.wdl_regret_by_rank == (0.0, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29, 0.31)
    assert d.primary_endpoints == ("wdl_regret", "catastrophic_rate")


@pytest.mark.parametrize("profile", [
    "[0.0, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29]",
    "[0.0, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29, 0.31, 0.33]",
    "[0.05, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29, 0.31]",
    "[0.0, 0.10, 0.15, 0.12, 0.21, 0.23, 0.25, 0.27, 0.29, 0.31]",
    "[0.0, 0.10, 0.15, 0.18, 0.21, 0.23, 0.25, 0.27, 0.29, 1.31]",
], ids=["nine", "eleven", "not_zero_first", "decreasing", "above_one"])
def test_a_bad_profile_is_refused_naming_the_key(profile: str) -> None:
    """Ten values (ranks 1-10), 0 first, never decreasing, each in [0, 1]: anything else is
    refused with the key selectors.wdl_regret_by_rank."""
    with pytest.raises(InputError) as info:
        _e023(PROFILE, f"wdl_regret_by_rank = {profile}")
    assert str(info.value.field).startswith("selectors.wdl_regret_by_rank")


def test_primary_endpoints_start_with_the_outcome_and_name_known_endpoints() -> None:
    """catastrophic_rate first (not design.outcome), an unknown endpoint, and a repeat are
    each refused naming analysis.primary_endpoints."""
    for bad in ('["catastrophic_rate", "wdl_regret"]', '["wdl_regret", "brier"]',
                '["wdl_regret", "wdl_regret"]'):
        with pytest.raises(InputError) as info:
            _e023(PRIMARIES, f"primary_endpoints = {bad}")
        assert str(info.value.field).startswith("analysis.primary_endpoints"), bad
