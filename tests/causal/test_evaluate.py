"""Tests for rungbench.causal.evaluate and reference_agents (must-show figures of issue 4)."""

from __future__ import annotations

import json
import pathlib

import pytest

from rungbench.causal.build import build_split
from rungbench.causal.evaluate import evaluate, score_run
from rungbench.causal.reference_agents import SIGNATURES, reference_agent
from rungbench.errors import InputError


@pytest.fixture(scope="module")
def benches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("benches")
    out = {}
    for split in ("dev", "validation", "test"):
        out[split] = root / split
        build_split(split, 18, 77, out[split])
    return out


@pytest.mark.parametrize("split", ["dev", "validation", "test"])
def test_oracle_agent_scores_100_percent(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, split: str
) -> None:
    """The oracle reference agent is right on every case of every split."""
    s = evaluate(benches[split], "reference:oracle", tmp_path / "run")
    o = s["outcomes"]
    assert o["correct"] + o["correct_non_id"] == s["n"] > 0
    assert o["correct_non_id"] > 0


def test_always_abstain_fills_exactly_the_abstention_cells(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """always-abstain lands every case in the abstain cell and nowhere else."""
    s = evaluate(benches["test"], "reference:always_abstain", tmp_path / "run")
    assert s["outcomes"]["abstain"] == s["n"]
    assert sum(s["outcomes"].values()) == s["n"]
    assert s["labels"] == {}


@pytest.mark.parametrize("agent", sorted(SIGNATURES))
def test_confused_agents_get_their_signature(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, agent: str
) -> None:
    """Each confused reference agent carries its signature label on >= 95% of its failures."""
    s = evaluate(benches["test"], f"reference:{agent}", tmp_path / "run")
    sig = s["signature"]
    assert sig["failed"] > 0
    assert sig["rate"] >= 0.95
    assert s["outcomes"]["invalid"] == 0


def test_run_manifest_and_verdicts_written(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A run writes responses, verdicts with world clusters, and a run_manifest naming the split."""
    run = tmp_path / "run"
    evaluate(benches["dev"], "reference:rung1", run)
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["split"] == "dev" and manifest["arm"] == "reference:rung1"
    assert manifest["scorer_hash"].startswith("sha256:")
    rows = [json.loads(t) for t in (run / "verdicts.jsonl").read_text().splitlines()]
    assert all(r["world_id"] for r in rows)


def test_bad_response_lines_are_counted_invalid(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A file with bad lines is still scored; bad lines are invalid, missing cases counted."""
    run = tmp_path / "run"
    evaluate(benches["dev"], "reference:oracle", run)
    lines = (run / "responses.jsonl").read_text().splitlines()
    good = len(lines) - 4
    first = json.loads(lines[0])
    bad = [
        "{broken",
        json.dumps({k: v for k, v in first.items() if k != "status"}),
        json.dumps({**first, "case_id": "nope"}),
        json.dumps({**first, "value": 1.5}),
    ]
    (run / "responses.jsonl").write_text("\n".join(lines[:good] + bad) + "\n")
    s = score_run(benches["dev"], run, "external")
    assert s["outcomes"]["invalid"] == 4
    assert s["n"] == len(lines)
    assert s["missing"] == 4
    errors = [json.loads(t)["verdict"]["error"]
              for t in (run / "verdicts.jsonl").read_text().splitlines()[good:]]
    assert f":{good + 1}: malformed JSON" in errors[0]
    assert f":{good + 4}: value 1.5 outside [0, 1]" in errors[3]


def test_unknown_agent_is_an_input_error() -> None:
    """An unknown agent spec names the known reference agents."""
    with pytest.raises(InputError, match="reference:oracle"):
        reference_agent("reference:psychic", {})
