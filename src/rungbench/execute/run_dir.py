"""A run's directory: creation (all or nothing), its manifest and frozen schedule.

``<out>/runs/<run_id>/`` holds ``manifest.json`` (schedule digest, agent description, retry
policy), ``objects/`` and ``events.jsonl``. :func:`create_run` builds the directory in a
hidden temporary sibling and renames it into place; :func:`load_run` reads the manifest back
only when it hashes to the digest the log's first record names. Used by
:mod:`rungbench.execute.runner`, which executes runs, and :mod:`.run_log`, which reads them.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import process_alive
from rungbench.evidence.store import ObjectStore, fsync_dir
from rungbench.execute.events import (
    chained_lines,
    read_events,
    utc_now,
)
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.schedule import Schedule, load_schedule

RUN_VERSION = "rungbench.run/1"
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
TEMP_MARK = ".tmp-"
"""A run being created lives in ``runs/.<run_id>.tmp-<pid>`` until it is complete."""



def create_run(
    out_dir: Path,
    schedule: Schedule,
    agent_description: dict[str, Any],
    *,
    policy: RetryPolicy | None = None,
    run_id: str | None = None,
) -> Path:
    """Create a run directory atomically; return it.

    The schedule, the manifest and the log's first (``run``) record are written in a
    hidden temporary sibling, fsynced, and the sibling is renamed to ``runs/<run_id>``:
    a kill at any point leaves either no run or a complete one.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rid = run_id or f"{stamp}-{schedule.digest()[7:15]}-{os.urandom(2).hex()}"
    runs = runs_folder(out_dir)
    run_dir = runs / rid
    if run_dir.exists():
        raise InputError(f"run directory already exists: {run_dir}", path=str(run_dir))
    clear_leftovers(runs)
    temp = runs / f".{rid}{TEMP_MARK}{os.getpid()}"
    temp.mkdir()
    try:
        _fill_run(temp, rid, schedule, agent_description, policy or RetryPolicy())
        temp.rename(run_dir)
        fsync_dir(runs)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return run_dir


def runs_folder(out_dir: Path) -> Path:
    """Return ``out_dir/runs``, created; a file where a folder must be is an input error."""
    for folder in (out_dir, out_dir / "runs"):
        if folder.exists() and not folder.is_dir():
            raise InputError("a file is there where the runs folder should be", path=str(folder))
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    return runs


def _fill_run(
    folder: Path, rid: str, schedule: Schedule, agent: dict[str, Any], policy: RetryPolicy
) -> None:
    schedule_digest = schedule.save(ObjectStore(folder))
    manifest = {
        "version": RUN_VERSION,
        "run_id": rid,
        "created": utc_now(),
        "schedule": schedule_digest,
        "task": schedule.task,
        "cells": len(schedule),
        "agent": agent,
        # seed 000 claim gate 5: the tool schema must be identical across every arm
        "tool_schemas": sorted({digest(list(c.request.tools)) for c in schedule}),
        "policy": policy.to_json(),
    }
    data = canonical_bytes(manifest) + b"\n"
    first = {"kind": "run", "run_id": rid, "manifest": bytes_digest(data), "t": manifest["created"]}
    for name, content in ((MANIFEST, data), (EVENTS, chained_lines([first])[0])):
        with open(folder / name, "xb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
    for path in folder.rglob("*"):
        if path.is_dir():
            fsync_dir(path)
    fsync_dir(folder)


def clear_leftovers(runs: Path) -> list[Path]:
    """Remove temporary run folders whose creating process is gone; return them."""
    removed = []
    for path in sorted(runs.glob(f".*{TEMP_MARK}*")):
        pid = path.name.rpartition(TEMP_MARK)[2]
        if path.is_dir() and pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def load_run(run_dir: Path) -> tuple[dict[str, Any], Schedule]:
    """Return a run's manifest and its verified frozen schedule.

    The manifest must hash to the digest the log's first record names, so an edited
    manifest (or a log taken from another run) is an :class:`IntegrityError`.
    """
    manifest = run_manifest(run_dir)
    return manifest, load_schedule(ObjectStore(run_dir), str(manifest["schedule"]))


def run_manifest(run_dir: Path) -> dict[str, Any]:
    """A run's manifest, verified against the digest its log's first record names (what
    :func:`load_run` checks before it also re-hashes the frozen schedule's every request)."""
    path = run_dir / MANIFEST
    if not run_dir.is_dir():
        raise InputError("not a run directory", path=str(run_dir))
    if not path.exists():
        if (run_dir / EVENTS).exists():
            raise IntegrityError(f"{path}: missing (the run's {EVENTS} is there)")
        raise InputError(f"not a run directory (no {MANIFEST})", path=str(path))
    data = path.read_bytes()
    manifest = loads_canonical(data.rstrip(b"\n"), path=str(path))
    if not isinstance(manifest, dict) or manifest.get("version") != RUN_VERSION:
        raise InputError(f"not a {RUN_VERSION} manifest", path=str(path), field="version")
    _check_manifest_anchor(run_dir, bytes_digest(data))
    return manifest


def _check_manifest_anchor(run_dir: Path, manifest_digest: str) -> None:
    events_path = run_dir / EVENTS
    if not events_path.exists():
        raise IntegrityError(f"{events_path}: missing (every run is created with its log)")
    events = read_events(events_path)
    if not events or events[0]["kind"] != "run":
        raise IntegrityError(f"{events_path}:1: the log does not open with its run record")
    if events[0].get("manifest") != manifest_digest:
        raise IntegrityError(
            f"{run_dir / MANIFEST}: changed since the run was created (digest "
            f"{manifest_digest}, the log names {events[0].get('manifest')})"
        )
