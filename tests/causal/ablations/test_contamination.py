"""Contamination needles and scan scopes."""

from __future__ import annotations

from pathlib import Path

from rungbench.causal.ablations.contamination import Needles, needles, scan, scan_text


def test_needles_from_validation_bench(validation_bench: Path, dev_bench: Path) -> None:
    """World ids of the cohort, names no dev case uses, oracle values with 4+ decimals."""
    n = needles(validation_bench, dev_bench)
    assert len(n.world_ids) == 6 and n.values
    assert all(len(f"{v:.6f}".rstrip("0").split(".")[1]) >= 4 for v in n.values)
    assert n.names == needles(validation_bench, dev_bench).names


def test_names_and_values_only_count_in_memory() -> None:
    """A response naming a variable and the oracle value is answering; in memory it is a hit."""
    n = Needles(frozenset({"wabc0123456"}), frozenset({"krosh"}), (0.3742,))
    text = "krosh causes thrap with p=0.37421"
    assert scan_text("r", text, n, memory=False) == []
    kinds = {h.kind for h in scan_text("m", text, n, memory=True)}
    assert kinds == {"variable_name", "oracle_value"}
    assert [h.kind for h in scan_text("r", "see wabc0123456.", n, memory=False)] == ["world_id"]


def test_memory_directory_is_scanned(tmp_path: Path) -> None:
    """A file in the arm's memory directory holding a world id is a hit naming the file."""
    n = Needles(frozenset({"wabc0123456"}), frozenset(), ())
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "m.txt").write_text("remember wabc0123456")
    hits = scan([], tmp_path, n)
    assert [h.where for h in hits] == [str(tmp_path / "notes" / "m.txt")]
