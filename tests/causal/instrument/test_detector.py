"""The frozen opportunity detector: committed precision/recall, frozen weights, regex pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rungbench.causal.instrument import detector
from rungbench.errors import IntegrityError


@pytest.mark.parametrize(("name", "counts"), [
    ("detector_eval.json", (55, 3, 5, 67)), ("detector_eval_fresh.json", (15, 1, 30, 55))])
def test_precision_and_recall_hold_the_committed_figures(
        name: str, counts: tuple[int, int, int, int]) -> None:
    """On each committed turn set, precision and recall are at least the frozen figures."""
    q = detector.measure_committed(name)
    committed = detector.committed_quality(name)
    print(f"detector {q.version} on {name} ({q.n} turns): precision {q.precision:.3f} "
          f"recall {q.recall:.3f} (regex pass alone {q.regex_recall:.3f}); committed "
          f"{committed['precision']:.3f}/{committed['recall']:.3f}")
    assert q.n >= 100
    assert q.data_sha256 == committed["data_sha256"]
    assert round(q.precision, 6) >= committed["precision"]
    assert round(q.recall, 6) >= committed["recall"]
    assert (q.tp, q.fp, q.fn, q.tn) == counts


def test_coverage_is_qualified_by_the_lowest_recall() -> None:
    """The blind set's recall 0.333 < 0.8 puts the seed's caveat on coverage numbers."""
    q = detector.coverage_quality()
    assert q.recall == pytest.approx(15 / 45) and q.caveat is not None


def test_recall_below_point_eight_carries_the_caveat() -> None:
    """A quality with recall < 0.8 carries the seed's coverage caveat; 0.8 or more does not."""
    low = detector.DetectorQuality("v", "x", tp=7, fp=0, fn=3, tn=10, regex_recall=1.0,
                                   kind_agreement=1.0)
    assert low.caveat is not None and "0.700" in low.caveat
    ok = detector.DetectorQuality("v", "x", tp=8, fp=0, fn=2, tn=10, regex_recall=1.0,
                                  kind_agreement=1.0)
    assert ok.caveat is None


def test_frozen_classifier_is_reproduced_from_the_training_file() -> None:
    """Retraining on the committed training turns gives the frozen weights exactly."""
    doc = detector.load_model_doc()
    train = detector.load_turns("detector_train.json")
    rebuilt = detector.build_model(train, doc["trained_on"]["sha256"])
    assert detector.model_digest(rebuilt) == detector.model_digest(doc)


def test_train_and_eval_turns_are_disjoint_and_documented() -> None:
    """No evaluation turn appears in training; both files state source and labelling rule."""
    train = {t.text for t in detector.load_turns("detector_train.json")}
    evaluation = detector.load_turns("detector_eval.json")
    assert not train & {t.text for t in evaluation}
    fresh = {t.text for t in detector.load_turns("detector_eval_fresh.json")}
    assert not fresh & (train | {t.text for t in evaluation})
    for name in ("detector_train.json", *detector.EVAL_FILES):
        meta = json.loads(detector._data(name))["meta"]
        assert "labelling_rule" in meta and "NOT drawn from real transcripts" in meta["source"]


@pytest.mark.parametrize("text", ["Why did it crash?", "It failed because of swap.",
                                  "The outage was caused by DNS.", "What is the root cause?",
                                  "What if we drop the cache?", "It would have worked.",
                                  "And if we restart the box?"])
def test_each_seed_trigger_passes_the_regex(text: str) -> None:
    """Every one of the seed's seven trigger phrases passes the regex pass."""
    assert detector.regex_kind(text, detector.SEED_PATTERNS) is not None
    assert detector.load_detector().detect(text).regex_hit


def test_no_trigger_no_opportunity() -> None:
    """A turn matching no pattern is never an opportunity, whatever the classifier says."""
    d = detector.load_detector().detect("Disk at 91 percent on backup-1.")
    assert (d.opportunity, d.regex_hit, d.probability) == (False, False, None)


def test_changed_training_file_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A training file whose digest differs from the frozen one is refused."""
    real = detector._data

    def tampered(name: str) -> bytes:
        data = real(name)
        return data + b" " if name == "detector_train.json" else data

    monkeypatch.setattr(detector, "_data", tampered)
    with pytest.raises(IntegrityError, match="sha256"):
        detector.load_detector()


def test_cli_prints_the_committed_quality() -> None:
    """`rungbench causal detector-quality --json` reports the committed counts."""
    exe = str(Path(sys.executable).parent / "rungbench")
    r = subprocess.run([exe, "causal", "detector-quality", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)["detector_eval.json"]
    assert (doc["n"], doc["tp"], doc["fp"], doc["fn"]) == (130, 55, 3, 5)


def test_opportunity_event_is_valid_for_the_store() -> None:
    """A detected turn becomes a valid opportunity event; a plain status line becomes none."""
    from rungbench.causal.instrument.claims import validate_event

    det = detector.load_detector()
    fields = detector.opportunity_fields(det, "Why did the oom killer fire on worker-3?",
                                         episode_id="e1", seq=4, t="2026-10-05T08:00:00Z")
    assert fields is not None and fields["kind"] == "why"
    assert validate_event("opportunity", fields)["detector_version"] == "regex1+logreg1"
    assert detector.opportunity_fields(det, "Disk at 91%.", episode_id="e1", seq=5,
                                       t="2026-10-05T08:00:00Z") is None
