"""The study chain through the real runner and the loopback OpenAI server (seed 000, seed 001)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process

from rungbench.agents.loopback import Fault
from rungbench.agents.openai_provider import Pricing
from rungbench.agents.providers import serve_on_loopback
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.ladder import SCHEMA_DIGEST, final_calls, schedule_for
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.panels import payload_render, render_prompt
from rungbench.chess.studies.planted import planted_agent
from rungbench.design.matching import check_block
from rungbench.design.presets import factorial_design
from rungbench.errors import Refusal
from rungbench.evidence.canonical import digest
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import EVENTS, load_run, read_log, verify_run

PRICING = Pricing(usd_per_mtok_in=1.0, usd_per_mtok_out=4.0)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A study with its small manifest frozen; returns (study, stage)."""
    stage = fx.small_stage()
    root = tmp_path_factory.mktemp("study") / "study"
    st.freeze(root, stage, fx.small_preset())
    return root, stage


def _auth(root: Path, **kw: Any) -> str:
    args: dict[str, Any] = {"max_cells": 100_000, "max_tokens": 10**9, "max_cost_usd": 100.0,
                            "models": ("luna", "deepseek-v4-flash"),
                            "routes": ("loop-a", "loop-b"), "authorized_by": "test"}
    args.update(kw)
    return bud.freeze_authorization(root, bud.Authorization(**args))


def _run(root: Path, stage: Path, binding: str, model: str, route: str, agent_name: str,
         auth: str, **kw: Any) -> dict[str, Any]:
    manifest = load_manifest(root / "manifest")
    schedule = schedule_for(load_binding(root, binding, manifest), manifest, model, route)
    with serve_on_loopback(planted_agent(agent_name), requests=[c.request for c in schedule],
                           label=model, pricing=PRICING) as provider:
        return st.run_study(root, stage, binding, model=model, route=route, agent=provider,
                            authorization=auth, concurrency=4, **kw)


def test_a105_two_models_two_routes(study: tuple[Path, Path]) -> None:
    """A105 runs for two models on two routes; one schema and one universe across arms."""
    root, stage = study
    bound = st.bind(root, fx.a105_small(), stage)
    auth = _auth(root)
    results = [_run(root, stage, bound["binding"], "luna", "loop-a", "a105:board_limited", auth),
               _run(root, stage, bound["binding"], "deepseek-v4-flash", "loop-b",
                    "a105:complementary", auth)]
    assert [r["cells"] for r in results] == [96, 96]
    assert all(r["complete"] and r["final"] == r["cells"] for r in results)
    universes: dict[str, set[str]] = defaultdict(set)
    rates: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in results:
        for meta, outcome, args in final_calls(Path(r["run"])):
            assert outcome == "answered" and meta["schema_digest"] == SCHEMA_DIGEST
            assert meta["route"] == r["route"] and meta["model"] == r["model"]
            assert meta["split"] in ("development", "held_out")
            universes[meta["key"]].add(meta["universe_digest"])
            rates[(r["model"], meta["condition"])].append(
                int(args is not None and args["move"] in meta["best_moves"]))
    assert all(len(v) == 1 for v in universes.values()) and len(universes) == 12
    _, schedule = load_run(Path(results[0]["run"]))
    assert {digest(list(c.request.tools)) for c in schedule} == {SCHEMA_DIGEST}
    mean = {k: sum(v) / len(v) for k, v in rates.items()}
    assert mean[("luna", "board_only")] > mean[("luna", "legal_list_only")]
    assert mean[("deepseek-v4-flash", "board_plus_legal_list")] > \
        mean[("deepseek-v4-flash", "board_only")]


def test_a105_prompts_differ_only_at_registered_offsets(study: tuple[Path, Path]) -> None:
    """Every bound block's four rendered payloads match outside registered content offsets."""
    root, _ = study
    manifest = load_manifest(root / "manifest")
    d = factorial_design(fx.a105_small())
    for row in manifest.positions(("development", "held_out")):
        fen = manifest.lists[row["key"]].fen
        for order in d.orders:
            prompts = {c.name: render_prompt(fen, c, order) for c in d.conditions}
            from rungbench.chess.studies.panels import a105_request

            renders = {n: payload_render(a105_request(f"x:{n}", p), p.user)
                       for n, p in prompts.items()}
            check = check_block(renders)
            assert (check.length_mismatches, check.stray_offsets, check.span_mismatches) == \
                (0, 0, 0)


