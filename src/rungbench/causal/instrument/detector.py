"""The causal-opportunity detector: a fixed regex pass, then a small frozen classifier.

Seed 003 "Denominators that do not depend on the router": "a fixed regex pass over worker
and Piper transcripts ("why", "because", "caused by", "root cause", "what if", "would
have", "if we restart") followed by a small classifier, frozen by version. Measure its
quality monthly on 100 hand-labelled turns: report precision and recall; if recall falls
below 0.8, opportunity coverage numbers carry that caveat."

This module shares no code or prompts with any router: it imports nothing but the error
tree and canonical JSON, and its only inputs are the turn text and the frozen files in
``data/``:

- ``detector_classifier_v1.json`` — the frozen version: regex patterns, the logistic
  regression's vocabulary and weights, the sha256 of the training file, and the precision
  and recall committed for the evaluation file (a test fails when they drop);
- ``detector_train.json`` / ``detector_eval.json`` / ``detector_eval_fresh.json`` —
  hand-labelled turns; their ``meta`` says where the turns come from and the labelling
  rule written before labelling. ``detector_eval.json`` is a development set (the extra
  patterns were written with it in view); ``detector_eval_fresh.json`` was written after
  the version was frozen. Measured: precision 0.948 / recall 0.917 on the first, 0.938 /
  0.333 on the blind one, so coverage numbers carry the seed's recall caveat.

A turn is an opportunity only when some pattern matches *and* the classifier's
probability reaches the threshold, so the regex pass bounds recall. The kind is that of
the first matching pattern group.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import pairwise
from typing import Any

import numpy as np

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import canonical_bytes

DETECTOR_VERSION = "regex1+logreg1"
"""The version every ``causal_opportunity.detector_version`` row carries."""

RECALL_CAVEAT_BELOW = 0.8
"""Seed: a recall below this puts a caveat on every opportunity-coverage number."""

SEED_PATTERNS: tuple[tuple[str, str], ...] = (
    ("why", r"\bwhy\b"), ("why", r"\bbecause\b"), ("root_cause", r"\bcaused by\b"),
    ("root_cause", r"\broot[- ]cause"), ("what_if", r"\bwhat if\b"),
    ("what_if", r"\bwould have\b"), ("what_if", r"\bif we restart"),
)
"""The seed's seven triggers, verbatim, with the opportunity kind each implies."""

EXTRA_PATTERNS: tuple[tuple[str, str], ...] = (
    ("root_cause", r"\bcaus(e|es|ed|ing)\b"), ("root_cause", r"\bdue to\b"),
    ("root_cause", r"\b(lead|leads|led) to\b"), ("root_cause", r"\btrigger(s|ed)?\b"),
    ("root_cause", r"\b(stem|stems|behind|driving)\b"), ("why", r"\bhow come\b"),
    ("which_fix", r"\bwhich\b.{0,60}\b(fix|fixes|change|patch|option)"),
    ("which_fix", r"\b(fix|fixes)\b"), ("which_fix", r"\bstops?\b.{0,40}\b(fail|crash|"
                                                     r"overflow|drift)"),
    ("will_X_help", r"\bhelp\b"), ("will_X_help", r"\bgoing to (stop|fix|help)\b"),
    ("what_if", r"\b(would|will)\b.{0,60}\?"), ("what_if", r"\b(suppose|had we|had the|"
                                                           r"if we hadn't|what happens)\b"),
    ("why", r"\bcomes? from\b"),
)
"""Patterns added for the seed's other kinds (which_fix, will_X_help) and common causal
phrasings; a frozen part of version ``regex1``."""

TOKEN = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class Turn:
    """One hand-labelled transcript turn."""

    turn_id: str
    """Stable id within its file."""
    text: str
    """The turn as written."""
    label: int
    """1 when the turn is a causal opportunity under the file's rule, else 0."""
    kind: str
    """Opportunity kind (``none`` for label 0)."""


@dataclass(frozen=True)
class Detection:
    """The detector's verdict on one turn."""

    opportunity: bool
    """True when a pattern matched and the classifier accepted."""
    kind: str | None
    """Kind of the first matching pattern (None when no pattern matched)."""
    regex_hit: bool
    """Whether the regex pass matched."""
    probability: float | None
    """Classifier probability (None when the regex pass did not match)."""


def tokens(text: str) -> list[str]:
    """Lower-case word tokens."""
    return TOKEN.findall(text.lower())


def features(text: str) -> list[str]:
    """Unigram and bigram features of a turn."""
    words = tokens(text)
    return words + [f"{a} {b}" for a, b in pairwise(words)]


