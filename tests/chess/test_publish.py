"""Manifest and flow report from constructed outcomes (no engine)."""

from __future__ import annotations

import chess
from rungbench.chess.position import Lineage, describe
from rungbench.chess.publish import Outcome, flow_report, manifest_document
from rungbench.evidence.canonical import digest

LINEAGE = Lineage("t", "sha256:" + "0" * 64, "row 1", "game:1", "puzzle")
BOARDS = [chess.Board(), chess.Board("8/5k2/8/3r4/8/4P3/3R4/4K3 w - - 0 50"),
          chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 30")]


def outcome(i: int, label: str | None, reasons: tuple[str, ...] = ()) -> Outcome:
    """A constructed outcome for board ``i``."""
    pos = describe(BOARDS[i], LINEAGE, split="test")
    cands = None if reasons else {"key": pos.key, "n": i}
    return Outcome(pos, label, reasons, ("quiet", "quiet"), ("a", "b"), cands)  # type: ignore[arg-type]


def test_manifest_lists_only_stable_positions_in_order() -> None:
    """An excluded position has no manifest entry; the others keep pool order."""
    outs = [outcome(0, "quiet"), outcome(1, None, ("class_changed",)), outcome(2, "tactical")]
    entries = manifest_document(outs)["entries"]
    assert entries == [[outs[0].position.key, digest({"key": outs[0].position.key, "n": 0})],
                       [outs[2].position.key, digest({"key": outs[2].position.key, "n": 2})]]


def test_flow_report_counts_primary_and_all_reasons_and_cells() -> None:
    """Exclusions count by first reason; every reason is also tallied; cells add up."""
    outs = [outcome(0, "quiet"), outcome(1, None, ("top_move_changed", "ranks_1_6_changed")),
            outcome(2, "tactical")]
    report = flow_report(outs)
    assert report["labels"] == {"tactical": 1, "ambiguous": 0, "quiet": 1, "unclassified": 0}
    assert report["exclusions"]["top_move_changed"] == 1
    assert report["exclusions"]["ranks_1_6_changed"] == 0
    assert report["exclusion_reasons_all"]["ranks_1_6_changed"] == 1
    assert report["cells"]["test/endgame/white"] == {
        "planned": 1, "excluded": 1, "tactical": 0, "ambiguous": 0, "quiet": 0,
        "unclassified": 0}
    assert (report["labelled"], report["excluded"], report["planned_passes"]) == (2, 1, 6)
