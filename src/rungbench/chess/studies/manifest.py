"""The final study manifest: registered quotas over a published label stage (seed 002, seed 001).

From a verified label stage (:func:`rungbench.chess.labels.stage_records.read_stage`)
the stable positions are sampled by the preset's ``[manifest]`` quotas
(:func:`rungbench.design.quotas.quota_sample`): a source game's partition (training,
development, held-out) is a seeded hash of its id, so a game never spans two
partitions; inside every partition × class × colour cell positions are taken in seeded
hash order up to the quota; phase is recorded. Any cell short of its quota refuses
(``quota_short``, one reason per cell naming it and its count) — nothing is relaxed
or borrowed. :func:`quota_table` gives the same table without refusing.

Published directory (sealed, kind ``rungbench.chess.study-manifest``)::

    manifest.json            design, stage digests, rule, quota table, positions
    candidates/<hex>.json    each bound position's pass A candidate list (stage bytes)

The manifest binds pass A's candidate-list digests (``candidate_lists``: the digest of
the ordered key → candidate-list-digest mapping); the digest of ``manifest.json`` binds
everything after it. Nothing in it names a path or a time, so two freezes of one stage
are byte-identical.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.chess.labels.stage_records import CandidateList, read_stage, verify_stage_dir
from rungbench.design.quotas import QuotaCell, Unit, quota_sample
from rungbench.design.registry import RegisteredDesign, load_design, require
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import publish_dir, verify_sealed

MANIFEST_SCHEMA = "rungbench.chess.study-manifest/1"
"""Schema name and version of ``manifest.json``."""
MANIFEST_KIND = "rungbench.chess.study-manifest"
"""Seal kind of a published study manifest."""
GATE = "chess study manifest"
"""Gate name of manifest refusals."""


@dataclass(frozen=True)
class QuotaRule:
    """The registered ``[manifest]`` table of a study preset."""

    positions: int
    """Registered manifest size."""
    seed: int
    """Seed of the partition and selection hashes."""
    partitions: tuple[tuple[str, int], ...]
    """Partition names with their game-hash weights."""
    classes: tuple[str, ...]
    """Stable classes stratified."""
    colours: tuple[str, ...]
    """Sides to move stratified."""
    quota: dict[str, int]
    """Quota of every class × colour cell, per partition."""

    @property
    def strata(self) -> tuple[str, ...]:
        """Every ``class/colour`` stratum, in registered order."""
        return tuple(f"{c}/{o}" for c in self.classes for o in self.colours)

    def to_json(self) -> dict[str, Any]:
        """Return the rule as recorded in the manifest."""
        return {"positions": self.positions, "partition_seed": self.seed,
                "partitions": [[n, w] for n, w in self.partitions],
                "classes": list(self.classes), "colours": list(self.colours),
                "quota": dict(self.quota)}


def quota_rule(reg: RegisteredDesign) -> QuotaRule:
    """Read and check the ``[manifest]`` table of ``reg``."""
    table, src = reg.section("manifest"), reg.source

    def get(key: str, kind: type) -> Any:
        return require(table, key, kind, source=src, prefix="manifest")

    partitions = tuple((str(p[0]), int(p[1])) for p in get("partitions", list))
    quota = {str(k): int(v) for k, v in get("quota", dict).items()}
    rule = QuotaRule(positions=get("positions", int), seed=get("partition_seed", int),
                     partitions=partitions, classes=tuple(get("classes", list)),
                     colours=tuple(get("colours", list)), quota=quota)
    if set(quota) != {n for n, _ in partitions} or any(v < 0 for v in quota.values()):
        raise InputError(f"manifest.quota must give a quota >= 0 for every partition "
                         f"{[n for n, _ in partitions]}", path=src, field="manifest.quota")
    if sum(quota.values()) * len(rule.strata) != rule.positions:
        raise InputError(f"quotas give {sum(quota.values()) * len(rule.strata)} positions, "
                         f"registered {rule.positions}", path=src, field="manifest.positions")
    return rule


@dataclass(frozen=True)
class StageView:
    """The parts of a verified label stage the freeze reads."""

    digests: dict[str, str]
    """Stage record, label manifest, labels, pool and engine digests."""
    labels: list[dict[str, Any]]
    """``labels.json`` rows of the stage."""
    lists: dict[str, CandidateList]
    """Candidate list by position key (stable positions)."""
    list_bytes: dict[str, bytes]
    """Canonical bytes of each candidate list, by its digest."""


def read_stage_view(stage: Path) -> StageView:
    """Read a published label stage through its verified reader."""
    record = verify_stage_dir(stage)
    manifest, lists = read_stage(stage)
    labels_bytes = (stage / "labels.json").read_bytes()
    if bytes_digest(labels_bytes) != record.labels:
        raise IntegrityError(f"{stage / 'labels.json'} does not hash as its stage record says")
    labels = loads_canonical(labels_bytes, path=str(stage / "labels.json"))
    list_bytes = {d: (stage / "candidates" / f"{d[7:]}.json").read_bytes()
                  for _, d in manifest.entries}
    digests = {"record": bytes_digest((stage / "stage.json").read_bytes()),
               "label_manifest": record.manifest, "labels": record.labels, "pool": record.pool,
               "engine": record.engine_digest}
    return StageView(digests, labels, lists, list_bytes)


def _units(view: StageView) -> tuple[list[Unit], dict[str, dict[str, Any]]]:
    rows = {r["key"]: r for r in view.labels if r["label"] is not None and r["candidates"]}
    units = [Unit(key, str(r["game"]), f"{r['label']}/{r['colour']}") for key, r in rows.items()]
    return units, rows


def _sample(view: StageView, rule: QuotaRule) -> tuple[dict[str, list[Unit]], list[QuotaCell],
                                                       dict[str, dict[str, Any]]]:
    units, rows = _units(view)
    chosen, cells = quota_sample(units, rule.partitions, rule.quota, rule.strata, rule.seed)
    return chosen, cells, rows


def quota_table(stage: Path, reg: RegisteredDesign | None = None) -> list[dict[str, Any]]:
    """Return every partition × class × colour cell with its quota, availability and shortfall."""
    rule = quota_rule(reg or load_design("e020_e021"))
    _, cells, _ = _sample(read_stage_view(stage), rule)
    return [_cell_json(c) for c in cells]


def _cell_json(c: QuotaCell) -> dict[str, Any]:
    return {"cell": c.name, "quota": c.quota, "available": c.available, "short": c.short}


def shortfall_reasons(cells: list[QuotaCell]) -> list[Reason]:
    """Return one ``quota_short`` reason per cell below its quota."""
    return [Reason("quota_short", f"cell {c.name} holds {c.available} stable positions, quota "
                   f"{c.quota} (short {c.short})", subject=c.name,
                   data={"have": c.available, "quota": c.quota, "short": c.short})
            for c in cells if c.short]


def manifest_files(stage: Path, reg: RegisteredDesign) -> dict[str, bytes]:
    """Return the files of the frozen manifest, or refuse (``quota_short``) on a shortfall."""
    rule = quota_rule(reg)
    view = read_stage_view(stage)
    chosen, cells, rows = _sample(view, rule)
    short = shortfall_reasons(cells)
    if short:
        raise Refusal(short, gate=GATE)
    positions: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    for partition, units in chosen.items():
        for unit in units:
            row, lst = rows[unit.id], view.lists[unit.id]
            cand = str(row["candidates"])
            positions.append({"key": unit.id, "fen": lst.fen, "partition": partition,
                              "label": row["label"], "colour": row["colour"],
                              "phase": row["phase"], "game": unit.group, "candidates": cand})
            files[f"candidates/{cand[7:]}.json"] = view.list_bytes[cand]
    document = {
        "schema": MANIFEST_SCHEMA,
        "design": {"name": reg.name, "digest": reg.digest},
        "stage": view.digests, "rule": rule.to_json(),
        "quota_table": [_cell_json(c) for c in cells],
        "counts": {p: len(u) for p, u in chosen.items()},
        "candidate_lists": digest([[p["key"], p["candidates"]] for p in positions]),
        "positions": positions,
    }
    files["manifest.json"] = canonical_bytes(document)
    return files


def freeze_manifest(stage: Path, out: Path, reg: RegisteredDesign | None = None, *,
                    force: bool = False) -> dict[str, Any]:
    """Freeze the final manifest from ``stage`` into the sealed directory ``out``.

    An existing manifest is refused (``exists``) unless ``force``.
    """
    reg = reg or load_design("e020_e021")
    files = manifest_files(stage, reg)
    with publish_dir(out, kind=MANIFEST_KIND, force=force) as tmp:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
    document = json.loads(files["manifest.json"])
    return {"manifest": str(out), "digest": bytes_digest(files["manifest.json"]),
            "positions": len(document["positions"]), "counts": document["counts"],
            "candidate_lists": document["candidate_lists"],
            "quota_table": document["quota_table"]}


@dataclass(frozen=True)
class FrozenManifest:
    """A verified study manifest."""

    path: Path
    """The sealed directory."""
    digest: str
    """``sha256:`` of ``manifest.json``."""
    document: dict[str, Any]
    """The parsed ``manifest.json``."""
    lists: dict[str, CandidateList]
    """Candidate list by position key."""

    def positions(self, partitions: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """Return the positions (manifest order), optionally only those of ``partitions``."""
        rows: list[dict[str, Any]] = self.document["positions"]
        return [p for p in rows if partitions is None or p["partition"] in partitions]


def load_manifest(path: Path) -> FrozenManifest:
    """Read a study manifest, verifying its seal, schema and every candidate list it binds."""
    if not (path / "manifest.json").is_file():
        raise InputError("no frozen study manifest (run `rungbench chess study freeze`)",
                         path=str(path))
    verify_sealed(path, kind=MANIFEST_KIND)
    data = (path / "manifest.json").read_bytes()
    document = loads_canonical(data, path=str(path / "manifest.json"))
    if not isinstance(document, dict) or document.get("schema") != MANIFEST_SCHEMA:
        raise InputError(f"not a {MANIFEST_SCHEMA} document", path=str(path / "manifest.json"),
                         field="schema")
    lists: dict[str, CandidateList] = {}
    for row in document["positions"]:
        file = path / "candidates" / f"{row['candidates'][7:]}.json"
        raw = file.read_bytes()
        if bytes_digest(raw) != row["candidates"]:
            raise IntegrityError(f"{file} does not hash as the manifest binds it")
        lists[row["key"]] = CandidateList.model_validate(loads_canonical(raw, path=str(file)))
    bound = digest([[p["key"], p["candidates"]] for p in document["positions"]])
    if bound != document["candidate_lists"]:
        raise IntegrityError(f"{path / 'manifest.json'}: candidate_lists does not match its "
                             "positions")
    return FrozenManifest(path, bytes_digest(data), document, lists)


def stale_reasons(manifest: FrozenManifest, stage: Path) -> list[Reason]:
    """Return ``manifest_stale`` reasons when ``stage`` no longer is the stage frozen from."""
    now = read_stage_view(stage).digests
    frozen = manifest.document["stage"]
    return [Reason("manifest_stale", f"label stage {name} is {now.get(name)}, the manifest was "
                   f"frozen from {frozen[name]}", subject=name,
                   data={"frozen": frozen[name], "now": now.get(name)})
            for name in ("label_manifest", "labels", "pool", "engine")
            if now.get(name) != frozen[name]]
