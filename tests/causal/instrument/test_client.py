"""The Python client against a real logger: receipts, refusals, isolation, throughput."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rungbench.causal.instrument import claims, logger
from rungbench.causal.instrument.client import (
    ClaimClient,
    LoggerUnavailable,
    insert_many,
    span_hash,
    throughput,
    tool_call_event,
)
from rungbench.errors import IntegrityError, Refusal


@pytest.fixture
def pair() -> Iterator[tuple[logger.LoggerConfig, logger.LoggerConfig]]:
    """A production logger and a scratch benchmark logger (namespace bench:)."""
    d = Path(tempfile.mkdtemp(prefix="rbc-", dir="/tmp"))
    prod = logger.LoggerConfig(str(d / "prod"), allow_root=True)
    scratch = logger.LoggerConfig(str(d / "scratch"), allow_root=True, namespace="bench:",
                                  reserved=())
    logger.start(prod)
    logger.start(scratch)
    try:
        yield prod, scratch
    finally:
        for c in (prod, scratch):
            if logger.read_pid(c.pid_path) is not None:
                logger.stop(c)
        shutil.rmtree(d, ignore_errors=True)


def _counts(config: logger.LoggerConfig) -> dict[str, int]:
    db = claims.open_readonly(config.db_path)
    try:
        return claims.row_counts(db)
    finally:
        db.close()


def test_receipts_chain_in_order(pair: tuple[logger.LoggerConfig, logger.LoggerConfig]) -> None:
    """Receipts number rows 1..n and are kept on the client."""
    prod, _ = pair
    receipts = insert_many(prod.socket_path, "e1", 5)
    assert [r.log_seq for r in receipts] == [1, 2, 3, 4, 5]
    assert all(r.table == "causal_tool_call" for r in receipts)
    assert claims.verify_store(prod.db_path, claims.anchors_from(receipts)).ok


def test_refusal_carries_the_reason_codes(
        pair: tuple[logger.LoggerConfig, logger.LoggerConfig]) -> None:
    """A refused insert raises Refusal whose codes are the logger's."""
    prod, _ = pair
    with ClaimClient(prod.socket_path) as c, pytest.raises(Refusal) as err:
        c.insert("tool_call", {**tool_call_event("e", 1), "latency_ms": -1})
    assert err.value.codes == ("invalid_field",)
    assert err.value.reasons[0].subject == "latency_ms"


def test_no_logger_is_an_error(tmp_path: Path) -> None:
    """Connecting where no logger listens raises LoggerUnavailable naming the socket."""
    with pytest.raises(LoggerUnavailable, match="no logger"):
        ClaimClient(tmp_path / "absent.sock").connect()


def test_benchmark_run_leaves_production_counts_unchanged(
        pair: tuple[logger.LoggerConfig, logger.LoggerConfig]) -> None:
    """Seed "Test isolation": a bench run on the scratch logger passes the row-count gate,
    a stray production write fails it naming the table."""
    prod, scratch = pair
    insert_many(prod.socket_path, "live-1", 3)
    with claims.production_unchanged(prod.db_path) as before:
        assert before["causal_tool_call"] == 3
        insert_many(scratch.socket_path, "bench:w1", 20)
        with ClaimClient(prod.socket_path) as c, pytest.raises(Refusal) as err:
            c.insert("tool_call", tool_call_event("bench:w2", 0))  # production refuses bench
        assert err.value.codes == ("namespace",)
    assert _counts(scratch)["causal_tool_call"] == 20
    with pytest.raises(Refusal) as gate, claims.production_unchanged(prod.db_path):
        insert_many(prod.socket_path, "live-2", 1)  # a stray write during the run
    assert gate.value.codes == ("production_rows_changed",)
    assert gate.value.reasons[0].subject == "causal_tool_call"


def test_throughput_counts_every_event(
        pair: tuple[logger.LoggerConfig, logger.LoggerConfig]) -> None:
    """The throughput measurement stores clients × events rows with an intact chain."""
    _, scratch = pair
    out = throughput(scratch.socket_path, 3, 40)
    assert out["events"] == 120 and out["events_per_second"] > 0
    assert claims.verify_store(scratch.db_path).rows["causal_tool_call"] == 120


def test_span_hash_is_a_digest() -> None:
    """span_hash gives the sha256 digest form opportunities store."""
    assert span_hash("why?") == (
        "sha256:" + __import__("hashlib").sha256(b"why?").hexdigest())


def test_readonly_open_refuses_a_missing_store(tmp_path: Path) -> None:
    """Readers never create a store: a missing file is an IntegrityError."""
    with pytest.raises(IntegrityError, match="no claim store"):
        claims.open_readonly(tmp_path / "nope.sqlite")
    assert not (tmp_path / "nope.sqlite").exists()
