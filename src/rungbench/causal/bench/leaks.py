"""Leak scan: no public file may hold a private value, world seed or oracle field.

Seed 003 "Splits and contamination": private oracle files never enter the
agent's readable paths. The scan reads the private side of a built bench and
checks every public file for

- ``oracle_field``: a JSON key that only private records carry (``confusions``,
  ``witness_hash``, ``seed`` …) anywhere in a public document;
- ``secret``: a world seed, split seed, ``scm_hash`` or ``witness_hash`` as text;
- ``twin_link``: a twin case's public record naming its parent case or parent world;
- ``value``: a decimal number in a case's question, query or assumptions that
  equals a private reference value (value, bounds or confusion values) to the
  number's printed precision. Evidence payloads are exempt from this one check:
  they legitimately carry mechanism and joint probabilities, from which some
  answers are meant to be computed.

A bench with the episode families (records/2, ``episode_build``) adds its private
side to the secrets: the seeds in ``worlds.v2.jsonl``, and from ``oracle.v2.jsonl``
the scm_hash, the posterior values, the confused twins' values (``alt_values``) and
the information and decision values of every menu entry; the keys only records/2
oracles carry (``true_cause``, ``alt_causes`` …) are private keys.

Diagnostic pairs (``variants``) add theirs: the twins' seeds, the confused values of their
variant records, and the ``variant`` key itself. Paraphrase variants (``paraphrases``) add
the ``mutation`` key, and a paraphrase's public record may not name its original case or
that case's world (``twin_link``, as for twins).
"""

from __future__ import annotations

import bisect
import functools
import json
import pathlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

PRIVATE_KEYS: frozenset[str] = frozenset({
    "seed", "split_seed", "scm_hash", "witness_hash", "witness_gap", "confusions",
    "rung2_population", "resampled", "true_edges", "cpdag", "factual_episode",
    "expected_loss", "eig_bits", "identified_set", "identifiable", "estimand", "structure",
    "bounds", "tol",
    # records/2 (episode families); ``hypotheses`` is public (the hypothesis set).
    "true_cause", "descendants", "experiment_loss", "discriminating", "alt_values",
    "alt_causes", "previous_set",
    # diagnostic pairs (``variants``): which case is a twin of which, and of what
    "variant", "confused", "order_agrees",
    # semantic mutations (``paraphrases``): which case a paraphrase rewords
    "mutation",
})
"""Keys that only private records carry."""

_DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\w.])")


@dataclass(frozen=True)
class Finding:
    """One leak."""

    kind: str
    """``oracle_field``, ``secret``, ``twin_link`` or ``value``."""
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
    links: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Twin or paraphrase case id -> its parent case id and parent world id, which its public
    record must not name (nothing public may say which case is a variant of which)."""


def _jsonl(path: pathlib.Path) -> Iterator[dict[str, Any]]:
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            yield json.loads(text)


def load_secrets(private: pathlib.Path) -> Secrets:
    """Collect seeds, digests and reference numbers from a bench's private directory."""
    strings: set[str] = set()
    values: set[float] = set()
    links: dict[str, tuple[str, ...]] = {}
    manifest = json.loads((private / "manifest.json").read_text(encoding="utf-8"))
    strings.update(str(manifest[k]) for k in ("seed", "split_seed"))
    for w in _jsonl(private / "worlds.jsonl"):
        strings.add(str(w["seed"]))
        strings.update(str(t["seed"]) for t in w.get("twins", []))
    for o in _jsonl(private / "oracle.jsonl"):
        strings.update(str(o[k]) for k in ("scm_hash", "witness_hash") if o.get(k))
        nums = [o.get("value"), *(o.get("bounds") or []), *(o.get("confusions") or {}).values()]
        variant = o.get("variant") or {}
        nums += variant.get("confused", [])
        if variant.get("kind") not in (None, "item"):
            links[str(o["case_id"])] = (str(variant["parent"]), str(o["world_id"]))
        if o.get("mutation"):
            links[str(o["case_id"])] = (str(o["mutation"]["parent"]), str(o["world_id"]))
        values.update(float(v) for v in nums if v is not None and 0.0 < float(v) < 1.0)
    _add_episode_secrets(private, strings, values)
    strings = {s for s in strings if len(s) >= 6}
    return Secrets(frozenset(strings), tuple(sorted(values)), links)


