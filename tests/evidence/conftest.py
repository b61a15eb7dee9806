"""Backends for the ledger suite: every ledger test runs on an SQLite file and on a real
PostgreSQL server (the session's server from tests/conftest.py, a fresh database per test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import backend_target


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's ledger lives: an SQLite file path or a fresh PostgreSQL database URL."""
    return backend_target(request, tmp_path, "ledger")