def regex_kind(text: str, patterns: Sequence[tuple[str, str]]) -> str | None:
    """Kind of the first pattern matching ``text`` (case-insensitive), None if none does."""
    for kind, pattern in patterns:
        if re.search(pattern, text, flags=re.IGNORECASE):
            return kind
    return None


# ---------------------------------------------------------------- training (offline, pure)


def train_logreg(turns: Sequence[Turn], *, l2: float = 1e-3, steps: int = 3000,
                 rate: float = 0.5) -> dict[str, Any]:
    """Fit an L2 logistic regression on n-gram presence (full-batch gradient descent).

    Deterministic: no randomness, zero initial weights. Weights are rounded to 6 decimals
    so that the frozen file is reproducible byte for byte.
    """
    vocab = sorted({f for t in turns for f in features(t.text)})
    index = {f: i for i, f in enumerate(vocab)}
    x = np.zeros((len(turns), len(vocab)))
    for row, t in enumerate(turns):
        for f in set(features(t.text)):
            x[row, index[f]] = 1.0
    y = np.array([t.label for t in turns], dtype=float)
    w, b = np.zeros(len(vocab)), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        w -= rate * (x.T @ (p - y) / len(y) + l2 * w)
        b -= rate * float(np.mean(p - y))
    weights = {f: round(float(v), 6) for f, v in zip(vocab, w, strict=True)
               if abs(v) >= 5e-7}
    return {"weights": weights, "bias": round(b, 6)}


def build_model(train: Sequence[Turn], train_sha256: str) -> dict[str, Any]:
    """The frozen classifier document for ``train`` (without committed metrics)."""
    fit = train_logreg(train)
    return {"schema": "rungbench.detector/1", "version": DETECTOR_VERSION,
            "patterns": [list(p) for p in SEED_PATTERNS + EXTRA_PATTERNS],
            "threshold": 0.5, "trained_on": {"file": "detector_train.json",
                                             "sha256": train_sha256},
            "bias": fit["bias"], "weights": fit["weights"]}


# ---------------------------------------------------------------- the frozen detector


@dataclass(frozen=True)
class Detector:
    """A frozen detector version."""

    version: str
    """Detector version (``causal_opportunity.detector_version``)."""
    patterns: tuple[tuple[str, str], ...]
    """(kind, regex) in order."""
    weights: Mapping[str, float]
    """Feature weights of the classifier."""
    bias: float
    """Classifier intercept."""
    threshold: float
    """Probability at or above which a regex hit is an opportunity."""

    def probability(self, text: str) -> float:
        """Classifier probability that ``text`` is a causal opportunity."""
        z = self.bias + sum(self.weights.get(f, 0.0) for f in set(features(text)))
        return 1.0 / (1.0 + math.exp(-z))

    def detect(self, text: str) -> Detection:
        """The regex pass, then the classifier on a hit."""
        kind = regex_kind(text, self.patterns)
        if kind is None:
            return Detection(False, None, False, None)
        p = self.probability(text)
        return Detection(p >= self.threshold, kind, True, p)


def _data(name: str) -> bytes:
    return resources.files("rungbench.causal.instrument").joinpath("data", name).read_bytes()


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def load_model_doc(name: str = "detector_classifier_v1.json") -> dict[str, Any]:
    """The frozen classifier document, checked against the training file it names."""
    doc = json.loads(_data(name))
    if doc.get("schema") != "rungbench.detector/1":
        raise IntegrityError(f"{name}: not a detector document")
    trained = doc["trained_on"]
    actual = sha256_hex(_data(trained["file"]))
    if actual != trained["sha256"]:
        raise IntegrityError(f"{name}: training file {trained['file']} has sha256 {actual}, "
                             f"the frozen classifier names {trained['sha256']}")
    return dict(doc)


def load_detector(name: str = "detector_classifier_v1.json") -> Detector:
    """The frozen detector (fails closed on a changed training file)."""
    doc = load_model_doc(name)
    return Detector(str(doc["version"]), tuple((str(k), str(p)) for k, p in doc["patterns"]),
                    {str(k): float(v) for k, v in doc["weights"].items()},
                    float(doc["bias"]), float(doc["threshold"]))