def _add_episode_secrets(private: pathlib.Path, strings: set[str], values: set[float]) -> None:
    """Add the records/2 private side (when the bench has one) to ``strings`` and ``values``."""
    worlds, oracles = private / "worlds.v2.jsonl", private / "oracle.v2.jsonl"
    if worlds.exists():
        strings.update(str(w["seed"]) for w in _jsonl(worlds))
    if not oracles.exists():
        return
    for o in _jsonl(oracles):
        strings.update(str(o[k]) for k in ("scm_hash", "seed") if o.get(k))
        nums = [o.get("value"), *(o.get("alt_values") or {}).values()]
        for menu in ("eig_bits", "experiment_loss", "expected_loss"):
            nums += list((o.get(menu) or {}).values())
        values.update(float(v) for v in nums if v is not None and 0.0 < float(v) < 1.0)


def _keys(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from _keys(v)
    elif isinstance(doc, list):
        for item in doc:
            yield from _keys(item)


def _matches_value(token: str, values: tuple[float, ...]) -> float | None:
    """The smallest private value within half a unit of the token's last digit (sorted values)."""
    decimals = len(token.split(".")[1])
    x, half = float(token), 0.5 * 10.0 ** (-decimals) + 1e-15
    i = bisect.bisect_left(values, x - half)
    return values[i] if i < len(values) and abs(values[i] - x) <= half else None


_DIGITS = re.compile(r"\d+")
_HASH = "sha256:"


@functools.lru_cache(maxsize=8)
def _string_index(strings: frozenset[str]) -> tuple[dict[int, frozenset[str]], frozenset[str],
                                                    tuple[str, ...]]:
    """Digit secrets by length, ``sha256:`` secrets, and any other secret (searched plainly)."""
    by_len: dict[int, set[str]] = {}
    hashes, other = set(), []
    for x in strings:
        if x.isdigit():
            by_len.setdefault(len(x), set()).add(x)
        elif x.startswith(_HASH):
            hashes.add(x)
        else:
            other.append(x)
    return ({k: frozenset(v) for k, v in by_len.items()}, frozenset(hashes), tuple(sorted(other)))


def found_strings(text: str, strings: frozenset[str]) -> list[str]:
    """Every secret string occurring in ``text`` as a substring, sorted.

    The same answer as ``[s for s in sorted(strings) if s in text]`` without one pass
    over the text per secret: a digit secret occurs only inside a run of digits, a
    digest only right after a ``sha256:`` prefix.
    """
    by_len, hashes, other = _string_index(strings)
    hits = {x for x in other if x in text}
    if hashes:
        start = text.find(_HASH)
        while start >= 0:
            candidate = text[start:start + 71]
            hits.update(x for x in hashes if candidate.startswith(x))
            start = text.find(_HASH, start + 1)
    if by_len:
        shortest = min(by_len)
        for run in _DIGITS.findall(text):
            if len(run) < shortest:
                continue
            for n, group in by_len.items():
                hits.update(run[i:i + n] for i in range(len(run) - n + 1)
                            if run[i:i + n] in group)
    return sorted(hits)


def _scan_doc(doc: Any, text: str, where: str, secrets: Secrets) -> list[Finding]:
    out = [Finding("oracle_field", where, f"private key {k!r}")
           for k in sorted(set(_keys(doc)) & PRIVATE_KEYS)]
    out += [Finding("secret", where, f"private string {s[:24]!r}")
            for s in found_strings(text, secrets.strings)]
    if isinstance(doc, dict):
        linked = secrets.links.get(str(doc.get("case_id")), ())
        out += [Finding("twin_link", where, f"names {x!r}, the case it is a twin of")
                for x in linked if x in text]
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
                         for s in found_strings(text, secrets.strings)]
    return LeakReport(len(files), findings)


def scan_bench(bench: pathlib.Path) -> LeakReport:
    """Scan ``bench/public`` against the secrets in ``bench/private``."""
    return scan_public(bench / "public", load_secrets(bench / "private"))
