"""The one verified reader of a built bench and of a scored run (docs/CONTRACTS.md §10).

A bench (``build.build_split``) and a scored run (``evaluate``) are sealed directories
(:mod:`rungbench.evidence.sealed`): built in a temporary sibling, sealed with every
file's sha256 in ``SEAL.json``, renamed into place in one step. Every command that
reads one (``causal eval``, ``score``, ``audit``, ``report``, and ``rungbench run``'s
causal schedule) opens it here:

- :func:`open_bench` / :func:`open_run` verify the seal (a missing seal means an
  unfinished or foreign directory; a missing, changed or unlisted file is named) and,
  for a bench, that the digests both bench manifests record match the sealed files;
- :meth:`SealedDir.read` returns a file's bytes only after checking them against the
  seal again, so what is parsed is exactly what was verified.

Every failure is an :class:`~rungbench.errors.IntegrityError` (exit 1) naming the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rungbench.causal.bench.records import (
    EPISODE_RECORDS_VERSION,
    EpisodeCase,
    EpisodeOracle,
    PrivateOracle,
    PublicCase,
    episode_json_schemas,
)
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, is_digest
from rungbench.evidence.sealed import SEAL_NAME, read_seal, verify_sealed

BENCH_KIND = "rungbench.causal.bench"
"""Seal kind of a built bench directory."""
RUN_KIND = "rungbench.causal.scored_run"
"""Seal kind of a scored run directory."""

CASES = "public/cases.jsonl"
"""Public case records of a bench."""
PUBLIC_MANIFEST = "public/manifest.json"
"""Public manifest of a bench (split, counts, public file digests; no seed)."""
ORACLE = "private/oracle.jsonl"
"""Private oracle records of a bench."""
WORLDS = "private/worlds.jsonl"
"""Private world records of a bench (seeds, mechanisms, causal order)."""
PRIVATE_MANIFEST = "private/manifest.json"
"""Private manifest of a bench (seeds, private file digests)."""
EPISODE_CASES = "public/cases.v2.jsonl"
"""Public records/2 cases of the episode families (benches built with ``--families``)."""
EPISODE_ORACLE = "private/oracle.v2.jsonl"
"""Private records/2 oracle records."""
EPISODE_WORLDS = "private/worlds.v2.jsonl"
"""Private records/2 world records."""

VERDICTS = "private/verdicts.jsonl"
"""Per-case verdict rows of a scored run (private: 0600 under a 0700 folder)."""
SCORE = "private/score.json"
"""Full scoring summary of a scored run, invalid lines included (private)."""
SUMMARY = "summary.json"
"""Aggregate summary of a scored run (what an agent-side process may read)."""
RESPONSES = "responses.jsonl"
"""The agent_response lines a scored run scored."""
RUN_MANIFEST = "run_manifest.json"
"""The run_manifest record of a scored run."""

NONSENSE = "nonsense"
"""The nonsense skin's name (``skins``): its cases pair with nonsense-skin parents."""

