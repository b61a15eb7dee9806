"""The ablations demo stage (rungbench.demo.ablations): every arm on the demo's worlds."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.ablations.arms import load_matrix
from rungbench.demo import StageResult
from rungbench.demo.ablations import SEED_ROWS, check, run

pytestmark = pytest.mark.xdist_group("demo_ablations")  # one worker builds the shared run


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, StageResult]:
    """One first run of the stage (2,080 cells), shared by the tests that read it."""
    workdir = tmp_path_factory.mktemp("demo-ablations")
    return workdir, run(workdir)


def test_stage_runs_every_arm_and_reports_every_seed_row(
        first_run: tuple[Path, StageResult]) -> None:
    """All sixteen arms (A4, A6, A7, A8 included) run on the 26 demo worlds; the isolation table
    holds every row of the seed's table and every A11 − A11−k; the planted
    counterfactual-module effect A2 − A4 is above 0 with an interval above 0; a second run
    verifies the runs and reuses the report."""
    workdir, first = first_run
    assert first.failure is None
    s = first.summary
    assert s["arms"] == 16 and s["worlds"] == 26 and s["cells"] == 16 * 26 * 5
    rows = {(r["a"], r["b"]): r for r in s["isolation"]}
    assert set(SEED_ROWS) <= set(rows)
    assert {("A11", f"A11-{k}") for k in ("query", "calc", "identify", "protocol")} <= set(rows)
    planted = rows[("A2", "A4")]
    assert planted["mean"] > 0 and planted["ci95"][0] > 0 and planted["verdict"] == "a_better"
    assert rows[("A9", "A3")]["verdict"] == "a_better"
    assert "equivalent" not in {r["verdict"] for r in s["isolation"]}  # no margin committed
    again = run(workdir)
    assert again.summary["reused"] and again.summary["isolation"] == s["isolation"]
    assert first.report == {"ablations": first.detail}


def test_html_report_shows_every_isolation_row(first_run: tuple[Path, StageResult]) -> None:
    """Published through the demo's report (the stage reusing the first run's verified
    arms), the ablations section holds one row per comparison of the preset, every seed row
    among them, each with its verdict."""
    from rungbench.demo import STAGES, publish_report, run_demo

    workdir, _ = first_run
    outcomes = run_demo(workdir, stages=tuple(s for s in STAGES if s.key == "ablations"))
    rendered = publish_report(workdir, outcomes)
    assert rendered["sections"]["ablations"] == "present"
    html = (workdir / "report" / "index.html").read_text("utf-8")
    body = html[html.index('id="ablation-isolation"'):]
    body = body[:body.index("</table>")]
    assert body.count("<tr><td>") == len(load_matrix().comparisons)
    for a, b in (*SEED_ROWS, ("A2", "A4"), ("A8", "A5")):
        assert f"<tr><td>{a} − {b}</td>" in body


def test_check_names_a_missing_seed_row_and_a_lost_planted_effect() -> None:
    """A report without A6 − A5 fails naming it; one whose A2 − A4 is not above 0 fails too."""
    matrix = load_matrix()
    rows = [{"a": a, "b": b, "mean": 0.1} for a, b in SEED_ROWS if (a, b) != ("A6", "A5")]
    rows += [{"a": c.a, "b": c.b, "mean": 0.1} for c in matrix.comparisons if c.a == "A11"]
    rows.append({"a": "A2", "b": "A4", "mean": 0.1})
    assert check({"isolation": rows}, matrix) == "isolation rows missing: A6 − A5"
    rows.append({"a": "A6", "b": "A5", "mean": -0.1})
    assert check({"isolation": rows}, matrix) is None
    rows[-2] = {"a": "A2", "b": "A4", "mean": 0.0}
    assert "A2 − A4" in str(check({"isolation": rows}, matrix))
