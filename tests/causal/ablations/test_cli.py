"""`rungbench causal arms|ablate|prereg`: one JSON document, exit codes, refusals."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rungbench.cli import app


def test_arms_json_lists_matrix_with_digests() -> None:
    """`causal arms --json` prints the preset digest and every arm's digest."""
    result = CliRunner().invoke(app, ["causal", "arms", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["digest"].startswith("sha256:") and doc["arms"]["A10"]["digest"].startswith("sha")


def test_ablate_json_reports_questions(dev_bench: Path, tmp_path: Path) -> None:
    """`causal ablate --json` through loopback answers Q2 with its interval."""
    result = CliRunner().invoke(app, [
        "causal", "ablate", "--bench", str(dev_bench), "--out", str(tmp_path / "o"),
        "--arms", "A9,A10", "--agent", "planted:graph_only", "--samples", "1",
        "--concurrency", "8", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    q2 = next(q for q in doc["questions"] if q["id"] == "Q2")
    assert q2["answer"] == "yes" and q2["ci95"][0] > 0
    assert set(doc["runs"]) == {"A9", "A10"}


def test_ablate_all_invalid_answers_gives_no_verdict(dev_bench: Path, tmp_path: Path) -> None:
    """The reported case: an agent whose every answer is invalid, `causal ablate --arms A9,A10`
    as a user types it. Every comparison and question using those arms says
    insufficient_valid_answers with valid/total per arm; nothing says equivalent, yes or no."""
    result = CliRunner().invoke(app, [
        "causal", "ablate", "--bench", str(dev_bench), "--out", str(tmp_path / "o"),
        "--arms", "A9,A10", "--agent", "planted:invalid", "--samples", "1",
        "--concurrency", "8", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for arm in ("A9", "A10"):
        assert doc["arms"][arm]["valid"] == {"valid": 0, "total": 40, "share": 0.0,
                                             "sufficient": False}
    row = next(r for r in doc["isolation"] if (r["a"], r["b"]) == ("A10", "A9"))
    assert row["verdict"] == "insufficient_valid_answers" and row["mean"] is None
    assert row["valid"] == {"A10": {"valid": 0, "total": 40}, "A9": {"valid": 0, "total": 40}}
    q2 = next(q for q in doc["questions"] if q["id"] == "Q2")
    assert q2["answer"] == "insufficient_valid_answers" and q2["ci95"] is None
    verdicts = [r["verdict"] for r in doc["isolation"]] + [q["answer"] for q in doc["questions"]]
    assert not {"equivalent", "yes", "no"} & set(verdicts)
    text = CliRunner().invoke(app, [
        "causal", "ablate", "--bench", str(dev_bench), "--out", str(tmp_path / "t"),
        "--arms", "A9,A10", "--agent", "planted:invalid", "--samples", "1",
        "--concurrency", "8"])
    assert text.exit_code == 0, text.output
    assert "insufficient_valid_answers" in text.output and "equivalent" not in text.output
    assert "0/40 (below floor)" in text.output


def test_ablate_unknown_arm_and_agent_errors(dev_bench: Path, tmp_path: Path) -> None:
    """An unknown arm is one error line, exit 1; no agent at all is a usage error (exit 2)
    naming the option."""
    base = ["causal", "ablate", "--bench", str(dev_bench), "--out", str(tmp_path / "o")]
    bad = CliRunner().invoke(app, [*base, "--arms", "A99", "--agent", "planted:reader"])
    assert bad.exit_code == 1 and "A99" in bad.output and "Traceback" not in bad.output
    none = CliRunner().invoke(app, [*base, "--arms", "A0", "--json"])
    document = json.loads(none.stdout)
    assert none.exit_code == 2 and document["error"] == "usage_error"
    assert "--model" in document["message"]


def test_prereg_validate_before_commit_refuses(validation_bench: Path, tmp_path: Path) -> None:
    """`prereg validate` with no committed margins exits 3 with reason not_committed."""
    result = CliRunner().invoke(app, [
        "causal", "prereg", "validate", "A10", "--dir", str(tmp_path / "p"), "--bench",
        str(validation_bench), "--agent", "planted:reader", "--json"])
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["reasons"][0]["code"] == "not_committed"


def test_prereg_sequence_through_the_cli(dev_bench: Path, validation_bench: Path,
                                         tmp_path: Path) -> None:
    """pilot → commit (with an equivalence margin) → validate runs once; the second look exits
    3 with already_seen; `ablate --prereg` applies the committed margin, so the reader's
    A10 − A9 of exactly 0 is equivalent there and inconclusive without it."""
    d = str(tmp_path / "p")
    agent = ["--agent", "planted:reader", "--concurrency", "8", "--json"]
    pilot = CliRunner().invoke(app, ["causal", "prereg", "pilot", "--dir", d, "--bench",
                                     str(dev_bench), *agent])
    assert pilot.exit_code == 0, pilot.output
    assert json.loads(pilot.stdout)["cells"] == 8 * 5 * 3 * 2
    commit = CliRunner().invoke(app, ["causal", "prereg", "commit", "--dir", d,
                                      "--equivalence-margin", "0.05", "--json"])
    assert commit.exit_code == 0, commit.output
    assert json.loads(commit.stdout)["equivalence_margin"] == 0.05
    look = ["causal", "prereg", "validate", "A10", "--dir", d, "--bench", str(validation_bench),
            "--comparator", "A5", "--type", "graph_routing", *agent]
    first = CliRunner().invoke(app, look)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["decision"] in ("accept", "reject", "inconclusive")
    second = CliRunner().invoke(app, look)
    assert second.exit_code == 3
    assert json.loads(second.stdout)["reasons"][0]["code"] == "already_seen"
    ablate = ["causal", "ablate", "--bench", str(dev_bench), "--arms", "A9,A10", "--samples",
              "1", *agent]
    with_margin = CliRunner().invoke(app, [*ablate, "--out", str(tmp_path / "m"), "--prereg", d])
    assert with_margin.exit_code == 0, with_margin.output
    without = CliRunner().invoke(app, [*ablate, "--out", str(tmp_path / "n")])
    rows = [next(r for r in json.loads(out.stdout)["isolation"] if r["a"] == "A10")
            for out in (with_margin, without)]
    assert rows[0]["mean"] == rows[1]["mean"] == 0.0
    assert (rows[0]["verdict"], rows[1]["verdict"]) == ("equivalent", "inconclusive")
    assert json.loads(with_margin.stdout)["margin"] == 0.05


def test_ablate_reports_failure_labels_and_scans_a_leak_cohort(dev_bench: Path,
                                                               validation_bench: Path,
                                                               tmp_path: Path) -> None:
    """`causal ablate --json` counts every failure label per arm (planted:bypass gets
    routing_bypass on the oracle-graph arm, none on the public arm); the text report has the
    label table; `--leak-cohort` that is not a bench is one error line, exit 1."""
    base = ["causal", "ablate", "--bench", str(dev_bench), "--arms", "A3,A10",
            "--agent", "planted:bypass", "--samples", "1", "--per-world", "3",
            "--concurrency", "8"]
    result = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "j"), "--leak-cohort",
                                      str(validation_bench), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    a10, a3 = doc["arms"]["A10"]["failure_labels"], doc["arms"]["A3"]["failure_labels"]
    assert len(a10) == 24 and a10["routing_bypass"] >= 2 and a3["routing_bypass"] == 0
    assert a10["oracle_leakage"] == a3["oracle_leakage"] == 0
    text = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "t")])
    assert text.exit_code == 0 and "| routing_bypass | Detector flagged" in text.output
    bad = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "b"), "--leak-cohort",
                                   str(tmp_path / "nowhere")])
    assert bad.exit_code == 1 and "nowhere" in bad.output and "Traceback" not in bad.output
