"""The leakage gate: terminal cohorts jointly cleared against the pool (seed 002).

The qualification is rebuilt from exactly three kinds of content-addressed input —
the frozen pool and the frozen terminal cohorts — and checks both exact normalized
positions and colour-mirrored families. Preflight refuses unless the persisted
qualification equals the fresh reconstruction byte for byte, every source digest
still matches, and no pool position or family appears in any cohort. Preflight
never opens an engine: it runs before one may be constructed.

Reason codes (distinct per cause):

``pool_absent``, ``pool_source_stale``, ``cohort_absent``, ``cohort_not_terminal``,
``cohort_stale`` (a cohort source file changed since the cohort froze),
``qualification_absent``, ``pool_changed`` / ``cohort_changed`` (the input differs from
the one the qualification was built from), ``cohort_set_different``,
``qualification_mismatch`` (persisted bytes differ from the fresh rebuild for any other
cause), ``pool_position_in_cohort`` (exact), ``pool_family_in_cohort`` (mirrored only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rungbench.chess.labels.cohort import load_cohort
from rungbench.chess.labels.pool import FrozenPool, changed_sources, load_pool, stale_sources
from rungbench.chess.workspace import Workspace, read_document, sealed, write_document
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes

QUALIFICATION_SCHEMA = "rungbench.chess.qualification/1"
"""Schema name and version of a qualification document."""

DEFAULT_COHORTS = ("pilot", "replication")
"""The two full-game cohorts the registered design clears the pool against."""

GATE = "chess label preflight"
"""Name of the leakage gate in refusals."""


@dataclass(frozen=True)
class CohortInput:
    """One loaded cohort."""

    name: str
    """Cohort name (file stem in the workspace)."""
    digest: str
    """``sha256:`` of its frozen file."""
    document: dict[str, Any]
    """The parsed cohort document."""


def build_qualification(pool: FrozenPool, cohorts: Sequence[CohortInput]) -> dict[str, Any]:
    """Return the qualification of ``pool`` against ``cohorts`` (a pure function of them)."""
    exact: list[dict[str, Any]] = []
    mirrored: list[dict[str, Any]] = []
    key_sets = [(c.name, set(c.document["positions"]), set(c.document["families"]))
                for c in cohorts]
    for pos in pool.positions:
        hit_exact = [name for name, keys, _ in key_sets if pos.key in keys]
        hit_family = [name for name, _, fams in key_sets if pos.family in fams]
        if hit_exact:
            exact.append({"key": pos.key, "cohorts": hit_exact})
        elif hit_family:
            mirrored.append({"key": pos.key, "family": pos.family, "cohorts": hit_family})
    return {
        "schema": QUALIFICATION_SCHEMA,
        "pool": pool.digest,
        "pool_sources": [s["digest"] for s in pool.document["sources"]],
        "cohorts": [{"name": c.name, "digest": c.digest, "terminal": c.document["terminal"],
                     "sources": [s["digest"] for s in c.document["sources"]]} for c in cohorts],
        "overlap": {"exact": exact, "mirrored": mirrored},
        "cleared": not exact and not mirrored,
    }


def _cohort_reasons(workspace: Workspace, name: str) -> tuple[CohortInput | None, list[Reason]]:
    path = workspace.cohort(name)
    if not path.is_file():
        return None, [Reason("cohort_absent", f"cohort {name!r} has no frozen file {path}",
                             subject=name)]
    digest, document = load_cohort(path)
    reasons: list[Reason] = []
    if document.get("terminal") is not True:
        reasons.append(Reason("cohort_not_terminal",
                              f"cohort {name!r} is not marked terminal; it may still grow",
                              subject=name))
    reasons.extend(Reason("cohort_stale", f"cohort {name!r} source {path} now hashes {now}",
                          subject=name, data={"frozen": src["digest"], "now": now})
                   for src, path, now in changed_sources(document["sources"]))
    return CohortInput(name, digest, document), reasons


def load_inputs(workspace: Workspace, names: Sequence[str]
                ) -> tuple[FrozenPool | None, list[CohortInput], list[Reason]]:
    """Load the pool and named cohorts, returning every reason an input is unusable."""
    reasons: list[Reason] = []
    pool: FrozenPool | None = None
    if workspace.pool.is_file():
        pool = load_pool(workspace.pool)
        reasons.extend(stale_sources(pool.document))
    else:
        reasons.append(Reason("pool_absent", f"no frozen pool at {workspace.pool}",
                              subject="pool"))
    cohorts: list[CohortInput] = []
    for name in names:
        cohort, found = _cohort_reasons(workspace, name)
        reasons.extend(found)
        if cohort is not None:
            cohorts.append(cohort)
    return pool, cohorts, reasons


def qualify(workspace: Workspace, names: Sequence[str] = DEFAULT_COHORTS) -> dict[str, Any]:
    """Build and persist the qualification; refuse on unusable inputs or any overlap."""
    pool, cohorts, reasons = load_inputs(workspace, names)
    if reasons or pool is None:
        raise Refusal(reasons, gate="chess label qualify")
    document = build_qualification(pool, cohorts)
    data = write_document(workspace.qualification, document)
    summary = _summary(document, bytes_digest(data))
    overlap = _overlap_reasons(document)
    if overlap:
        raise Refusal(overlap, gate="chess label qualify")
    return summary


def _overlap_reasons(document: dict[str, Any]) -> list[Reason]:
    reasons = [Reason("pool_position_in_cohort",
                      f"pool position {hit['key']!r} occurs in cohort(s) {hit['cohorts']}",
                      subject=hit["key"], data={"cohorts": hit["cohorts"]})
               for hit in document["overlap"]["exact"]]
    reasons += [Reason("pool_family_in_cohort",
                       f"the colour mirror of pool position {hit['key']!r} occurs in "
                       f"cohort(s) {hit['cohorts']}",
                       subject=hit["key"], data={"cohorts": hit["cohorts"]})
                for hit in document["overlap"]["mirrored"]]
    return reasons


def _summary(document: dict[str, Any], digest: str) -> dict[str, Any]:
    return {"qualification": digest, "pool": document["pool"],
            "cohorts": {c["name"]: c["digest"] for c in document["cohorts"]},
            "cleared": document["cleared"],
            "exact_overlap": len(document["overlap"]["exact"]),
            "mirrored_overlap": len(document["overlap"]["mirrored"])}


def _against_persisted(persisted: dict[str, Any], pool: FrozenPool,
                       cohorts: Sequence[CohortInput], names: Sequence[str]) -> list[Reason]:
    reasons: list[Reason] = []
    if persisted.get("pool") != pool.digest:
        reasons.append(Reason("pool_changed",
                              f"pool is {pool.digest}, qualified {persisted.get('pool')}",
                              subject="pool", data={"qualified": persisted.get("pool"),
                                                    "now": pool.digest}))
    recorded = {c["name"]: c["digest"] for c in persisted.get("cohorts", [])}
    if sorted(recorded) != sorted(names):
        reasons.append(Reason("cohort_set_different",
                              f"qualified cohorts {sorted(recorded)}, required {sorted(names)}",
                              data={"qualified": sorted(recorded), "required": sorted(names)}))
    for cohort in cohorts:
        if cohort.name in recorded and recorded[cohort.name] != cohort.digest:
            reasons.append(Reason("cohort_changed",
                                  f"cohort {cohort.name!r} is {cohort.digest}, qualified "
                                  f"{recorded[cohort.name]}", subject=cohort.name,
                                  data={"qualified": recorded[cohort.name],
                                        "now": cohort.digest}))
    return reasons


def preflight(workspace: Workspace, names: Sequence[str] = DEFAULT_COHORTS) -> dict[str, Any]:
    """Run the leakage gate without opening any engine; refuse with every reason found."""
    pool, cohorts, reasons = load_inputs(workspace, names)
    if not workspace.qualification.is_file():
        reasons.append(Reason("qualification_absent",
                              f"no qualification at {workspace.qualification}",
                              subject="qualification"))
    if pool is None or len(cohorts) != len(names):
        raise Refusal(reasons, gate=GATE)
    fresh = sealed(build_qualification(pool, cohorts))
    if workspace.qualification.is_file():
        path = workspace.qualification
        persisted_digest, persisted = read_document(path, QUALIFICATION_SCHEMA)
        specific = _against_persisted(persisted, pool, cohorts, names)
        reasons.extend(specific)
        if bytes_digest(canonical_bytes(fresh)) != persisted_digest and not specific:
            reasons.append(Reason("qualification_mismatch",
                                  f"persisted qualification {path} differs from the fresh "
                                  "reconstruction from (pool, cohorts)",
                                  subject="qualification"))
    reasons.extend(_overlap_reasons(fresh))
    if reasons:
        raise Refusal(reasons, gate=GATE)
    return {**_summary(fresh, bytes_digest(canonical_bytes(fresh))),
            "positions": len(pool.positions), "engine_opened": False}
