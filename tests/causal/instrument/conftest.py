"""Backends for the claim-store and graph-store suites: each test taking ``store_target`` runs
on an SQLite file and on a real PostgreSQL server (the session's server, a fresh database)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import backend_target


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives: an SQLite file path or a fresh PostgreSQL database URL."""
    return backend_target(request, tmp_path, "store")