def test_stale_binding_and_budget_gates(study: tuple[Path, Path], tmp_path: Path) -> None:
    """A binding of another manifest, an uncovered route or model, or no budget refuses."""
    root, stage = study
    bound = st.bind(root, fx.a105_small(), stage)
    other = tmp_path / "other"
    st.freeze(other, stage, fx.small_preset({"training": 1, "development": 1, "held_out": 1}))
    manifest = load_manifest(other / "manifest")
    import shutil

    shutil.copytree(root / "bindings", other / "bindings")
    with pytest.raises(Refusal) as err:
        load_binding(other, bound["binding"], manifest)
    assert err.value.reasons[0].code == "binding_stale"
    auth = _auth(root, routes=("loop-a",), models=("luna",))
    with pytest.raises(Refusal) as err:
        _run(root, stage, bound["binding"], "deepseek-v4-flash", "loop-b", "a105:null", auth)
    assert {r.code for r in err.value.reasons} == {"budget_model_not_covered",
                                                   "budget_route_not_covered"}
    with pytest.raises(Refusal) as err:
        _run(root, stage, bound["binding"], "luna", "loop-a", "a105:null", "0" * 12)
    assert err.value.reasons[0].code == "budget_unauthorized"


def test_runner_stops_at_the_authorized_ceiling(study: tuple[Path, Path], tmp_path: Path) -> None:
    """A run stops at its cell or token ceiling, records the spend, then refuses to go on."""
    _, stage = study
    root = tmp_path / "s"
    st.freeze(root, stage, fx.small_preset())
    bound = st.bind(root, fx.a105_small(), stage)
    auth = _auth(root, max_cells=30)
    result = _run(root, stage, bound["binding"], "luna", "loop-a", "a105:null", auth)
    assert result["stopped"] == "budget_ceiling" and result["final"] == 30
    assert result["spend"]["cells"] == 30 and result["spend"]["cost_usd"] > 0
    with pytest.raises(Refusal) as err:
        _run(root, stage, bound["binding"], "luna", "loop-a", "a105:null", auth)
    assert err.value.reasons[0].code == "budget_cells_exhausted"
    fresh = tmp_path / "t"
    st.freeze(fresh, stage, fx.small_preset())
    st.bind(fresh, fx.a105_small(), stage)
    tokens = _auth(fresh, max_tokens=result["spend"]["tokens"])
    again = _run(fresh, stage, bound["binding"], "luna", "loop-a", "a105:null", tokens)
    assert again["stopped"] == "budget_ceiling"
    assert 0 < again["spend"]["tokens"] <= result["spend"]["tokens"]


KILL_SCRIPT = """
import sys
from pathlib import Path
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.ladder import schedule_for
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import planted_agent
from rungbench.agents.providers import serve_on_loopback
from rungbench.agents.spec import Pricing
root, stage, binding, auth = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
m = load_manifest(root / "manifest")
s = schedule_for(load_binding(root, binding, m), m, "luna", "loop-a")
with serve_on_loopback(planted_agent("a105:substitutable"), requests=[c.request for c in s],
                       label="luna", delay_s=0.05, pricing=Pricing(1.0, 4.0)) as p:
    st.run_study(root, stage, binding, model="luna", route="loop-a", agent=p,
                 authorization=auth, concurrency=2)
"""


def test_sigkill_and_resume_lose_and_duplicate_nothing(study: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    """A run killed with SIGKILL mid-flight resumes to one final per cell, none re-sent."""
    _, stage = study
    root = tmp_path / "s"
    st.freeze(root, stage, fx.small_preset())
    bound = st.bind(root, fx.a105_small(), stage)
    auth = _auth(root)
    script = tmp_path / "kill_me.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(root), str(stage),
                             bound["binding"], auth])
    deadline = time.monotonic() + 120
    events = None
    while time.monotonic() < deadline:
        found = list((root / "runs").glob("*/" + EVENTS)) if (root / "runs").exists() else []
        if found and found[0].read_bytes().count(b'"kind":"final"') >= 20:
            events = found[0]
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert events is not None
    run_dir = events.parent
    before = verify_run(run_dir)
    assert 20 <= before.final < before.cells
    result = _run(root, stage, bound["binding"], "luna", "loop-a", "a105:substitutable", auth)
    assert result["complete"] and result["final"] == result["cells"] == 96
    log, states = read_log(run_dir, load_run(run_dir)[1], None)
    assert all(len(s.finals) == 1 for s in states.values())
    final_at: dict[str, int] = {}
    for i, e in enumerate(log):
        if e["kind"] == "final":
            final_at.setdefault(e["cell"], i)
        if e["kind"] == "attempt" and e["cell"] in final_at:
            raise AssertionError(f"cell {e['cell']} was sent again after its final")


