"""The episode families in a sealed bench (``causal build --families``; records/2).

Opt-in: a build without ``--families`` writes exactly the files it always wrote. With
``--families incident,active,revision,provenance,negative`` (any subset) the bench also
holds, beside the records/1 files::

    OUT/public/cases.v2.jsonl             public_case records/2 of the chosen families
    OUT/public/schemas/*.v2.schema.json   JSON Schema of every records/2 model
    OUT/private/oracle.v2.jsonl           private_oracle records/2 (0600)
    OUT/private/worlds.v2.jsonl           world seeds and every episode's world (0600)

and both manifests gain a ``records_v2`` block (families, counts, the digest of
``cases.v2.jsonl``), checked by ``verified.open_bench``. What holds for the built
families holds here (seed 003 "Splits and contamination"): world seeds come from the
split's own private seed stream, world ids are hashes of split and seed, a held-out
structure (``splits.HELD_OUT_EPISODE``: the interaction incident world) appears only in
the test split, every item has a nonsense-skin twin (``cf_link``), each episode's
listing order is the balanced shuffle of ``build.listing_seed``, oracle values stay
private, and the leak scan covers the new public files.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rungbench.causal.bench.audit import public_listing_share
from rungbench.causal.bench.episode_items import EpisodeWorld, render_episode_world
from rungbench.causal.bench.records import (
    EPISODE_FAMILIES,
    EPISODE_RECORDS_VERSION,
    write_episode_schemas,
)
from rungbench.causal.bench.splits import episode_structures_excluded, split_seed
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes

FAMILY_NAMES: dict[str, str] = {
    "incident": "root_cause_debugging",
    "active": "active_experiments",
    "revision": "sequential_revision",
    "provenance": "provenance_source_dependence",
    "negative": "negative_evidence",
}
"""``--families`` name -> task family (seed 003 "Task families and generator coverage", the
"next stage" rows)."""

CASES_FILE = "cases.v2.jsonl"
"""Public records/2 cases, under ``public/``."""
ORACLE_FILE = "oracle.v2.jsonl"
"""Private records/2 oracle records, under ``private/``."""
WORLDS_FILE = "worlds.v2.jsonl"
"""Private records/2 world records, under ``private/``."""


def parse_families(text: str) -> frozenset[str]:
    """The task families named by a comma-separated ``--families`` value; refuse unknown ones."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in FAMILY_NAMES]
    if not names or unknown:
        raise Refusal([Reason("bad_request", f"unknown families {unknown or [text]!r}; "
                              f"known: {', '.join(FAMILY_NAMES)}", subject="families",
                              data={"known": list(FAMILY_NAMES)})], gate="causal build")
    return frozenset(FAMILY_NAMES[n] for n in names)


def episode_plan(split: str, n_worlds: int, seed: int) -> list[int]:
    """World seeds of the episode-family worlds: the split's own stream, apart from records/1's."""
    # The tag is hashed into every world seed: a new tag would draw other worlds.
    h = hashlib.sha256(f"rungbench.causal.next/2|{split_seed(split, seed)}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(h[:8], "big"))
    return [int(x) for x in rng.integers(1 << 62, 1 << 63, size=n_worlds)]


@dataclass(frozen=True)
class EpisodeBuild:
    """The rendered episode-family worlds of one build."""

    split: str
    """Split name."""
    families: frozenset[str]
    """Task families selected."""
    worlds: tuple[EpisodeWorld, ...]
    """Every rendered world, in plan order."""

    def write(self, root: pathlib.Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Write the records/2 files under ``root``; extend both manifests; return the public."""
        return write_episodes(root, self, manifest)


def build_episodes(split: str, n_worlds: int, seed: int, families: frozenset[str]) -> EpisodeBuild:
    """Render ``n_worlds`` episode-family worlds of ``split``, keeping the selected families."""
    out: list[EpisodeWorld] = []
    excess = 0
    exclude = episode_structures_excluded(split)
    for wseed in episode_plan(split, n_worlds, seed):
        out.append(render_episode_world(split, wseed, excess, families, exclude))
        excess += out[-1].forward_excess
    return EpisodeBuild(split, families, tuple(out))


def _jsonl(records: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(canonical_bytes(r) + b"\n" for r in records)


def _write(path: pathlib.Path, data: bytes, mode: int = 0o644) -> str:
    path.write_bytes(data)
    os.chmod(path, mode)
    return bytes_digest(data)


def _pretty(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _world_record(w: EpisodeWorld) -> dict[str, Any]:
    return {"world_id": w.world_id, "seed": w.seed,
            "episodes": [{"episode": k, "world": world.to_json(seed=0)} for k, world in w.worlds]}


def write_episodes(root: pathlib.Path, nb: EpisodeBuild, manifest: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """Write the records/2 files of ``nb`` and add their block to both bench manifests."""
    public, private = root / "public", root / "private"
    cases = [c.model_dump(mode="json") for w in nb.worlds for c in w.cases]
    oracles = [o.model_dump(mode="json") for w in nb.worlds for o in w.oracles]
    files = dict(manifest["files"])
    files[CASES_FILE] = _write(public / CASES_FILE, _jsonl(cases))
    for p in write_episode_schemas(public / "schemas"):
        files[f"schemas/{p.name}"] = bytes_digest(p.read_bytes())
    counts = Counter((o["family"], o["item_type"]) for o in oracles)
    block = {
        "version": EPISODE_RECORDS_VERSION, "families": sorted(nb.families),
        "n_worlds": len(nb.worlds), "n_cases": len(cases), "digest": files[CASES_FILE],
        "world_ids": [w.world_id for w in nb.worlds],
        "counts": {f"{f}/{t}": n for (f, t), n in sorted(counts.items())},
        "listing_order": public_listing_share(cases),
    }
    out = {**manifest, "files": files, "records_v2": block}
    _write(public / "manifest.json", _pretty(out))
    pman = json.loads((private / "manifest.json").read_text(encoding="utf-8"))
    pman["files"][ORACLE_FILE] = _write(private / ORACLE_FILE, _jsonl(oracles), 0o600)
    pman["files"][WORLDS_FILE] = _write(private / WORLDS_FILE,
                                        _jsonl([_world_record(w) for w in nb.worlds]), 0o600)
    pman["public_digest_v2"] = block["digest"]
    # Structure counts stay private, as the records/1 ``structure`` field does.
    pman["structures_v2"] = dict(sorted(Counter(o["structure"] for o in oracles).items()))
    _write(private / "manifest.json", _pretty(pman), 0o600)
    return out


def check_families(families: frozenset[str]) -> frozenset[str]:
    """Return ``families`` if each is an episode family; refuse (``bad_request``) otherwise."""
    bad = sorted(families - set(EPISODE_FAMILIES))
    if bad or not families:
        raise Refusal([Reason("bad_request", f"not next-stage families: {bad}",
                              subject="families")], gate="causal build")
    return families