def parse_turns(data: bytes, name: str) -> list[Turn]:
    """Hand-labelled turns from a ``detector_*.json`` document."""
    doc = json.loads(data)
    out = []
    for i, t in enumerate(doc.get("turns", [])):
        if t.get("label") not in (0, 1) or not isinstance(t.get("text"), str):
            raise InputError("turn needs text and label 0 or 1", path=name, line=i,
                             field="label")
        out.append(Turn(str(t["id"]), t["text"], int(t["label"]), str(t["kind"])))
    if not out:
        raise InputError("no turns", path=name, field="turns")
    return out


def load_turns(name: str) -> list[Turn]:
    """The turns of a packaged data file."""
    return parse_turns(_data(name), name)


@dataclass(frozen=True)
class DetectorQuality:
    """Precision and recall of a detector on labelled turns."""

    version: str
    """Detector version measured."""
    data_sha256: str
    """sha256 of the labelled file."""
    tp: int
    """Opportunities detected."""
    fp: int
    """Non-opportunities flagged."""
    fn: int
    """Opportunities missed."""
    tn: int
    """Non-opportunities passed."""
    regex_recall: float
    """Share of labelled opportunities the regex pass alone matches (bounds recall)."""
    kind_agreement: float
    """Share of true positives whose detected kind equals the labelled kind."""

    @property
    def n(self) -> int:
        """Turns measured."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        """tp / (tp + fp)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        """tp / (tp + fn)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def caveat(self) -> str | None:
        """The seed's caveat when recall is below 0.8, else None."""
        if self.recall >= RECALL_CAVEAT_BELOW:
            return None
        return (f"detector {self.version} recall {self.recall:.3f} < {RECALL_CAVEAT_BELOW}: "
                "opportunity coverage numbers undercount opportunities")

    def to_json(self) -> dict[str, Any]:
        """JSON form (report, CLI)."""
        return {"version": self.version, "data_sha256": self.data_sha256, "n": self.n,
                "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "precision": round(self.precision, 6), "recall": round(self.recall, 6),
                "regex_recall": round(self.regex_recall, 6),
                "kind_agreement": round(self.kind_agreement, 6), "caveat": self.caveat}


def measure(detector: Detector, turns: Sequence[Turn], data_sha256: str) -> DetectorQuality:
    """Confusion counts of ``detector`` on ``turns``."""
    tp = fp = fn = tn = regex_pos = kind_ok = 0
    for t in turns:
        d = detector.detect(t.text)
        if t.label:
            regex_pos += d.regex_hit
            tp += d.opportunity
            fn += not d.opportunity
            kind_ok += d.opportunity and d.kind == t.kind
        else:
            fp += d.opportunity
            tn += not d.opportunity
    positives = tp + fn
    return DetectorQuality(detector.version, data_sha256, tp, fp, fn, tn,
                           regex_pos / positives if positives else 0.0,
                           kind_ok / tp if tp else 0.0)


EVAL_FILES = ("detector_eval.json", "detector_eval_fresh.json")
"""Committed evaluation sets: the development set (the extra patterns were written with it
in view) and a blind set written after the version was frozen."""


def measure_committed(name: str = "detector_eval.json") -> DetectorQuality:
    """Quality of the frozen detector on one committed evaluation file."""
    return measure(load_detector(), load_turns(name), sha256_hex(_data(name)))


def measure_all() -> dict[str, DetectorQuality]:
    """Quality on every committed evaluation file."""
    return {name: measure_committed(name) for name in EVAL_FILES}


def coverage_quality() -> DetectorQuality:
    """The measurement that qualifies coverage numbers: the lowest recall (fail closed)."""
    return min(measure_all().values(), key=lambda q: q.recall)


def committed_quality(name: str = "detector_eval.json") -> Mapping[str, Any]:
    """The figures frozen with the classifier for one evaluation file."""
    return dict(load_model_doc()["committed_metrics"][name])


def model_digest(doc: Mapping[str, Any]) -> str:
    """``sha256:`` of a classifier document's canonical JSON without its metrics."""
    body = {k: v for k, v in doc.items() if k != "committed_metrics"}
    return "sha256:" + sha256_hex(canonical_bytes(body))


def opportunity_fields(detector: Detector, text: str, *, episode_id: str, seq: int,
                       t: str) -> dict[str, Any] | None:
    """The ``opportunity`` event for a transcript turn, or None when it is not one.

    The store keeps the span's sha256, never the text; ``routed_to`` is left to the
    weekly report, which derives routing from tool events.
    """
    found = detector.detect(text)
    if not found.opportunity or found.kind is None:
        return None
    return {"episode_id": episode_id, "seq": seq, "t": t, "detector_version": detector.version,
            "kind": found.kind,
            "text_span_hash": "sha256:" + sha256_hex(text.encode("utf-8"))}
