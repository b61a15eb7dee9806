"""2×2 factorial estimands of seed 000 (A105): hand answers, synthetic surfaces, bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rungbench.errors import InputError
from rungbench.stats import factorial_2x2, factorial_2x2_paired, paired_cluster_bootstrap

CELL = st.floats(-10, 10, allow_nan=False)


def test_known_answer_by_hand() -> None:
    """R = (0.5, 0.4, 0.3, 0.1) for (00, 01, 10, 11): hand-computed main, simple, interaction."""
    est = factorial_2x2(r00=0.5, r01=0.4, r10=0.3, r11=0.1)
    assert est.simple_b_without_l == pytest.approx(0.2)  # R(0,0) − R(1,0)
    assert est.simple_b_with_l == pytest.approx(0.3)  # R(0,1) − R(1,1)
    assert est.main_b == pytest.approx(0.25)  # 0.5 × (0.2 + 0.3), seed 000
    assert est.simple_l_without_b == pytest.approx(0.1)  # R(0,0) − R(0,1)
    assert est.simple_l_with_b == pytest.approx(0.2)  # R(1,0) − R(1,1)
    assert est.main_l == pytest.approx(0.15)  # 0.5 × (0.1 + 0.2), seed 000
    assert est.interaction == pytest.approx(0.1)


def test_board_limited_signature() -> None:
    """B helps equally with or without L, L does nothing: main B only, no interaction."""
    est = factorial_2x2(0.5, 0.5, 0.2, 0.2)
    assert (est.main_b, est.main_l, est.interaction) == pytest.approx((0.3, 0.0, 0.0))
    assert est.b_simple_effects_agree() and not est.l_simple_effects_agree()


def test_substitutable_signature() -> None:
    """B helps only when L is absent (seed 000): negative interaction, B simple effects disagree."""
    est = factorial_2x2(0.5, 0.2, 0.2, 0.2)
    assert est.simple_b_without_l == pytest.approx(0.3)
    assert est.simple_b_with_l == pytest.approx(0.0)
    assert est.main_b == pytest.approx(0.15)
    assert est.interaction == pytest.approx(-0.3)
    assert not est.b_simple_effects_agree()


def test_complementary_signature() -> None:
    """Neither helps alone, both together do (seed 000 'package'): positive interaction."""
    est = factorial_2x2(0.5, 0.5, 0.5, 0.2)
    assert (est.main_b, est.main_l) == pytest.approx((0.15, 0.15))
    assert est.interaction == pytest.approx(0.3)
    assert est.simple_b_without_l == pytest.approx(0.0)


def test_null_surface() -> None:
    """Equal cells give every estimand zero."""
    assert all(v == 0.0 for v in factorial_2x2(0.3, 0.3, 0.3, 0.3).to_json().values())


@settings(deadline=None)
@given(r00=CELL, r01=CELL, r10=CELL, r11=CELL, shift=CELL)
def test_estimand_identities(r00: float, r01: float, r10: float, r11: float,
                             shift: float) -> None:
    """Main = mean of simple effects; interaction is symmetric in B and L; shifts cancel."""
    est = factorial_2x2(r00, r01, r10, r11)
    assert est.main_b == pytest.approx(0.5 * (est.simple_b_without_l + est.simple_b_with_l),
                                       abs=1e-9)
    assert est.main_l == pytest.approx(0.5 * (est.simple_l_without_b + est.simple_l_with_b),
                                       abs=1e-9)
    assert est.interaction == pytest.approx(est.simple_l_with_b - est.simple_l_without_b,
                                            abs=1e-9)
    shifted = factorial_2x2(r00 + shift, r01 + shift, r10 + shift, r11 + shift)
    assert shifted.main_b == pytest.approx(est.main_b, abs=1e-8)
    assert shifted.interaction == pytest.approx(est.interaction, abs=1e-8)


def _units(seed: int, n_games: int = 30, per_game: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(n_games), per_game)
    base = rng.uniform(0.2, 0.6, size=n_games)[clusters]
    cells = {name: base - drop + rng.normal(scale=0.05, size=clusters.size)
             for name, drop in (("r00", 0.0), ("r01", 0.05), ("r10", 0.1), ("r11", 0.2))}
    return {**cells, "clusters": clusters}


def test_paired_point_estimates_equal_cell_mean_estimands() -> None:
    """On per-unit data the point estimates equal factorial_2x2 of the cell means."""
    u = _units(1)
    result = factorial_2x2_paired(u["r00"], u["r01"], u["r10"], u["r11"], u["clusters"],
                                  n_boot=200, rng=3)
    cell_means = factorial_2x2(*(float(np.mean(u[k])) for k in ("r00", "r01", "r10", "r11")))
    assert result.point().to_json() == pytest.approx(cell_means.to_json())
    assert result.main_b.low < result.main_b.mean < result.main_b.high
    assert result.main_b.n == 60 and result.main_b.n_clusters == 30


def test_paired_main_effect_equals_paired_bootstrap_of_margins() -> None:
    """main_b's interval is the cluster bootstrap of R(0,·) − R(1,·) margins under one seed."""
    u = _units(2)
    result = factorial_2x2_paired(u["r00"], u["r01"], u["r10"], u["r11"], u["clusters"],
                                  n_boot=500, rng=9)
    direct = paired_cluster_bootstrap(0.5 * (u["r00"] + u["r01"]), 0.5 * (u["r10"] + u["r11"]),
                                      u["clusters"], n_boot=500, rng=9)
    assert (result.main_b.low, result.main_b.high) == pytest.approx((direct.low, direct.high))


def test_paired_is_deterministic_per_seed() -> None:
    """Same seed, same intervals; the JSON form carries every estimand."""
    u = _units(3)
    args = (u["r00"], u["r01"], u["r10"], u["r11"], u["clusters"])
    one = factorial_2x2_paired(*args, n_boot=200, rng=4)
    assert one == factorial_2x2_paired(*args, n_boot=200, rng=4)
    assert set(one.to_json()) == {"main_b", "main_l", "interaction", "simple_b_without_l",
                                  "simple_b_with_l", "simple_l_without_b", "simple_l_with_b"}


def test_paired_cells_must_have_equal_length() -> None:
    """A unit missing from one cell raises InputError naming that cell."""
    with pytest.raises(InputError) as info:
        factorial_2x2_paired([1.0, 2.0], [1.0, 2.0], [1.0], [1.0, 2.0], ["a", "b"], rng=0)
    assert info.value.field == "r10"


def test_non_finite_cell_raises() -> None:
    """A NaN cell mean raises InputError."""
    with pytest.raises(InputError):
        factorial_2x2(0.1, float("nan"), 0.2, 0.3)


def test_extra_unit_in_a_later_cell_is_an_input_error() -> None:
    """A cell with more units than R(0,0) raises InputError naming that cell, not a numpy error."""
    with pytest.raises(InputError) as info:
        factorial_2x2_paired([1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0], [1.0, 2.0], ["a", "b"],
                             rng=0)
    assert info.value.field == "r01"


def test_l_agreement_reads_l_simple_effects() -> None:
    """R = (0.5, 0.4, 0.6, 0.3): L helps in both B arms (0.1, 0.3); B's effects disagree."""
    est = factorial_2x2(0.5, 0.4, 0.6, 0.3)
    assert est.simple_l_without_b == pytest.approx(0.1)
    assert est.simple_l_with_b == pytest.approx(0.3)
    assert est.l_simple_effects_agree()
    assert not est.b_simple_effects_agree()
