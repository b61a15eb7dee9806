"""The study demo stage (rungbench.demo.study), reduced: E023 with one planted selector."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.ladder import schedule_for
from rungbench.chess.studies.manifest import load_manifest
from rungbench.demo import StageResult
from rungbench.demo.study import (
    PLANS,
    ROUTE,
    _manifest,
    cells_per_model,
    planned_cells,
    run,
    study_dir,
)
from rungbench.design.registry import load_design
from rungbench.report import render_report

PLAN = (("demo_e023", (("planted-diffuse", "e023:diffuse"),), False),)
"""One binding, one model: 20 positions x 4 arms x 2 presentations = 160 cells."""


def test_study_runs_evaluates_analyses_then_reuses(labelled: tuple[Path, StageResult]) -> None:
    """Freeze → bind → authorize → run → evaluate → analyse, then a re-run sends nothing and
    reproduces every digest; the report reads the study and its label stage."""
    workdir, _ = labelled
    first = run(workdir, plans=PLAN, depth=3).summary
    binding = first["bindings"]["demo_e023"]
    (entry,) = binding["runs"]
    assert first["manifest_counts"] == {"development": 12, "held_out": 12, "training": 6}
    assert entry["cells"] == 160 == planned_cells(PLAN) and entry["sent_now"] == 160
    assert entry["evaluation"]["role"] == "different-family evaluator"
    assert entry["evaluation"]["evaluator"].startswith("Ethereal")
    assert set(binding["analysis"]["e023"]) == {"planted-diffuse:development",
                                               "planted-diffuse:held_out"}
    again = run(workdir, plans=PLAN, depth=3).summary
    (rerun,) = again["bindings"]["demo_e023"]["runs"]
    assert again["manifest_reused"] and rerun["sent_now"] == 0
    assert rerun["evaluation"]["reused"] and again["bindings"]["demo_e023"]["analysis_reused"]
    assert (again["manifest"], again["authorization"], binding["binding"]) == (
        first["manifest"], first["authorization"], again["bindings"]["demo_e023"]["binding"])
    assert rerun["evaluation"]["evaluation"] == entry["evaluation"]["evaluation"]
    stage = workdir / "chess-study" / "labels" / "label-stage"
    report = render_report(study_dir(workdir), stage=stage)
    assert report["sections"]["e023"] == report["sections"]["labels"] == "present"
    assert report["sections"]["hazards"] == "present"
    assert report["sections"]["a105"] == "absent"


def test_each_demo_binding_schedules_the_cells_its_preset_registers(
        labelled: tuple[Path, StageResult]) -> None:
    """For every demo binding, one model's schedules (move choice, plus the probe and its
    choice stage where registered) hold the cells :func:`cells_per_model` reads from the
    preset, so the demo's total (README's figure, ``tests/test_readme.py``) is what it
    sends."""
    workdir, _ = labelled
    study, stage = study_dir(workdir), workdir / "chess-study" / "labels" / "label-stage"
    _manifest(study, stage)
    manifest = load_manifest(study / "manifest")
    for preset, agents, has_probe in PLANS:
        binding = load_binding(study, st.bind(study, preset, stage)["binding"], manifest)
        model = agents[0][0]
        cells = len(schedule_for(binding, manifest, model, ROUTE).cells)
        if has_probe:  # the choice stage is one call per probe call
            cells += 2 * len(schedule_for(binding, manifest, model, ROUTE, probe=True).cells)
        assert cells == cells_per_model(preset), preset
    assert planned_cells() == 1184


DEMO_CHANGES = {
    "demo_a105": {("schedule", "models"), ("schedule", "positions_development"),
                  ("schedule", "positions_held_out"),
                  ("schedule", "planned_cells"), ("schedule", "planned_requests_per_model"),
                  ("analysis", "primary_tests"), ("mde", "n"), ("mde", "clusters")},
    "demo_e020_e021": {("manifest", "positions"), ("manifest", "quota"), ("schedule", "models"),
                       ("schedule", "partitions"), ("cells", "move_choice"), ("cells", "probes"),
                       ("cells", "choice"), ("cells", "total")},
    "demo_e022": {("schedule", "models"), ("schedule", "manifest_preset"), ("cells", "total")},
    "demo_e023": {("schedule", "positions")},
}
"""Per demo preset, the only (table, key) pairs that may differ from the registered preset."""


@pytest.mark.parametrize("name", sorted(DEMO_CHANGES))
def test_demo_presets_differ_from_the_registered_only_where_stated(name: str) -> None:
    """A demo preset is its registered preset at demo size: any other difference (say, a
    constant the registered preset gained later) fails here. The seed's printed figures are
    for the registered size, so a demo preset carries none."""
    demo = load_design(name).document
    registered = load_design(name.removeprefix("demo_")).document
    registered.pop("seed_figures", None)
    assert set(demo) == set(registered)
    differing = set()
    for table, value in registered.items():
        if isinstance(value, dict):
            assert set(demo[table]) == set(value), table
            differing |= {(table, k) for k in value if demo[table][k] != value[k]}
        elif demo[table] != value:
            differing.add((table, ""))
    assert differing <= DEMO_CHANGES[name]
