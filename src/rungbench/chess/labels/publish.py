"""All-or-nothing publication of the label stage and its flow report (seed 002).

The stage directory appears, by one atomic rename, only when every planned pass is
a stable label or a registered exclusion, every cache record revalidates, the
engine binary still hashes as it did when identified, the leakage preflight still
passes and the host is idle. Partial caches are diagnostics, never a stage.

Stage contents::

    label-stage/manifest.json          ordered [position key, candidate-list digest] pairs
    label-stage/candidates/<hex>.json  each candidate list (canonical JSON, named by digest)
    label-stage/labels.json            per position: class or exclusion reasons, cell, records
    label-stage/flow_report.json       the engine, exclusions per reason, labels per class, cells
    label-stage/stage.json             inputs, engine identity, contract, gates, digests
    label-stage/SEAL.json              every file above with its sha256 and size

The stage is written through :func:`rungbench.evidence.sealed.publish_dir` (temp sibling,
seal, verify, fsync, one rename) and read back only through
:func:`rungbench.chess.labels.stage_records.verify_stage_dir`. A re-run over a published
stage verifies it, compares every file but ``stage.json`` byte for byte with what the
run just rebuilt from the cache, and reports the rebuilt numbers; a difference refuses
(``stage_exists_different``, naming the first differing file).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungbench.chess.engine import engine_sha256
from rungbench.chess.engine_builds import REGISTERED_BUILD, build_of, runtime_path
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.pool import cell_name
from rungbench.chess.labels.qualify import preflight
from rungbench.chess.labels.stability import CLASSES, EXCLUSION_CODES, LabelClass
from rungbench.chess.labels.stage_records import STAGE_KIND, CandidateList, verify_stage_dir
from rungbench.chess.position import Position
from rungbench.chess.workspace import STAGE_DIRNAME, Workspace
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import SEAL_NAME, leftover_temps, publish_dir
from rungbench.evidence.store import write_atomic

if TYPE_CHECKING:
    from rungbench.chess.engine import EngineIdentity
    from rungbench.chess.labels.config import LabelConfig

MANIFEST_SCHEMA = "rungbench.chess.label-manifest/1"
"""Schema name and version of the final manifest."""
STAGE_SCHEMA = "rungbench.chess.label-stage/1"
"""Schema name and version of the stage record."""
FLOW_SCHEMA = "rungbench.chess.flow-report/2"
"""Schema name and version of the flow report."""


@dataclass(frozen=True)
class Outcome:
    """The verdict on one pool position."""

    position: Position
    """The position."""
    label: LabelClass | None
    """Its class when stable, None when excluded."""
    reasons: tuple[str, ...]
    """Every failed stability rule (empty when stable)."""
    classes: tuple[LabelClass, LabelClass]
    """Class of pass A and of pass B."""
    records: tuple[str, str]
    """Digests of the pass A and pass B cache records."""
    candidates: dict[str, Any] | None
    """Pass A's candidate list when stable."""

    def to_json(self, candidates_digest: str | None) -> dict[str, Any]:
        """Return the outcome as listed in ``labels.json``."""
        pos = self.position
        return {"key": pos.key, "split": pos.split, "phase": pos.phase, "colour": pos.colour,
                "label": self.label, "excluded": bool(self.reasons),
                "reasons": list(self.reasons), "classes": list(self.classes),
                "records": {"A": self.records[0], "B": self.records[1]},
                "candidates": candidates_digest, "game": pos.lineage.game}