SEEDS = 6
"""Seeded replicates of each planted selector."""


def test_e023_near_strong_hurts_the_diffuse_selector_more(study: tuple[Path, Path]) -> None:
    """Through real cells, near_strong lowers rank-1 choice more for diffuse than for sharp."""
    root, stage = study
    bound = st.bind(root, fx.e023_small(), stage)
    models = tuple(f"{m}-s{i}" for m in ("sharp", "diffuse") for i in range(SEEDS))
    auth = _auth(root, models=models)
    manifest = load_manifest(root / "manifest")
    binding = load_binding(root, bound["binding"], manifest)
    assert binding.document["manifest"] == manifest.digest
    rank1: dict[tuple[str, str], list[int]] = defaultdict(list)
    for model in models:
        schedule = schedule_for(binding, manifest, model, "loop-a")
        assert len(schedule) == 12 * 4 * 2
        kind, seed = model.split("-s")
        agent = planted_agent(f"e023:{kind}", seed=int(seed))
        with serve_on_loopback(agent, requests=[c.request for c in schedule],
                               label=model) as provider:
            result = st.run_study(root, stage, bound["binding"], model=model, route="loop-a",
                                  agent=provider, authorization=auth, concurrency=4)
        assert result["complete"]
        for meta, _, args in final_calls(Path(result["run"])):
            assert args is not None
            chosen = meta["ranks"][meta["candidates"].index(args["move"])]
            rank1[(kind, meta["condition"])].append(int(chosen == 1))
    rate = {k: sum(v) / len(v) for k, v in rank1.items()}
    drop = {m: rate[(m, "far_tail")] - rate[(m, "near_strong")] for m in ("sharp", "diffuse")}
    assert len(rank1[("sharp", "near_strong")]) == SEEDS * 12 * 2
    # planted: P(rank 1) sharp 0.924 vs 0.999, diffuse 0.438 vs 0.676 (drops 0.075, 0.238)
    assert drop["diffuse"] > drop["sharp"]
    assert drop["diffuse"] > 0.1


def _own_preset(tmp_path: Path, name: str = "mine.toml") -> Path:
    """The small A105 preset as a file of the user's, registered for ``luna`` alone."""
    from rungbench.chess.studies.preset_copy import for_models

    text = _a105_small_text()
    path = tmp_path / name
    path.write_text(for_models(text, ["luna"], source=name), encoding="utf-8")
    return path


def _a105_small_text() -> str:
    from rungbench.design.registry import bundled_text

    return bundled_text("a105").replace("positions_development = 150",
                                        "positions_development = 6").replace(
        "positions_held_out = 150", "positions_held_out = 6").replace(
        "planned_cells = 4800", "planned_cells = 192").replace(
        "planned_requests_per_model = 2400", "planned_requests_per_model = 96")


MODELS_FILE = """
[models.luna]
model = "vendor/luna-2"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "LUNA_KEY"
[models.luna.params]
temperature = 0
"""


def test_a_preset_file_of_ones_own_binds_with_the_agents_its_labels_name(
        study: tuple[Path, Path], tmp_path: Path) -> None:
    """A user's preset file binds like a bundled one; with a models file the binding pins
    each label's spec and the file's digest (no key); the same preset at another path is the
    same binding; a label the models file lacks is refused naming both files."""
    from rungbench.agents.models_file import load_models, parse_models

    root, stage = study
    models_path = tmp_path / "models.toml"
    models_path.write_text(MODELS_FILE, encoding="utf-8")
    models = load_models(models_path)
    bound = st.bind(root, _own_preset(tmp_path), stage, models)
    binding = load_binding(root, bound["binding"], load_manifest(root / "manifest"))
    assert binding.document["design"]["origin"] == "file" and not binding.bundled
    assert binding.agent("luna")["model"] == "vendor/luna-2"  # type: ignore[index]
    assert bound["models_file"] == models.only(["luna"]).digest()
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    again = st.bind(root, _own_preset(elsewhere), stage, models)  # moved, not renamed
    assert again["binding"] == bound["binding"]
    lacking = parse_models(MODELS_FILE.replace("models.luna", "models.other"), source="m2")
    with pytest.raises(Refusal) as caught:
        st.bind(root, _own_preset(tmp_path), stage, lacking)
    reason = caught.value.reasons[0]
    assert reason.code == "model_unknown" and "mine.toml" in reason.detail
    assert "m2" in reason.detail and "'luna'" in reason.detail


