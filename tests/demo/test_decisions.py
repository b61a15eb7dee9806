"""The decisions demo stage (rungbench.demo.decisions): question 3 from the demo incidents."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.decisions import run


def test_stage_answers_question_3_and_reuses_its_runs(tmp_path: Path) -> None:
    """P2 lowers the expected repair loss against premature commitment (interval below 0);
    question 3 is answered with its interval and the cost rule; a second run reuses the
    bench and both runs (same run folders, same numbers; only the log heads moved, by the
    resume's session record)."""
    first = run(tmp_path)
    assert first.failure is None
    s = first.summary
    assert s["loss_delta"]["high"] < 0 and s["loss_delta"]["n_clusters"] == 12
    q = s["question_3"]
    assert q["interval"] == [s["loss_delta"]["low"], s["loss_delta"]["high"]]
    assert s["cost"]["ratio"] > 1.25 and q["answer"] == "no" and "ceiling" in q["why"]
    assert s["outcomes"]["a"]["success_rate"] > s["outcomes"]["b"]["success_rate"]
    written = json.loads(Path(s["written"]).read_text())
    second = run(tmp_path)
    again = json.loads(Path(second.summary["written"]).read_text())
    for doc in (written, again):
        doc.pop("digest")  # it covers the log heads
        for r in doc["runs"].values():
            r.pop("log_head")
    assert again == written
    assert len(list((tmp_path / "decisions").glob("*/runs/*/manifest.json"))) == 2
