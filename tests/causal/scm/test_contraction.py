"""Tests for rungbench.causal.scm.contraction: aligned einsum calls give the plain product."""

from __future__ import annotations

import numpy as np

from rungbench.causal.scm.contraction import ALIGN_FROM, compile_contraction


def _random_factors(rng: np.random.Generator, n_vars: int, n_factors: int, width: int
                    ) -> tuple[list[tuple[str, ...]], list[np.ndarray]]:
    names = [f"x{i:02d}" for i in range(n_vars)]
    scopes = [tuple(str(v) for v in rng.choice(names, size=int(rng.integers(1, width + 1)),
                                               replace=False)) for _ in range(n_factors)]
    return scopes, [rng.random((2,) * len(sc)) for sc in scopes]


def _direct(scopes: list[tuple[str, ...]], tables: list[np.ndarray],
            keep: tuple[str, ...]) -> np.ndarray:
    """The product of all factors summed onto ``keep`` in one einsum (no elimination)."""
    label = {a: i for i, a in enumerate(dict.fromkeys(a for sc in scopes for a in sc))}
    args: list[object] = []
    for sc, t in zip(scopes, tables, strict=True):
        args += [t, [label[a] for a in sc]]
    return np.asarray(np.einsum(*args, [label[a] for a in keep], optimize="greedy"))


def test_compiled_calls_equal_the_direct_product() -> None:
    """On 40 random factor sets (up to 16 variables, wide enough for aligned calls), running
    the compiled calls in a random elimination order equals one direct einsum to 1e-12."""
    rng = np.random.default_rng(3)
    aligned = 0
    for _ in range(40):
        scopes, tables = _random_factors(rng, 16, 14, 6)
        names = sorted({a for sc in scopes for a in sc})
        keep = tuple(str(v) for v in rng.choice(names, size=2, replace=False))
        order = [str(v) for v in rng.permutation([a for a in names if a not in keep])]
        plan = compile_contraction(scopes, order, keep)
        aligned += sum(len({i for s in call[2] for i in s}) >= ALIGN_FROM
                       for call in plan.steps)
        inputs = [plan.align(i, sc, t) for i, (sc, t) in enumerate(zip(scopes, tables,
                                                                       strict=True))]
        got = plan.run(inputs)
        want = _direct(scopes, tables, keep)
        assert got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-12, atol=0.0)
    assert aligned > 20  # the aligned (permuting) path was exercised


def test_largest_counts_every_table_built() -> None:
    """``largest`` is the widest of the inputs and of every call's result, and no pairwise
    product is wider than the result of its step (the memory estimate holds)."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        scopes, _ = _random_factors(rng, 12, 10, 5)
        names = sorted({a for sc in scopes for a in sc})
        order = [a for a in names if a != names[0]]
        plan = compile_contraction(scopes, order, (names[0],))
        widths = [len(sc) for sc in scopes] + [len(call[3]) for call in plan.steps]
        assert plan.largest == max(widths)