_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(frozen=True)
class SealedDir:
    """A verified sealed directory: its root and the digest of every sealed file."""

    root: Path
    """The directory."""
    digests: Mapping[str, str]
    """Relative POSIX path -> ``sha256:<hex>`` as sealed."""

    def path(self, name: str) -> Path:
        """The absolute path of sealed file ``name``."""
        return self.root / name

    def read(self, name: str) -> bytes:
        """The bytes of sealed file ``name``, checked against the seal as they are read."""
        path = self.path(name)
        expected = self.digests.get(name)
        if expected is None:
            raise IntegrityError(f"{path}: missing: not listed in {self.root / SEAL_NAME}")
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise IntegrityError(f"{path}: listed in {SEAL_NAME} but missing") from exc
        if bytes_digest(data) != expected:
            raise IntegrityError(f"{path}: changed since it was sealed (digest differs)")
        return data

    def text(self, name: str) -> str:
        """Sealed file ``name`` as UTF-8 text."""
        data = self.read(name)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputError(f"not UTF-8 text: {exc.reason}", path=str(self.path(name)),
                             line=line) from exc

    def json(self, name: str) -> dict[str, Any]:
        """Sealed file ``name`` as one JSON object."""
        try:
            doc = json.loads(self.text(name))
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=str(self.path(name)),
                             line=exc.lineno) from exc
        if not isinstance(doc, dict):
            raise InputError("not a JSON object", path=str(self.path(name)))
        return doc

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        """Sealed JSONL file ``name`` as a list of objects (blank lines skipped)."""
        out = []
        for n, line in enumerate(self.text(name).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON: {exc.msg}", path=str(self.path(name)),
                                 line=n) from exc
            if not isinstance(doc, dict):
                raise InputError("not a JSON object", path=str(self.path(name)), line=n)
            out.append(doc)
        return out

    def records(self, name: str, model: type[_Model]) -> list[_Model]:
        """Sealed JSONL file ``name`` validated as ``model`` records, naming a bad line."""
        out = []
        for n, line in enumerate(self.text(name).splitlines(), start=1):
            if line.strip():
                try:
                    out.append(model.model_validate_json(line))
                except ValidationError as exc:
                    first = str(exc).splitlines()[0]
                    # A record's published name (its schema title) where it has one.
                    record = model.model_config.get("title") or model.__name__
                    raise InputError(f"not a {record}: {first}",
                                     path=str(self.path(name)), line=n) from exc
        return out


def hide_seal(root: Path) -> None:
    """Make the seal of ``root`` owner-only (0600): it lists the digests of private files.

    A digest of a small private file (a tiny bench's verdicts) could be confirmed by
    guessing its contents, so only the owner (the harness) reads the seal.
    """
    os.chmod(root / SEAL_NAME, 0o600)


def open_sealed(root: Path, kind: str) -> SealedDir:
    """Verify sealed directory ``root`` of ``kind``; return its file digests.

    The seal's entries are checked first (a damaged seal is named as such); a file that
    does not match its entry is named together with the seal it was checked against,
    since a changed digest in the seal and a changed file look the same.
    """
    seal = root / SEAL_NAME
    check_seal_entries(seal, read_seal(root, kind=kind)["files"])
    try:
        document = verify_sealed(root, kind=kind)
    except IntegrityError as exc:
        raise IntegrityError(f"{exc} (checked against {seal})") from exc
    return SealedDir(root, {str(e["path"]): str(e["digest"]) for e in document["files"]})


def check_seal_entries(seal: Path, files: list[Any]) -> None:
    """Every seal entry is {path, digest, size} with a relative path, listed once."""
    seen: set[str] = set()
    for i, entry in enumerate(files):
        ok = isinstance(entry, dict) and set(entry) == {"path", "digest", "size"} \
            and isinstance(entry["path"], str) and isinstance(entry["size"], int) \
            and isinstance(entry["digest"], str) and is_digest(entry["digest"])
        name = entry.get("path") if isinstance(entry, dict) else None
        if not ok or not _relative(str(name)) or name in seen:
            raise IntegrityError(f"{seal}: entry {i} is damaged (not a unique "
                                 "{path, digest, size} record)")
        seen.add(str(name))


