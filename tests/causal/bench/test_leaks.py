"""Unit tests for rungbench.causal.bench.leaks on a hand-made private/public bench."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from rungbench.causal.bench.leaks import load_secrets, scan_bench


def _bench(tmp_path: pathlib.Path, case: dict[str, Any]) -> pathlib.Path:
    bench = tmp_path / "bench"
    (bench / "private").mkdir(parents=True)
    (bench / "public").mkdir()
    (bench / "private" / "manifest.json").write_text(
        json.dumps({"seed": 20240611, "split_seed": 99887766}))
    (bench / "private" / "worlds.jsonl").write_text(json.dumps({"seed": 31415926}) + "\n")
    oracle = {"case_id": "c1", "scm_hash": "sha256:" + "ab" * 32, "witness_hash": None,
              "value": None, "bounds": [0.2345, 0.6789],
              "confusions": {"rung1": 0.4321, "rung2_population": None, "resampled": 1.0}}
    (bench / "private" / "oracle.jsonl").write_text(json.dumps(oracle) + "\n")
    (bench / "public" / "cases.jsonl").write_text(json.dumps(case) + "\n")
    return bench


def _case(**extra: Any) -> dict[str, Any]:
    return {"case_id": "c1", "question": "What is P(Y=1)?", "query": {"rung": 1},
            "evidence": {"kind": "joint", "payload": {}}, **extra}


def test_secrets_collect_bound_ends_and_confusion_values(tmp_path: pathlib.Path) -> None:
    """Bound ends and confusion values strictly inside (0, 1) are private numbers; 1.0 is not."""
    secrets = load_secrets(_bench(tmp_path, _case()) / "private")
    assert secrets.values == (0.2345, 0.4321, 0.6789)
    assert {"20240611", "99887766", "31415926"} <= secrets.strings


def test_bound_end_in_question_is_a_value_leak(tmp_path: pathlib.Path) -> None:
    """A question printing a private bound end (0.679 ≈ 0.6789 to 3 decimals) is a value leak."""
    report = scan_bench(_bench(tmp_path, _case(question="Is it below 0.679?")))
    assert [f.kind for f in report.findings] == ["value"]


def test_decimal_in_query_is_scanned_but_evidence_is_exempt(tmp_path: pathlib.Path) -> None:
    """A private number inside the query is a leak; the same number in evidence is exempt."""
    leaky = _case(query={"rung": 1, "hint": 0.4321})
    assert [f.kind for f in scan_bench(_bench(tmp_path / "a", leaky)).findings] == ["value"]
    exempt = _case(evidence={"kind": "joint", "payload": {"p": 0.4321}})
    assert scan_bench(_bench(tmp_path / "b", exempt)).ok


def test_private_key_nested_in_a_list_is_an_oracle_field_leak(tmp_path: pathlib.Path) -> None:
    """A private key (``confusions``) inside a list element of a public case is found."""
    case = _case(evidence={"kind": "joint", "payload": {"rows": [{"confusions": {}}]}})
    report = scan_bench(_bench(tmp_path, case))
    assert [(f.kind, f.detail) for f in report.findings] == [
        ("oracle_field", "private key 'confusions'")]
