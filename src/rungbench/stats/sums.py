"""Products summed by numpy in a fixed order, never by BLAS.

A BLAS kernel (``@``, ``np.dot``, ``np.tensordot``) is chosen by the CPU it runs on, and
each kernel sums in its own order: the last bit of a bootstrap draw, a contrast or an
oracle value then depends on the host, and so do the digests of the records holding them
(a bench sealed on an AVX-512 host did not match the same build on an AVX2 one). An
elementwise product is exact per element and numpy's reduction runs the same code on every
host, so these sums are byte-identical wherever they run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from rungbench.stats._checks import FloatArray


def dot_rows(rows: NDArray[Any], vector: NDArray[Any]) -> FloatArray:
    """``rows @ vector`` (the last axis of ``rows`` against ``vector``), host-independent."""
    product: FloatArray = np.multiply(rows, vector, dtype=np.float64)
    return np.asarray(product.sum(axis=-1), dtype=np.float64)