def test_a_run_must_use_the_agent_the_binding_pinned(study: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    """Running a pinned label with other parameters is refused (agent_changed) before any
    agent starts; a label the preset does not register is refused (model_unknown); the
    endpoint URL may change."""
    from rungbench.agents.models_file import parse_models
    from rungbench.agents.spec import parse_agent

    root, stage = study
    models = parse_models(MODELS_FILE, source="models.toml")
    binding = st.bind(root, _own_preset(tmp_path), stage, models)["binding"]
    auth = _auth(root)
    changed = parse_agent("openai:vendor/luna-2", label="luna", base_url="http://127.0.0.1:9/v1",
                          api_key_env="LUNA_KEY", params={"temperature": 0.7})
    other = parse_agent("openai:m", label="gemini", base_url="http://127.0.0.1:9/v1")
    for spec, code in ((changed, "agent_changed"), (other, "model_unknown")):
        with pytest.raises(Refusal) as caught:
            st.run_spec(root, stage, binding, spec, route="loop-a", authorization=auth)
        assert caught.value.codes == (code,)
    moved = models.get("luna")
    assert st.agent_reasons(load_binding(root, binding, load_manifest(root / "manifest")),
                            parse_agent("openai:vendor/luna-2", label="luna",
                                        base_url="http://10.0.0.1:8000/v1",
                                        api_key_env="LUNA_KEY",
                                        params=dict(moved.params))) == []


def test_a_cell_that_always_fails_is_sent_max_retries_plus_one_times_in_all(
        study: tuple[Path, Path], tmp_path: Path) -> None:
    """A cell whose provider always answers 500, over a start and three resumes at two
    attempts per session: the registered cap (max_retries 3, counted in the run's log) sends
    it exactly 4 times in all, then its final is a terminal provider failure, shown in
    status; every other cell is answered once and the run is complete."""
    _, stage = study
    root = tmp_path / "s"
    st.freeze(root, stage, fx.small_preset())
    bound = st.bind(root, fx.a105_small(), stage)
    auth = _auth(root)
    manifest = load_manifest(root / "manifest")
    schedule = schedule_for(load_binding(root, bound["binding"], manifest), manifest, "luna",
                            "loop-a")
    doomed = schedule.cells[0]
    policy = RetryPolicy(max_attempts=2, backoff_s=(0.0,))
    for _ in range(4):  # the start and three resumes
        with serve_on_loopback(planted_agent("a105:null"),
                               requests=[c.request for c in schedule], label="luna",
                               pricing=PRICING, fault_for=lambda r: Fault.SERVER_ERROR
                               if r.case_id == doomed.request.case_id else None) as provider:
            result = st.run_study(root, stage, bound["binding"], model="luna",
                                  route="loop-a", agent=provider, authorization=auth,
                                  concurrency=2, policy=policy)
    run_dir = Path(result["run"])
    events = [json.loads(line) for line in (run_dir / EVENTS).read_text().splitlines()]
    sent = Counter(e["cell"] for e in events if e["kind"] == "attempt")
    assert sent[doomed.cell_id] == 4
    assert all(n == 1 for cell, n in sent.items() if cell != doomed.cell_id)
    final = next(e for e in events if e["kind"] == "final" and e["cell"] == doomed.cell_id)
    assert final["outcome"] == "provider_error" and final["attempts"] == 4
    assert "terminal provider failure" in final["note"]
    assert load_run(run_dir)[0]["policy"]["max_retries"] == 3
    check = verify_run(run_dir)
    assert check.ok and check.terminal == 1
    [row] = [r for r in st.status(root)["runs"] if r["run_id"] == run_dir.name]
    assert row["complete"] and row["terminal_provider_failures"] == 1