def manifest_document(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Return the manifest: stable positions in pool order → candidate-list digest."""
    return {"schema": MANIFEST_SCHEMA,
            "entries": [[o.position.key, digest(o.candidates)] for o in outcomes
                        if o.candidates is not None]}


def engine_summary(identity: EngineIdentity) -> dict[str, Any]:
    """Which engine labelled the stage, and whether it is the build seed 002 registers."""
    build = identity.build
    return {"name": identity.name, "build": build["key"], "package": build["package"],
            "version": build["version"], "network": build["network"],
            "sha256": identity.sha256, "registered_build": REGISTERED_BUILD,
            "is_registered": build_of(build["key"]).is_registered}


def flow_report(outcomes: Sequence[Outcome], identity: EngineIdentity) -> dict[str, Any]:
    """Name the engine; count exclusions per reason, labels per class and outcomes per
    split × phase × colour."""
    primary = Counter(o.reasons[0] for o in outcomes if o.reasons)
    every = Counter(r for o in outcomes for r in o.reasons)
    labels = Counter(o.label for o in outcomes if o.label is not None)
    cells: dict[str, dict[str, int]] = {}
    for o in outcomes:
        pos = o.position
        cell = cells.setdefault(cell_name(pos.split, pos.phase, pos.colour),
                                {"planned": 0, "excluded": 0, **{c: 0 for c in CLASSES}})
        cell["planned"] += 1
        cell["excluded" if o.label is None else o.label] += 1
    return {
        "schema": FLOW_SCHEMA, "engine": engine_summary(identity),
        "planned_positions": len(outcomes), "planned_passes": 2 * len(outcomes),
        "labelled": sum(labels.values()), "excluded": sum(primary.values()),
        "labels": {c: labels[c] for c in CLASSES},
        "exclusions": {r: primary[r] for r in EXCLUSION_CODES},
        "exclusion_reasons_all": {r: every[r] for r in EXCLUSION_CODES},
        "cells": dict(sorted(cells.items())),
    }


def runtime_version(config: LabelConfig) -> str | None:
    """The interpreter the engine ran under (``node v20.…``), None for a native binary.

    Recorded in ``stage.json`` only: the WebAssembly bytes define the search, so the
    interpreter's version stays out of the identity and the cache keys (which would
    otherwise differ between hosts running the same pinned build)."""
    build = config.engine.engine_build
    runtime = runtime_path(build)
    if runtime is None:
        return None
    done = subprocess.run([runtime, "--version"], capture_output=True, text=True, check=False,
                          timeout=30)
    return f"{build.runtime} {done.stdout.strip()}"


def _check_binary(now: str, identity: EngineIdentity, config: LabelConfig) -> None:
    if now != identity.sha256:
        raise Refusal([Reason("engine_binary_changed",
                              f"{config.engine.file} now hashes {now}, identified as "
                              f"{identity.sha256}", subject="engine")],
                      gate="chess label publication")


def _stage_files(outcomes: Sequence[Outcome], identity: EngineIdentity, config: LabelConfig,
                 gate: IdleGate, qualification: dict[str, Any]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    cand_digests: dict[str, str] = {}
    for o in outcomes:
        if o.candidates is not None:
            CandidateList.model_validate(o.candidates)  # the published shape, or fail closed
            data = canonical_bytes(o.candidates)
            cand_digests[o.position.key] = bytes_digest(data)
            files[f"candidates/{bytes_digest(data)[7:]}.json"] = data
    manifest = manifest_document(outcomes)
    files["manifest.json"] = canonical_bytes(manifest)
    files["labels.json"] = canonical_bytes(
        [o.to_json(cand_digests.get(o.position.key)) for o in outcomes])
    files["flow_report.json"] = canonical_bytes(flow_report(outcomes, identity))
    stage = {
        "schema": STAGE_SCHEMA, "manifest": bytes_digest(files["manifest.json"]),
        "flow_report": bytes_digest(files["flow_report.json"]),
        "labels": bytes_digest(files["labels.json"]),
        "pool": qualification["pool"], "qualification": qualification["qualification"],
        "cohorts": qualification["cohorts"], "engine": identity.to_json(),
        "engine_digest": identity.digest, "engine_runtime": runtime_version(config),
        "contract": config.engine.to_json(),
        "idle_gate": gate.to_json(), "role": "label", "passes": ["A", "B"],
    }
    files["stage.json"] = canonical_bytes(stage)
    return files


def publish_stage(workspace: Workspace, outcomes: Sequence[Outcome], *,
                  identity: EngineIdentity, config: LabelConfig,
                  gate: IdleGate) -> dict[str, Any]:
    """Pass the publication gate and make the stage directory appear atomically.

    The gate: the leakage preflight passes again, the engine's files hash as identified
    (re-hashed here, while the stage files are built in memory), and the host is idle.
    Nothing is written before all three hold.
    """
    with ThreadPoolExecutor(max_workers=1) as hasher:
        binary_now = hasher.submit(engine_sha256, config.engine)
        qualification = preflight(workspace, config.cohorts)
        files = _stage_files(outcomes, identity, config, gate, qualification)
        _check_binary(binary_now.result(), identity, config)
    gate.check("before publication", own=config.workers)
    manifest = bytes_digest(files["manifest.json"])
    if workspace.stage.exists():
        verify_stage(workspace)
        _same_as_published(workspace, files)
    else:
        _write_stage(workspace, files)
    report = loads_canonical(files["flow_report.json"])
    return {"stage": str(workspace.stage), "manifest": manifest,
            "stage_record": bytes_digest((workspace.stage / "stage.json").read_bytes()),
            "labelled": report["labelled"], "excluded": report["excluded"],
            "labels": report["labels"], "exclusions": report["exclusions"],
            "flow_report": report}


def _published_files(stage: Path) -> dict[str, bytes]:
    return {p.relative_to(stage).as_posix(): p.read_bytes() for p in sorted(stage.rglob("*"))
            if p.is_file() and p.name != SEAL_NAME}


def _same_as_published(workspace: Workspace, files: dict[str, bytes]) -> None:
    """Refuse unless the verified stage holds exactly the files this run rebuilt.

    ``stage.json`` may differ (it records this invocation's gate and engine path); every
    other file is a pure function of the cache records and must be byte-identical.
    """
    existing = _published_files(workspace.stage)
    names = sorted((set(existing) | set(files)) - {"stage.json"})
    different = [n for n in names if existing.get(n) != files.get(n)]
    if different:
        raise Refusal([Reason(
            "stage_exists_different",
            f"{workspace.stage} holds other {', '.join(different[:3])}"
            f"{' ...' if len(different) > 3 else ''} than this run rebuilt (manifest "
            f"{bytes_digest(existing.get('manifest.json', b''))} published, "
            f"{bytes_digest(files['manifest.json'])} rebuilt)",
            subject=different[0], data={"files": different})], gate="chess label publication")


def _write_stage(workspace: Workspace, files: dict[str, bytes]) -> None:
    """Publish ``files`` as the stage: temp directory, seal, verify, one atomic rename.

    The caller holds the workspace lock, so a temporary stage found here is the debris
    of a publication that was killed before its rename; it is removed.
    """
    for leftover in [*workspace.root.glob(".stage-*"),
                     *leftover_temps(workspace.root, STAGE_DIRNAME)]:
        shutil.rmtree(leftover, ignore_errors=True)
    with publish_dir(workspace.stage, kind=STAGE_KIND) as tmp:
        for name, data in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data, overwrite=True)  # fsyncs the file and its directory


def verify_stage(workspace: Workspace) -> dict[str, Any]:
    """Verify the workspace's published stage (every file, and its record); return the record.

    See :func:`rungbench.chess.labels.stage_records.verify_stage_dir` for the refusals.
    """
    return verify_stage_dir(workspace.stage).model_dump(by_alias=True, mode="json")
