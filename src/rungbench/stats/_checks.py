"""Input checks shared by the statistics modules; each raises InputError naming the field."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rungbench.errors import InputError

FloatArray = npt.NDArray[np.float64]

MAX_COUNT = 2**53
"""Largest count accepted: beyond it an integer no longer converts to a float exactly."""


def check_alpha(alpha: float, *, field: str = "alpha") -> float:
    """Return ``alpha`` if it lies strictly between 0 and 1."""
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and 0.0 < alpha < 1.0):
        raise InputError(f"{field} must lie strictly between 0 and 1, got {alpha!r}", field=field)
    return float(alpha)


def check_power(power: float, *, field: str = "power") -> float:
    """Return ``power`` if it lies strictly between 0.5 and 1.

    Below one half, z_power is negative: the normal-approximation planners would then
    return a negative MDE or a sample size that falls as the target power falls.
    """
    if not (isinstance(power, int | float) and math.isfinite(power) and 0.5 < power < 1.0):
        raise InputError(f"{field} must lie strictly between 0.5 and 1, got {power!r}",
                         field=field)
    return float(power)


def check_count(value: int, *, field: str, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer from ``minimum`` to :data:`MAX_COUNT`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(f"{field} must be an integer, got {value!r}", field=field)
    if value < minimum:
        raise InputError(f"{field} must be at least {minimum}, got {value!r}", field=field)
    if value > MAX_COUNT:
        raise InputError(f"{field} must be at most {MAX_COUNT}, got {value!r}", field=field)
    return int(value)


def check_finite_result(value: float, *, what: str, field: str) -> float:
    """Return ``value`` if it is finite; else an InputError blaming the input ``field``."""
    if not math.isfinite(value):
        raise InputError(f"{what} is {value!r}: {field} is out of the range a float can "
                         "represent", field=field)
    return value


def check_positive(value: float, *, field: str) -> float:
    """Return ``value`` if it is a finite number greater than zero."""
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InputError(f"{field} must be a finite number > 0, got {value!r}", field=field)
    return float(value)


def as_finite_vector(values: Sequence[float] | FloatArray, *, field: str) -> FloatArray:
    """Return ``values`` as a non-empty 1-D float array with no NaN or Inf."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{field} must be a sequence of numbers ({exc})", field=field) from exc
    if array.ndim != 1 or array.size == 0:
        raise InputError(f"{field} must be a non-empty 1-D sequence, got shape {array.shape}",
                         field=field)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise InputError(f"{field}[{bad[0]}] is not finite: {float(array[bad[0]])!r}", field=field)
    return array


def check_pvalues(pvalues: Sequence[float]) -> FloatArray:
    """Return ``pvalues`` as an array after checking each lies in [0, 1]."""
    array = as_finite_vector(list(pvalues), field="pvalues")
    bad = np.flatnonzero((array < 0) | (array > 1))
    if bad.size:
        raise InputError(f"pvalues[{bad[0]}] = {float(array[bad[0]])!r} is not in [0, 1]",
                         field="pvalues")
    return array
