"""Fixtures shared across the suite: a real PostgreSQL server for the backend-parametrized
suites (ledger, graph store, claim tables), one throw-away server per test session; one local
Ray cluster for the Ray executor tests."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rungbench.evidence.database import PostgresServer, postgres_server, postgres_unavailable

_names = itertools.count(1)


def skip_unless_ci(reason: str) -> None:
    """Skip a test whose prerequisite is missing on this machine; under CI, which installs
    every prerequisite and runs as root, fail instead, so that nothing is skipped silently."""
    if os.environ.get("CI"):
        pytest.fail(f"CI provides this test's prerequisite, so it must run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server from Debian's binaries; skipped only when they are absent (CI fails)."""
    reason = postgres_unavailable()
    if reason is not None:
        skip_unless_ci(reason)
    with postgres_server() as server:
        yield server


def backend_target(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> str:
    """An SQLite file path (param ``sqlite``) or a fresh PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(f"{name}_{os.getpid()}_{next(_names)}")


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """One local Ray cluster (``ray.init(num_cpus=2)``) shared by every Ray test of this process;
    skipped only without the ``rungbench[ray]`` extra (CI fails instead)."""
    from rungbench.execute.executors import ray_missing, ray_session

    reason = ray_missing()
    if reason is not None:
        skip_unless_ci(reason)
    with ray_session(num_cpus=2) as session:
        yield session
