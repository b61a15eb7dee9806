"""Leak scan: no public file may hold a private value, world seed or oracle field.

Seed 003 "Splits and contamination": private oracle files never enter the
agent's readable paths. The scan reads the private side of a built bench and
checks every public file for

- ``oracle_field``: a JSON key that only private records carry (``confusions``,
  ``witness_hash``, ``seed`` …) anywhere in a public document;
- ``secret``: a world seed, split seed, ``scm_hash`` or ``witness_hash`` as text;
- ``value``: a decimal number in a case's question, query or assumptions that
  equals a private reference value (value, bounds or confusion values) to the
  number's printed precision. Evidence payloads are exempt from this one check:
  they legitimately carry mechanism and joint probabilities, from which some
  answers are meant to be computed.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PRIVATE_KEYS: frozenset[str] = frozenset({
    "seed", "split_seed", "scm_hash", "witness_hash", "witness_gap", "confusions",
    "rung2_population", "resampled", "true_edges", "cpdag", "factual_episode",
    "expected_loss", "eig_bits", "identified_set", "identifiable", "estimand", "structure",
    "bounds", "tol",
})
"""Keys that only private records carry."""

_DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\w.])")


@dataclass(frozen=True)
class Finding:
    """One leak."""

    kind: str
    """``oracle_field``, ``secret`` or ``value``."""
    where: str
    """File and line of the leak."""
    detail: str
    """What leaked."""


@dataclass(frozen=True)
class LeakReport:
    """The result of a scan."""

    files: int
    """Public files scanned."""
    findings: list[Finding] = field(default_factory=list)
    """Every leak found."""

    @property
    def ok(self) -> bool:
        """True when nothing leaked."""
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary (at most 20 findings listed)."""
        return {
            "ok": self.ok, "files": self.files, "n_findings": len(self.findings),
            "findings": [f.__dict__ for f in self.findings[:20]],
        }


@dataclass(frozen=True)
class Secrets:
    """What the private side holds that must not appear publicly."""

    strings: frozenset[str]
    """Seeds and private digests, as text."""
    values: tuple[float, ...]
    """Private reference numbers (values, bound ends, confusion values) not 0 or 1."""


def _jsonl(path: pathlib.Path) -> Iterator[dict[str, Any]]:
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            yield json.loads(text)


def load_secrets(private: pathlib.Path) -> Secrets:
    """Collect seeds, digests and reference numbers from a bench's private directory."""
    strings: set[str] = set()
    values: set[float] = set()
    manifest = json.loads((private / "manifest.json").read_text(encoding="utf-8"))
    strings.update(str(manifest[k]) for k in ("seed", "split_seed"))
    for w in _jsonl(private / "worlds.jsonl"):
        strings.add(str(w["seed"]))
    for o in _jsonl(private / "oracle.jsonl"):
        strings.update(str(o[k]) for k in ("scm_hash", "witness_hash") if o.get(k))
        nums = [o.get("value"), *(o.get("bounds") or []), *(o.get("confusions") or {}).values()]
        values.update(float(v) for v in nums if v is not None and 0.0 < float(v) < 1.0)
    strings = {s for s in strings if len(s) >= 6}
    return Secrets(frozenset(strings), tuple(sorted(values)))


def _keys(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from _keys(v)
    elif isinstance(doc, list):
        for item in doc:
            yield from _keys(item)


def _matches_value(token: str, values: tuple[float, ...]) -> float | None:
    decimals = len(token.split(".")[1])
    x, half = float(token), 0.5 * 10.0 ** (-decimals) + 1e-15
    return next((v for v in values if abs(v - x) <= half), None)


def _scan_doc(doc: Any, text: str, where: str, secrets: Secrets) -> list[Finding]:
    out = [Finding("oracle_field", where, f"private key {k!r}")
           for k in sorted(set(_keys(doc)) & PRIVATE_KEYS)]
    out += [Finding("secret", where, f"private string {s[:24]!r}")
            for s in sorted(secrets.strings) if s in text]
    if isinstance(doc, dict):
        visible = {k: v for k, v in doc.items() if k != "evidence"}
        for token in _DECIMAL.findall(json.dumps(visible)):
            hit = _matches_value(token, secrets.values)
            if hit is not None:
                out.append(Finding("value", where, f"{token} equals private value {hit!r}"))
    return out


def scan_public(public: pathlib.Path, secrets: Secrets) -> LeakReport:
    """Scan every file under ``public`` against ``secrets``."""
    findings: list[Finding] = []
    files = sorted(p for p in public.rglob("*") if p.is_file())
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for n, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    findings += _scan_doc(json.loads(line), line, f"{path}:{n}", secrets)
        elif path.suffix == ".json" and "schemas" not in path.parts:
            findings += _scan_doc(json.loads(text), text, str(path), secrets)
        else:
            findings += [Finding("secret", str(path), f"private string {s[:24]!r}")
                         for s in sorted(secrets.strings) if s in text]
    return LeakReport(len(files), findings)


def scan_bench(bench: pathlib.Path) -> LeakReport:
    """Scan ``bench/public`` against the secrets in ``bench/private``."""
    return scan_public(bench / "public", load_secrets(bench / "private"))