def _relative(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts and "" not in parts


def open_bench(root: Path) -> SealedDir:
    """Verify a built bench: its seal, and the file digests both of its manifests record."""
    bench = open_sealed(root, BENCH_KIND)
    public = bench.json(PUBLIC_MANIFEST)
    private = bench.json(PRIVATE_MANIFEST)
    check_manifest_files(bench, PUBLIC_MANIFEST, "public", public.get("files"))
    check_manifest_files(bench, PRIVATE_MANIFEST, "private", private.get("files"))
    if private.get("public_digest") != public.get("digest") \
            or public.get("digest") != bench.digests.get(CASES):
        raise IntegrityError(f"{bench.path(PRIVATE_MANIFEST)}: public_digest does not match "
                             f"{bench.path(CASES)}")
    check_episode_digests(bench, public, private)
    return bench


def check_episode_digests(bench: SealedDir, public: Mapping[str, Any],
                          private: Mapping[str, Any]) -> None:
    """The records/2 files are all present or all absent, and both manifests name them.

    A bench whose public manifest declares ``records_v2`` must seal ``cases.v2.jsonl``
    with the digest both manifests record, and ``oracle.v2.jsonl`` and
    ``worlds.v2.jsonl`` beside it; a bench that does not must hold none of them.
    """
    block = public.get("records_v2")
    present = [n for n in (EPISODE_CASES, EPISODE_ORACLE, EPISODE_WORLDS) if n in bench.digests]
    if block is None:
        if present:
            raise IntegrityError(f"{bench.path(present[0])}: sealed, but "
                                 f"{bench.path(PUBLIC_MANIFEST)} declares no records_v2")
        return
    if not isinstance(block, dict) or block.get("version") != EPISODE_RECORDS_VERSION:
        raise IntegrityError(f"{bench.path(PUBLIC_MANIFEST)}: records_v2 is not a "
                             f"{EPISODE_RECORDS_VERSION} block")
    for name in (EPISODE_CASES, EPISODE_ORACLE, EPISODE_WORLDS):
        if name not in bench.digests:
            raise IntegrityError(f"{bench.path(name)}: declared by records_v2 but missing")
    digest = bench.digests[EPISODE_CASES]
    if block.get("digest") != digest or private.get("public_digest_v2") != digest:
        raise IntegrityError(f"{bench.path(PRIVATE_MANIFEST)}: public_digest_v2 does not "
                             f"match {bench.path(EPISODE_CASES)}")


def check_manifest_files(bench: SealedDir, manifest: str, side: str, files: Any) -> None:
    """Every file a manifest lists exists under ``side`` with the digest it records."""
    where = bench.path(manifest)
    if not isinstance(files, dict) or not files:
        raise IntegrityError(f"{where}: 'files' is missing or empty")
    for name, recorded in files.items():
        sealed = bench.digests.get(f"{side}/{name}")
        if sealed is None:
            raise IntegrityError(f"{bench.root / side / name}: listed in {where} but missing")
        if sealed != recorded:
            raise IntegrityError(f"{bench.root / side / name}: digest differs from the one "
                                 f"{where} records")


def bench_cases(bench: SealedDir) -> list[PublicCase]:
    """The public cases of a verified bench."""
    return bench.records(CASES, PublicCase)


def bench_oracles(bench: SealedDir) -> dict[str, PrivateOracle]:
    """The private oracle records of a verified bench, keyed by case id.

    Their diagnostic-pair records are checked too (:func:`check_variants`).
    """
    oracles = {o.case_id: o for o in bench.records(ORACLE, PrivateOracle)}
    check_variants(oracles, str(bench.path(ORACLE)))
    check_mutations(oracles, str(bench.path(ORACLE)))
    return oracles


MUTATION_KEEPS = ("world_id", "family", "structure", "item_type", "rung", "estimand",
                  "scm_hash", "identifiable", "value", "bounds")
"""What a mutated case shares with its original: world cluster, question and answer."""

NAMED_KEEPS = ("skin", "expected_loss", "true_edges")
"""What a paraphrase shares with its original besides: its names (skin, named answers)."""


def check_mutations(oracles: Mapping[str, PrivateOracle], where: str) -> None:
    """Every mutated case names an original case of the bench (itself no mutation) whose
    world cluster, question and reference answer (:data:`MUTATION_KEEPS`) it shares; a
    paraphrase keeps the names too (:data:`NAMED_KEEPS`), a renaming keeps the skin and a
    skin swap changes it."""
    for cid, o in oracles.items():
        m = o.mutation
        if m is None:
            continue
        parent = oracles.get(m.parent)
        if parent is None or parent.mutation is not None:
            raise IntegrityError(f"{where}: case {cid!r}: mutation parent {m.parent!r} is not "
                                 "an original case of this bench")
        keeps = (*MUTATION_KEEPS, *NAMED_KEEPS) if m.kind == "paraphrase" else MUTATION_KEEPS
        differ = [k for k in keeps if getattr(o, k) != getattr(parent, k)]
        if m.kind != "paraphrase" and (o.skin == parent.skin) != (m.kind == "renaming"):
            differ.append("skin")
        if differ:
            raise IntegrityError(f"{where}: case {cid!r}: {m.kind} differs from its original "
                                 f"{m.parent!r} in {', '.join(differ)}")


def check_variants(oracles: Mapping[str, PrivateOracle], where: str) -> None:
    """Every diagnostic pair is whole: each variant names a parent case of the bench that is
    the pair's one ``item`` (its own parent), of the same world cluster and label, and a
    domain-skin case a domain-skin parent (a nonsense-skin one a nonsense-skin parent)."""
    for cid, o in oracles.items():
        v = o.variant
        if v is None:
            continue
        parent = oracles.get(v.parent)
        pv = parent.variant if parent is not None else None
        if parent is None or pv is None or pv.kind != "item" or pv.parent != parent.case_id:
            raise IntegrityError(f"{where}: case {cid!r}: variant parent {v.parent!r} is not a "
                                 "diagnostic item of this bench")
        if (v.kind == "item") != (cid == v.parent) or pv.label != v.label \
                or parent.world_id != o.world_id \
                or (parent.skin == NONSENSE) != (o.skin == NONSENSE):
            raise IntegrityError(f"{where}: case {cid!r}: variant does not match its parent "
                                 f"{v.parent!r} (kind, label, world cluster or skin)")


def has_episodes(bench: SealedDir) -> bool:
    """True when the verified bench holds episode-family (records/2) files."""
    return EPISODE_CASES in bench.digests


def _episode_records(bench: SealedDir, name: str, model: type[_Model]) -> list[_Model]:
    records = bench.records(name, model)
    for n, r in enumerate(records, start=1):
        if getattr(r, "version", None) != EPISODE_RECORDS_VERSION:
            raise InputError(f"not a {EPISODE_RECORDS_VERSION} record (version "
                             f"{getattr(r, 'version', None)!r})", path=str(bench.path(name)),
                             line=n, field="version")
    return records


def check_episode_schemas(bench: SealedDir) -> None:
    """The records/2 JSON Schemas the bench publishes are the ones this reader validates with."""
    for model, schema in episode_json_schemas().items():
        name = f"public/schemas/{model}.v2.schema.json"
        if bench.json(name) != schema:
            raise IntegrityError(f"{bench.path(name)}: schema differs from "
                                 f"{EPISODE_RECORDS_VERSION} {model} (written by another "
                                 "records version?)")


def bench_episodes(bench: SealedDir) -> tuple[list[EpisodeCase], dict[str, EpisodeOracle]]:
    """The records/2 cases and oracle records of a verified bench (empty without them).

    Checks, beyond the digests :func:`open_bench` verified: every line is a records/2
    record of its model (schema, version), the published schemas are this version's,
    case ids are unique, every case has exactly one oracle record and every oracle
    record a case (completeness), and the counts and families match ``records_v2``.
    """
    if not has_episodes(bench):
        return [], {}
    check_episode_schemas(bench)
    cases = _episode_records(bench, EPISODE_CASES, EpisodeCase)
    oracles = _episode_records(bench, EPISODE_ORACLE, EpisodeOracle)
    where = bench.path(EPISODE_CASES)
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise IntegrityError(f"{where}: case id {dup!r} listed twice")
    by_id = {o.case_id: o for o in oracles}
    if len(by_id) != len(oracles) or set(by_id) != set(ids):
        lost = sorted(set(ids) ^ set(by_id))[:3]
        raise IntegrityError(f"{bench.path(EPISODE_ORACLE)}: oracle records do not match the cases "
                             f"of {where} one to one (e.g. {lost})")
    block = bench.json(PUBLIC_MANIFEST)["records_v2"]
    families = set(block.get("families") or [])
    if block.get("n_cases") != len(cases) or not {c.family for c in cases} <= families:
        raise IntegrityError(f"{where}: {len(cases)} cases of families "
                             f"{sorted({c.family for c in cases})} do not match records_v2 in "
                             f"{bench.path(PUBLIC_MANIFEST)}")
    return cases, {i: by_id[i] for i in ids}


def open_run(root: Path) -> SealedDir:
    """Verify a scored run directory (its seal and every file it lists)."""
    return open_sealed(root, RUN_KIND)


def run_verdicts(run: SealedDir) -> list[dict[str, Any]]:
    """The private per-case verdict rows of a verified scored run."""
    return run.jsonl(VERDICTS)
