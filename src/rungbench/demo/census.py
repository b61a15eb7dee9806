"""Demo stage: census every bundled LLM Chess run, the frozen corpus of all of them, and a
small scripted-agent harness corpus.

``detail`` maps each corpus name to its full census document (``corpus``: the frozen
multi-run census, with its exclusion table).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.dispatch import version
from rungbench.chess.transcripts.harness import (
    REFERENCE_SCRIPT,
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)
from rungbench.demo import StageResult
from rungbench.evidence.paths import shared_data_dir


def run(workdir: Path) -> StageResult:
    """Verify and census every bundled run and their frozen corpus, then play and census six
    scripted games."""
    docs: dict[str, dict[str, Any]] = {}
    data = shared_data_dir() / "llm_chess"
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        docs[folder.name] = census_path(folder)
    docs["corpus"] = census_path(data)
    corpus = workdir / "chess_census_harness"
    if not corpus.exists():  # played once; a later run censuses (and so verifies) it again
        cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=40)
        play_corpus(corpus, ScriptedAgent(REFERENCE_SCRIPT, seed=0), RandomOpponent(0), cfg,
                    games=6)
    docs["harness"] = census_path(corpus)
    return StageResult({name: brief(doc) for name, doc in docs.items()}, docs,
                       report={f"census:{name}": doc for name, doc in docs.items()})


def brief(doc: dict[str, Any]) -> dict[str, Any]:
    """The figures of one census that the demo reports."""
    return {
        "eligible_attempts": doc["counts"]["eligible_attempts"],
        "transitions": doc["counts"]["same_position_transitions"],
        "table": {r["prior"]: [r["accepted"], r["transitions"]] for r in doc["transition_table"]},
        "replay_disagreements": sum(r["disagreements"] for r in doc["replay"]),
        "eligible_games": doc["counts"]["eligible_games"],
        "excluded_games": doc["exclusions_by_reason"],
        "digest": doc["digest"],
    }
