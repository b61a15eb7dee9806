"""Tests for rungbench.stats.sums: BLAS-free products, the same bytes on every CPU kernel."""

from __future__ import annotations

import numpy as np
import pytest
from tests.blas_kernels import outputs_under_kernels

from rungbench.stats.sums import dot_rows

SCRIPT = """
import numpy as np
from rungbench.stats.bootstrap import cluster_ratio_draws, cluster_tests
from rungbench.stats.factorial import factorial_2x2, factorial_2x2_paired
rng = np.random.default_rng(5)
n = 400
values = rng.random(n) - 0.3
clusters = [f"g{i % 37}" for i in range(n)]
tests = cluster_tests({"d": values}, clusters, n_boot=2000, rng=1)
est, draws = cluster_ratio_draws({"r": (rng.random(n), rng.random(n) + 0.5)}, clusters,
                                 n_boot=2000, rng=2)
cells = [rng.random(n) for _ in range(4)]
paired = factorial_2x2_paired(*cells, clusters, n_boot=2000, rng=3)
plain = factorial_2x2(*(float(c.mean()) for c in cells))
print(repr([tests["d"].to_json(), est, draws["r"].tobytes().hex(), paired.to_json(),
            plain.to_json()]))
"""


def test_dot_rows_is_the_matrix_product() -> None:
    """``dot_rows`` equals ``@`` (to 1e-12) for a matrix or a vector against a vector, with
    integer rows too (resample counts)."""
    rng = np.random.default_rng(0)
    matrix, vector = rng.random((50, 33)), rng.random(33)
    assert np.allclose(dot_rows(matrix, vector), matrix @ vector, rtol=1e-12, atol=0.0)
    counts = rng.integers(0, 4, size=(20, 33))
    assert np.allclose(dot_rows(counts, vector), counts @ vector, rtol=1e-12, atol=0.0)
    assert float(dot_rows(vector, vector)) == pytest.approx(float(vector @ vector), rel=1e-12)
    assert dot_rows(matrix, vector).dtype == np.float64


def test_bootstraps_and_contrasts_are_byte_identical_under_any_blas_kernel() -> None:
    """Cluster bootstrap intervals, ratio draws (every bit) and factorial contrasts computed
    under OpenBLAS's oldest kernel (Prescott on x86) and under the one this CPU picks are
    identical: no published statistic depends on the host's BLAS summation order."""
    oldest, native = outputs_under_kernels(SCRIPT)
    assert oldest == native
    assert len(native) > 1000
