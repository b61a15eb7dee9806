"""Backends for the ledger suite: every ledger test runs on an SQLite file and on a real
PostgreSQL server (one throw-away server per test session, a fresh database per test)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rungbench.evidence.database import PostgresServer, postgres_server, postgres_unavailable

_names = itertools.count(1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server from Debian's binaries; skipped only when they are absent (CI fails)."""
    reason = postgres_unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs PostgreSQL, so these tests must run: {reason}")
        pytest.skip(reason)
    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's ledger lives: an SQLite file path or a fresh PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "l.sqlite")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(f"ledger_{os.getpid()}_{next(_names)}")
