"""The census demo stage (rungbench.demo.census) on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.census import run
from rungbench.evidence.paths import shared_data_dir

AUG = shared_data_dir() / "llm_chess" / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = shared_data_dir() / "llm_chess" / "gpt-35-turbo-0301_2025-01-22"


def test_stage_censuses_every_run_the_corpus_and_a_harness_corpus(tmp_path: Path) -> None:
    """The stage reports the two clean public runs (41 and 165 eligible replies, no replay
    disagreement), the frozen corpus with its excluded games by reason, and a scripted
    harness corpus, JSON-ready."""
    summary = run(tmp_path).summary
    assert summary[AUG.name]["eligible_attempts"] == 41
    assert summary[JAN.name]["eligible_attempts"] == 165
    assert summary[AUG.name]["replay_disagreements"] == 0
    assert summary[JAN.name]["replay_disagreements"] == 0
    assert summary["corpus"]["eligible_attempts"] == 3237
    assert summary["corpus"]["excluded_games"] == {"engine_crash": 32, "opponent_failure": 1}
    assert summary["harness"]["table"]["legal_list_query"][0] > 0
    json.dumps(summary, allow_nan=False)
