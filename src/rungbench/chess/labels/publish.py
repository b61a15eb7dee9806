"""All-or-nothing publication of the label stage and its flow report (seed 002).

The stage directory appears, by one atomic rename, only when every planned pass is
a stable label or a registered exclusion, every cache record revalidates, the
engine binary still hashes as it did when identified, the leakage preflight still
passes and the host is idle. Partial caches are diagnostics, never a stage.

Stage contents::

    label-stage/manifest.json          ordered [position key, candidate-list digest] pairs
    label-stage/candidates/<hex>.json  each candidate list (canonical JSON, named by digest)
    label-stage/labels.json            per position: class or exclusion reasons, cell, records
    label-stage/flow_report.json       exclusions per reason, labels per class, cells
    label-stage/stage.json             inputs, engine identity, contract, gates, digests
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungbench.chess.engine import binary_digest
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.pool import cell_name
from rungbench.chess.labels.qualify import preflight
from rungbench.chess.labels.stability import CLASSES, EXCLUSION_CODES, LabelClass
from rungbench.chess.labels.stage_records import CandidateList
from rungbench.chess.position import Position
from rungbench.chess.workspace import Workspace, read_json
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest
from rungbench.evidence.store import fsync_dir, write_atomic

if TYPE_CHECKING:
    from rungbench.chess.engine import EngineIdentity
    from rungbench.chess.labels.config import LabelConfig

MANIFEST_SCHEMA = "rungbench.chess.label-manifest/1"
"""Schema name and version of the final manifest."""
STAGE_SCHEMA = "rungbench.chess.label-stage/1"
"""Schema name and version of the stage record."""
FLOW_SCHEMA = "rungbench.chess.flow-report/1"
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


def flow_report(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Count exclusions per reason, labels per class and outcomes per split × phase × colour."""
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
        "schema": FLOW_SCHEMA, "planned_positions": len(outcomes),
        "planned_passes": 2 * len(outcomes),
        "labelled": sum(labels.values()), "excluded": sum(primary.values()),
        "labels": {c: labels[c] for c in CLASSES},
        "exclusions": {r: primary[r] for r in EXCLUSION_CODES},
        "exclusion_reasons_all": {r: every[r] for r in EXCLUSION_CODES},
        "cells": dict(sorted(cells.items())),
    }


def _check_binary(now: str, identity: EngineIdentity, config: LabelConfig) -> None:
    if now != identity.sha256:
        raise Refusal([Reason("engine_binary_changed",
                              f"{config.engine.path} now hashes {now}, identified as "
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
    files["flow_report.json"] = canonical_bytes(flow_report(outcomes))
    stage = {
        "schema": STAGE_SCHEMA, "manifest": bytes_digest(files["manifest.json"]),
        "flow_report": bytes_digest(files["flow_report.json"]),
        "labels": bytes_digest(files["labels.json"]),
        "pool": qualification["pool"], "qualification": qualification["qualification"],
        "cohorts": qualification["cohorts"], "engine": identity.to_json(),
        "engine_digest": identity.digest, "contract": config.engine.to_json(),
        "idle_gate": gate.to_json(), "role": "label", "passes": ["A", "B"],
    }
    files["stage.json"] = canonical_bytes(stage)
    return files


def publish_stage(workspace: Workspace, outcomes: Sequence[Outcome], *,
                  identity: EngineIdentity, config: LabelConfig,
                  gate: IdleGate) -> dict[str, Any]:
    """Pass the publication gate and make the stage directory appear atomically.

    The gate: the leakage preflight passes again, the engine binary hashes as identified
    (re-hashed here, while the stage files are built in memory), and the host is idle.
    Nothing is written before all three hold.
    """
    with ThreadPoolExecutor(max_workers=1) as hasher:
        binary_now = hasher.submit(binary_digest, config.engine.path)
        qualification = preflight(workspace, config.cohorts)
        files = _stage_files(outcomes, identity, config, gate, qualification)
        _check_binary(binary_now.result(), identity, config)
    gate.check("before publication", own=config.workers)
    manifest = bytes_digest(files["manifest.json"])
    if workspace.stage.exists():
        existing = read_json(workspace.stage / "stage.json")
        if existing.get("manifest") != manifest:
            raise Refusal([Reason("stage_exists_different",
                                  f"{workspace.stage} holds manifest {existing.get('manifest')}, "
                                  f"this run produced {manifest}", subject="stage")],
                          gate="chess label publication")
    else:
        _write_stage(workspace, files)
    report = read_json(workspace.stage / "flow_report.json")
    return {"stage": str(workspace.stage), "manifest": manifest,
            "stage_record": bytes_digest(files["stage.json"]),
            "labelled": report["labelled"], "excluded": report["excluded"],
            "labels": report["labels"], "exclusions": report["exclusions"],
            "flow_report": report}


def _write_stage(workspace: Workspace, files: dict[str, bytes]) -> None:
    """Write every file into a temp directory, make it durable, then rename it into place.

    The caller holds the workspace lock, so a ``.stage-*`` directory found here is the
    debris of a publication that was killed before its rename; it is removed. The
    rename is the only way the stage appears; the workspace directory is synced after
    it so the published stage survives a crash.
    """
    for leftover in workspace.root.glob(_TEMP_PREFIX + "*"):
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = tempfile.mkdtemp(dir=workspace.root, prefix=_TEMP_PREFIX)
    try:
        for name, data in files.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data, overwrite=True)  # fsyncs the file and its directory
        os.rename(tmp, workspace.stage)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(workspace.root)


_TEMP_PREFIX = ".stage-"
"""Name prefix of an unpublished stage directory."""


def verify_stage(workspace: Workspace) -> dict[str, Any]:
    """Re-hash a published stage's files against its stage record; return the record."""
    record = read_json(workspace.stage / "stage.json")
    for name in ("manifest", "flow_report", "labels"):
        data = (workspace.stage / f"{name}.json").read_bytes()
        if bytes_digest(data) != record[name]:
            raise Refusal([Reason("stage_file_changed", f"{name}.json no longer hashes as "
                                  "recorded", subject=name)], gate="chess label stage")
    return dict(record)
