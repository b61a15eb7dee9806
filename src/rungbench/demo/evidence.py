"""Demo stage: store bundled files, freeze and check them, keep a ledger, write a run manifest."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rungbench.demo import StageResult
from rungbench.errors import InputError, IntegrityError, Refusal
from rungbench.evidence import (
    INVENTORY,
    Exclusion,
    Ledger,
    ObjectStore,
    build_manifest,
    check,
    current_from_files,
    digest,
    freeze_files,
    read_manifest,
    recorded_digests,
    shared_data_dir,
    verify_chain,
    verify_inventory,
    write_manifest,
)


def _demo_files(data: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for run_dir in sorted(p for p in (data / "llm_chess").iterdir() if p.is_dir()):
        picked = (
            sorted(run_dir.glob("_run.json"))
            + sorted(p for p in run_dir.glob("*.json") if p.name != "_run.json")[:2]
        )
        for path in picked:
            files[str(path.relative_to(data))] = path
    if not files:
        raise InputError("no llm_chess/*/*.json files to demonstrate on", path=str(data))
    return files


def _stale_refusal(store: ObjectStore, source: Path, scratch: Path) -> list[str]:
    """Freeze a copy of ``source``, then change the copy: the check must refuse ``stale``."""
    scratch.mkdir(parents=True, exist_ok=True)
    live = scratch / "live_cohort.json"
    if live.exists():
        live.chmod(0o644)
        live.unlink()
    shutil.copyfile(source, live)
    frozen = freeze_files(store, "stale-demo", INVENTORY, {"cohort": live})
    with live.open("ab") as fh:
        fh.write(b"\n")
    try:
        check(store, frozen.digest, current=current_from_files({"cohort": live}))
    except Refusal as refusal:
        return list(refusal.codes)
    raise InputError("a changed source passed its check", path=str(live))


def _match_recorded(digests: dict[str, str], recorded: dict[str, str], data: Path) -> int:
    """Return how many stored digests equal SOURCES.md's; raise on any disagreement."""
    for name, found in digests.items():
        if recorded.get(name) != found:
            raise IntegrityError(
                f"{data / name}: holds {found}, SOURCES.md records {recorded.get(name)}"
            )
    return len(digests)


def run(workdir: Path) -> StageResult:
    """Store bundled files, freeze and check them, keep a ledger and write a run manifest."""
    started = datetime.now(UTC)
    base = workdir / "evidence"
    base.mkdir(parents=True, exist_ok=True)
    store = ObjectStore(base / "store")
    data = shared_data_dir()
    files = _demo_files(data)
    with Ledger(base / "ledger.sqlite") as ledger:
        digests = {name: store.put_file(path) for name, path in files.items()}
        matched = _match_recorded(digests, recorded_digests(data), data)
        for name, found in digests.items():
            ledger.append("object.put", {"name": name, "digest": found})
        frozen = freeze_files(store, "llm-chess-sample", INVENTORY, files)
        ledger.append("freeze", {"frozen": frozen.digest, "output": frozen.record.output})
        check(store, frozen.digest, current=current_from_files(files))
        ledger.append("check", {"frozen": frozen.digest, "passed": True})
        stale_codes = _stale_refusal(store, next(iter(files.values())), base / "scratch")
        ledger.append("check", {"name": "stale-demo", "passed": False, "codes": stale_codes})
        inventory = verify_inventory(store)
        chain = ledger.verify()
        head = ledger.head()
    plan = {"stage": "evidence-demo", "builder": INVENTORY.id, "inputs": sorted(files)}
    manifest = build_manifest(
        design_digest=digest(plan),
        inputs=digests,
        started_at=started,
        ended_at=datetime.now(UTC),
        exclusions=[
            Exclusion(
                subject="stale-demo",
                reason=stale_codes[0],
                detail="deliberately changed source, refused by check",
            )
        ],
        ledger_head=head,
    )
    run_dir = base / "runs" / manifest.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest_digest = write_manifest(run_dir / "manifest.json", manifest, overwrite=True)
    reread = read_manifest(run_dir / "manifest.json")
    summary: dict[str, Any] = {
        "files": len(files),
        "digests_matching_sources_md": matched,
        "objects": sum(1 for _ in store.iter_digests()),
        "bad_objects": len(inventory.bad),
        "missing_objects": len(inventory.missing),
        "frozen": frozen.digest,
        "inventory": frozen.record.output,
        "stale_check_refused_with": stale_codes,
        "ledger_events": chain.count,
        "ledger_ok": chain.ok and verify_chain(base / "ledger.sqlite", anchor=head).ok,
        "ledger_head": head,
        "manifest": str(run_dir / "manifest.json"),
        "manifest_digest": manifest_digest,
        "manifest_reread_matches": reread.digest == manifest_digest,
        "git_commit": manifest.git_commit,
        "input_digests": digests,
    }
    failure = None if inventory.ok else (
        f"store {store.root}: {len(inventory.bad)} bad, {len(inventory.missing)} missing objects")
    return StageResult(summary, failure=failure)
