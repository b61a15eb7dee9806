"""Shared builders of the study tests: a small real label stage and a small ladder preset."""

from __future__ import annotations

import functools
import tempfile
from importlib import resources
from pathlib import Path

from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import (
    PlySampling,
    PoolConfig,
    PoolSource,
    bundled_data_dir,
    freeze_pool,
)
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace
from rungbench.design.registry import DESIGN_PACKAGE, RegisteredDesign, load_design, parse_design
from rungbench.evidence.canonical import digest

OPEN = IdleGate(max_load=1e9)
"""An idle gate that never refuses (tests share the host with other work)."""

SMALL_QUOTA = {"training": 2, "development": 1, "held_out": 1}
"""Quota per class x colour cell of the small test preset (24 positions)."""


def small_preset(quota: dict[str, int] | None = None, *, positions: int | None = None,
                 name: str = "e020_e021_small") -> RegisteredDesign:
    """Return the registered ladder preset with its manifest quotas scaled down."""
    quota = quota or SMALL_QUOTA
    text = (resources.files(DESIGN_PACKAGE) / "e020_e021.toml").read_text(encoding="utf-8")
    registered = "quota = { training = 50, development = 25, held_out = 25 }"
    assert registered in text
    table = ", ".join(f"{k} = {v}" for k, v in quota.items())
    text = text.replace(registered, f"quota = {{ {table} }}")
    total = positions if positions is not None else 6 * sum(quota.values())
    text = text.replace("positions = 600", f"positions = {total}")
    return consistent(parse_design(text, name=name, source=f"<{name}>"))


@functools.cache
def small_stage() -> Path:
    """A published label stage over 80 puzzles and plies of 12 games (2,000 nodes), labelled
    by Debian's Stockfish 15.1 (``stockfish-15-debian``): the seeded interval checks of the
    study tests built on it (tests/chess/studies/test_ladder.py) were set on these labels,
    and a stage of other candidate lists re-draws every seeded planted answer. The study
    layer runs on Stockfish 18 labels in tests/demo/test_study.py and
    tests/chess/studies/conftest.py."""
    root = Path(tempfile.mkdtemp(prefix="rungbench-study-stage-"))
    data = bundled_data_dir()
    llm = data / "llm_chess"
    ws = Workspace(root / "ws")
    games = data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
    sources = [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv", 80),
               PoolSource("pgn_plies", games, 12, sampling=PlySampling(from_move=8, stride=3))]
    freeze_pool(ws, sources, PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46")
                                      .glob("2025*.json")), terminal=True)
    freeze_cohort(ws, "replication", [llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
                  terminal=True)
    qualify(ws)
    engine = EngineConfig(build="stockfish-15-debian", nodes=2_000, hash_mb=16)
    run_label_stage(ws, LabelConfig(engine=engine, workers=2), OPEN)
    return ws.stage


def variant(preset: str, replacements: dict[str, str], *, name: str) -> RegisteredDesign:
    """Return registered preset ``preset`` with exact text replacements (each must occur),
    its checked counts recomputed (:func:`consistent`)."""
    text = (resources.files(DESIGN_PACKAGE) / f"{preset}.toml").read_text(encoding="utf-8")
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    return consistent(parse_design(text, name=name, source=f"<{name}>"))


def consistent(reg: RegisteredDesign) -> RegisteredDesign:
    """``reg`` with the counts a preset registers as checked values (A105's planned cells,
    requests and family size; a ladder's [cells]) recomputed from its other keys, and no
    [seed_figures] (the seed's figures are for the registered size): a test variant changes
    a size and must not restate every count by hand."""
    doc = {k: dict(v) if isinstance(v, dict) else v for k, v in reg.document.items()}
    doc.pop("seed_figures", None)
    kind = doc["design"]["kind"]
    schedule = doc["schedule"]
    models = len(schedule.get("models") or [])
    if kind == "factorial_2x2":
        cells = ((schedule["positions_development"] + schedule["positions_held_out"]) * 4
                 * len(schedule["panel_orders"]) * models)
        schedule.update(planned_cells=cells, planned_requests_per_model=cells // models)
        doc["analysis"]["family_size"] = len(doc["analysis"]["primary_tests"])
    elif kind in ("intervention_ladder", "falsifier_arms"):
        manifest = doc.get("manifest") or load_design("e020_e021").document["manifest"]
        per = len(manifest["classes"]) * len(manifest["colours"])
        positions = sum(int(manifest["quota"][p]) * per for p in schedule["partitions"])
        arms, probes = len(doc["arms"]), len(doc.get("probes", []))
        counts = {"move_choice": positions * models * arms,
                  "probes": positions * models * probes,
                  "choice": positions * models * probes}
        cells = {k: v for k, v in counts.items() if k in doc["cells"]}
        doc["cells"] = {**cells, "total": sum(counts.values())}
    return RegisteredDesign(reg.name, reg.source, doc, digest(doc))


def a105_small() -> RegisteredDesign:
    """A105 over the small manifest's 6 development + 6 held-out positions."""
    return variant("a105", {"positions_development = 150": "positions_development = 6",
                            "positions_held_out = 150": "positions_held_out = 6"},
                   name="a105_small")


def e023_small() -> RegisteredDesign:
    """E023 over 12 positions of the small manifest (held-out, then development)."""
    return variant("e023", {"positions = 200": "positions = 12"}, name="e023_small")


def ladder_replicates(models: list[str]) -> RegisteredDesign:
    """The small ladder preset registering ``models`` (e.g. seeded replicates)."""
    base = small_preset()
    document = {**base.document, "schedule": {**base.document["schedule"], "models": models}}
    return consistent(RegisteredDesign("e020_e021_reps", "<e020_e021_reps>", document,
                                       digest(document)))
