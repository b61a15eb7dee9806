"""`rungbench causal build → eval → report` and `rungbench report`: the sub-capability table
from the command line, on a small built bench (rungbench.causal.bench.subcapabilities)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from rungbench.causal.bench.subcapabilities import NOT_EXERCISED, SEED_SUBCAPABILITIES
from rungbench.cli import app as root_app
from rungbench.cli.causal_bench import register

app = typer.Typer()
register(app)

FAMILIES = "incident,active,revision,provenance,negative"


def _json(application: typer.Typer, args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(application, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_build_eval_report_journey_prints_the_subcapability_table(tmp_path: Path) -> None:
    """Built with the episode families and answered by the rung-1 reference agent, the
    report's JSON holds one row per seed sub-capability (all exercised but the never-asked
    sign and condition F1), the Markdown prints the section, and the HTML report renders
    one table row per sub-capability, a never-asked metric without a count."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    _json(app, ["build", "--split", "dev", "--worlds", "4", "--seed", "9", "--out", str(bench),
                "--families", FAMILIES])
    _json(app, ["eval", "--bench", str(bench), "--agent", "reference:rung1", "--out", str(run)])
    rep = _json(app, ["report", "--run", str(run)])
    table = rep["subcapabilities"]
    assert [r["subcapability"] for r in table] == [s.name for s in SEED_SUBCAPABILITIES]
    statuses = {m["metric"]: m["status"] for r in table for m in r["metrics"]}
    assert statuses.pop("sign_f1") == statuses.pop("condition_f1") == NOT_EXERCISED
    assert NOT_EXERCISED not in statuses.values()
    effect = next(m for r in table for m in r["metrics"] if m["metric"] == "effect_abs_error")
    assert effect["value"] > 0  # the rung-1 agent answers do() with P(y | x)

    md = CliRunner().invoke(app, ["report", "--run", str(run)])
    assert md.exit_code == 0, md.output
    assert "## Sub-capabilities (seed 003)" in md.stdout
    assert "| Model revision | Revision accuracy; collateral retractions |" in md.stdout

    page = _json(root_app, ["report", str(run), "--out", str(tmp_path / "html")])
    assert page["sections"]["subcapabilities"] == "present"
    text = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    body = text.split('<section id="subcapabilities">', 1)[1].split("</section>", 1)[0]
    assert body.count("<tr>") == 1 + len(SEED_SUBCAPABILITIES)
    assert html.escape("Recall@k of true root cause") in body
    assert "not exercised" in body and "0 of 0" not in body  # never asked: no count, no 0
