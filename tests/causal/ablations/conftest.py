"""Shared fixtures: one small sealed dev bench, built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.bench.build import build_split


@pytest.fixture(scope="session")
def dev_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sealed 8-world dev bench (real build, real seal)."""
    out = tmp_path_factory.mktemp("ablations") / "dev"
    build_split("dev", 8, 11, out)
    return out


@pytest.fixture(scope="session")
def validation_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sealed 6-world validation bench (the cohort preregistered looks are counted on)."""
    out = tmp_path_factory.mktemp("ablations") / "validation"
    build_split("validation", 6, 12, out)
    return out
