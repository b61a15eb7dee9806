"""`rungbench causal controls` and `rungbench causal graph ...` end to end (JSON mode)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rungbench.causal.instrument.http_contract import serve_tool
from rungbench.causal.instrument.query import naive
from rungbench.cli import app


def _json(args: list[str], code: int = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_controls_demo_prints_the_table_numbers_and_verdict() -> None:
    """--demo gives the seed's 4-row table, four separate numbers and an 'instrument' verdict."""
    doc = _json(["causal", "controls", "--demo"])
    table = {(t["query"], t["scorer"]): t for t in doc["table"]}
    assert table[("fixed", "lenient")]["C5_false_accepts"]["sign"] == 36
    assert table[("naive", "strict")]["C1_recovered"] == 14
    assert set(doc["four_numbers"]) == {"graph_validity", "graph_coverage",
                                        "query_reliability", "agent_reasoning"}
    assert doc["verdict"].startswith("instrument:")
    coverage = doc["four_numbers"]["graph_coverage"]
    assert coverage["with_source_text"] == coverage["withheld"] == 58 and coverage["leaks"] > 58


def test_controls_default_fixed_strict_passes_with_graph_verdict() -> None:
    """The repaired query with the strict scorer validates the instrument."""
    doc = _json(["causal", "controls"])
    assert doc["table"][0]["instrument_valid"] and doc["verdict"].startswith("graph:")


def test_controls_refuses_the_lenient_scorer_with_exit_3() -> None:
    """Probe C.6 fails for lenient: the run stops with refusal code scorer_defect."""
    doc = _json(["causal", "controls", "--scorer", "lenient"], code=3)
    assert doc["reasons"][0]["code"] == "scorer_defect"


def test_controls_against_a_loopback_http_tool() -> None:
    """--query http://127.0.0.1:PORT audits a user's server; a remote host is refused."""
    with serve_tool(naive) as url:
        doc = _json(["causal", "controls", "--query", url, "--past-probes"])
    assert doc["table"][0]["C1_recovered"] == 14
    bad = _json(["causal", "controls", "--query", "http://192.0.2.1:9/x"], code=1)
    assert "allow-remote" in bad["message"]


def test_graph_build_census_leakage_and_migrate(tmp_path: Path) -> None:
    """build → census sample (sealed) → leakage; migrate keeps a legacy table's rows."""
    store = tmp_path / "g.sqlite"
    built = _json(["causal", "graph", "build", "--out", str(store)])
    assert _json(["causal", "graph", "build", "--out", str(store)], code=3)["refused"]
    sample = _json(["causal", "graph", "census", "sample", "--store", str(store), "--out",
                    str(tmp_path / "census"), "--seed", "4"])
    assert sample["n"] == 100 and sample["population"] == built["edges"]
    leaks = _json(["causal", "graph", "leakage", "--store", str(store)])
    assert leaks["coverage"]["with_source_text"] == leaks["coverage"]["withheld"]
    legacy = tmp_path / "legacy.sqlite"
    conn = sqlite3.connect(legacy)
    conn.execute("CREATE TABLE causal_edges (cause TEXT, effect TEXT)")
    conn.executemany("INSERT INTO causal_edges VALUES (?, ?)", [("a", "b"), ("b", "c")])
    conn.commit()
    conn.close()
    assert _json(["causal", "graph", "migrate", str(legacy)])["rows_after"] == 2
