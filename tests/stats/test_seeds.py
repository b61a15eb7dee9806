"""Every statistical figure printed in the seeds is reproduced at its printed precision."""

from __future__ import annotations

import pytest

from rungbench.stats.seeds import SeedFigure, seed_figure_list, seed_figures


def test_every_seed_figure_matches() -> None:
    """All nine seed figures (4 Clopper–Pearson, 4 MDE, 1 McNemar) match when rounded."""
    figures = seed_figures()
    assert len(figures) == 9
    mismatched = {k: (v["printed"], v["computed"]) for k, v in figures.items() if not v["match"]}
    assert mismatched == {}


def test_figures_carry_printed_and_computed_values() -> None:
    """Each figure holds the seed's printed value next to the computation and its seed number."""
    figures = seed_figures()
    assert figures["cp_0_of_40_upper"]["printed"] == 0.088
    assert figures["cp_0_of_40_upper"]["computed"] == pytest.approx(0.08810, abs=1e-5)
    assert figures["mde_sd0.40_d75"]["seed"] == "000"
    assert figures["mcnemar_worlds"]["computed"] == 194


def test_mismatch_is_detected() -> None:
    """A computation off by one printed digit does not match (the comparison can fail)."""
    assert not SeedFigure("x", "003", "s", "q", 0.088, 0.0894, "decimals", 3).match
    assert not SeedFigure("x", "003", "s", "q", 200, 260, "significant", 1).match
    assert SeedFigure("x", "003", "s", "q", 200, 194, "significant", 1).match


def test_keys_are_unique_and_stable() -> None:
    """Keys are unique and in a fixed order."""
    keys = [f.key for f in seed_figure_list()]
    assert len(set(keys)) == len(keys)
    assert keys[0] == "cp_0_of_40_upper" and keys[-1] == "mcnemar_worlds"
