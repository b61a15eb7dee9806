"""Corruption sweep: one byte flipped, truncated or deleted, for every artifact the label
stage writes; the next command that reads it detects it and names the file."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.publish import verify_stage
from rungbench.chess.labels.qualify import preflight, qualify
from rungbench.chess.labels.stage_records import read_stage
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal, RungbenchError
from rungbench.evidence.canonical import loads_canonical

Corrupt = Callable[[Path], None]


def flip(path: Path) -> None:
    """Flip one bit of the byte in the middle of ``path``."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Cut ``path`` to half its length."""
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[: len(data) // 2])


def delete(path: Path) -> None:
    """Remove ``path``."""
    path.unlink()


CORRUPTIONS: dict[str, Corrupt] = {"flip": flip, "truncate": truncate, "delete": delete}


def said(exc: RungbenchError) -> str:
    """Everything an error tells the user: message, and each reason's subject and detail."""
    parts = [str(exc)]
    if isinstance(exc, Refusal):
        parts += [f"{r.subject} {r.detail}" for r in exc.reasons]
    return " ".join(parts)


def small_config() -> object:
    """The contract the shared published workspace was labelled with."""
    from rungbench.chess.engine import EngineConfig
    from rungbench.chess.labels.config import LabelConfig

    return LabelConfig(engine=EngineConfig(nodes=2_000, hash_mb=16))


FROZEN = {"pool": lambda ws: ws.pool, "cohort": lambda ws: ws.cohort("pilot"),
          "qualification": lambda ws: ws.qualification}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("kind", sorted(FROZEN))
def test_frozen_file_corruption_is_named_by_preflight(published: Workspace, kind: str,
                                                      corruption: str) -> None:
    """A corrupted pool, cohort or qualification makes preflight fail naming that file."""
    path: Path = FROZEN[kind](published)
    CORRUPTIONS[corruption](path)
    with pytest.raises(RungbenchError) as caught:
        preflight(published)
    assert str(path) in said(caught.value)


@pytest.mark.parametrize("corruption", ["flip", "truncate"])
@pytest.mark.parametrize("kind", ["pool", "cohort"])
def test_corrupt_input_is_named_by_qualify(published: Workspace, kind: str,
                                           corruption: str) -> None:
    """qualify never builds a qualification from a corrupted pool or cohort: it names it."""
    path: Path = FROZEN[kind](published)
    before = published.qualification.read_bytes()
    CORRUPTIONS[corruption](path)
    with pytest.raises(RungbenchError) as caught:
        qualify(published)
    assert str(path) in said(caught.value)
    assert published.qualification.read_bytes() == before


def _stage_files(ws: Workspace) -> dict[str, Path]:
    candidate = sorted((ws.stage / "candidates").iterdir())[0]
    names = ["manifest.json", "labels.json", "flow_report.json", "stage.json", "SEAL.json"]
    out = {name: ws.stage / name for name in names}
    out["candidates/*"] = candidate
    return out


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("name", ["manifest.json", "labels.json", "flow_report.json",
                                  "stage.json", "SEAL.json", "candidates/*"])
def test_published_stage_corruption_is_named(published: Workspace, name: str,
                                             corruption: str) -> None:
    """Every published stage file, corrupted, makes verify_stage and read_stage refuse
    naming that file (relative to the stage)."""
    path = _stage_files(published)[name]
    relative = path.relative_to(published.stage).as_posix()
    CORRUPTIONS[corruption](path)
    for reader in (lambda: verify_stage(published), lambda: read_stage(published.stage)):
        with pytest.raises(Refusal) as caught:
            reader()
        assert relative in [r.subject for r in caught.value.reasons], said(caught.value)


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_cache_record_corruption_is_rejected_not_used(published: Workspace,
                                                      corruption: str) -> None:
    """A corrupted cache record is rejected on the next run, recomputed (never reused) and
    the republished manifest is the original one."""
    manifest = (published.stage / "manifest.json").read_bytes()
    shutil.rmtree(published.stage)
    entry = sorted(published.index_dir.iterdir())[0]
    record = loads_canonical(entry.read_bytes())["record"]
    CORRUPTIONS[corruption](published.store.path_for(record))
    from rungbench.chess.labels.idle import IdleGate

    result = run_label_stage(published, small_config(), IdleGate(max_load=1e9))  # type: ignore[arg-type]
    assert sum(result["run"]["rejected"].values()) == 1 and result["run"]["searches"] == 1
    assert (published.stage / "manifest.json").read_bytes() == manifest
