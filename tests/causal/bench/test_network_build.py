"""Tests for rungbench.causal.bench.network_build: ``causal build --networks``."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.leaks import PRIVATE_KEYS, load_secrets, scan_bench, scan_public
from rungbench.causal.bench.networks import COUPLING_TEXT, NETWORK_DIR, NETWORK_FAMILY
from rungbench.causal.bench.reference_agents import SIGNATURES, reference_agent
from rungbench.causal.bench.scorer import score_dict
from rungbench.causal.bench.verified import (
    bench_cases,
    bench_oracles,
    open_bench,
    open_run,
    run_verdicts,
)
from rungbench.causal.checks import second_scorer
from rungbench.cli.causal_bench import register

app = typer.Typer()
register(app)

AGENTS = ("oracle", "rung1", "rung2_population", "resampled", "always_abstain",
          "overconfident", "never_abstain")
"""Reference agents whose responses both scorers grade on the network cases."""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dev bench of 2 generated worlds plus alarm and child."""
    out = tmp_path_factory.mktemp("netbench") / "bench"
    build_split("dev", 2, 11, out, networks="alarm,child")
    return out


def _network_pairs(bench: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    b = open_bench(bench)
    oracles = bench_oracles(b)
    return [(c.model_dump(mode="json"), oracles[c.case_id].model_dump(mode="json"))
            for c in bench_cases(b) if c.family == NETWORK_FAMILY]


def test_networks_add_two_worlds_of_the_network_family(bench: Path) -> None:
    """Each network is one world with 12 items (3 slots x 4 kinds) under two skins, rung 1
    to 3, exact and identification, with one world record naming the network."""
    pairs = _network_pairs(bench)
    assert len(pairs) == 2 * 12 * 2
    assert {(c["item_type"], c["rung"]) for c, _ in pairs} == {
        ("exact", "observation"), ("exact", "intervention"), ("exact", "counterfactual"),
        ("identification", "intervention")}
    manifest = json.loads((bench / "public" / "manifest.json").read_text())
    assert manifest["counts"]["network/exact"] == 36
    assert manifest["counts"]["network/identification"] == 12
    worlds = [json.loads(x) for x in (bench / "private" / "worlds.jsonl").read_text()
              .splitlines()]
    names = [w["network"]["name"] for w in worlds if "network" in w]
    assert names == ["alarm", "child"]
    assert all(w["structure"] == "network" for w in worlds if "network" in w)


def test_the_wording_uses_the_real_variable_and_state_names(bench: Path) -> None:
    """A network-skin question names the query's own variables and states; its nonsense
    twin names none of the network's variables but the same states."""
    pairs = _network_pairs(bench)
    by_id = {c["case_id"]: c for c, _ in pairs}
    real_vars: set[str] = set()
    for c, _ in pairs:
        if c["skin"] == "network":
            real_vars |= {v["name"] for v in _variables(c)}
    for c, _ in pairs:
        q = c["query"]
        events = [q["target"], q["evidence"], q.get("do", {})]
        for event in events:
            for var, state in event.items():
                assert f"{var} " in c["question"] and state in c["question"]
        if c["skin"] == "network":
            assert set(q["target"]) <= real_vars
            twin = by_id[c["case_id"][:-1] + "n"]
            assert not any(f"{v} " in twin["question"] for v in real_vars
                           if f"{v} " in c["question"])
    alarm = [c for c, _ in pairs if c["skin"] == "network"
             and "HYPOVOLEMIA" in {v["name"] for v in _variables(c)}]
    assert alarm and all(c["query"]["target"] for c in alarm)


def _variables(case: dict[str, Any]) -> list[dict[str, Any]]:
    ev = case["evidence"]
    payload = ev["payload"] if ev["kind"] == "mechanism" else ev["payload"]["cpts"]
    variables: list[dict[str, Any]] = payload["variables"]
    return variables


def test_the_evidence_is_the_network_cpts(bench: Path) -> None:
    """The evidence lists every CPT row of the network, each summing to 1, under the case's
    variable names; identification cases add the graph."""
    for c, _ in _network_pairs(bench):
        variables = _variables(c)
        assert len(variables) in (37, 20)  # alarm, child
        for v in variables:
            assert all(abs(sum(row) - 1.0) < 1e-6 for row in v["cpt"])
        if c["item_type"] == "identification":
            graph = c["evidence"]["payload"]["graph"]
            assert [g["name"] for g in graph] == [v["name"] for v in variables]


def test_public_records_hold_no_answers(bench: Path) -> None:
    """The leak scan is clean; no public network case carries a private key; and a question
    edited to print its own answer is caught."""
    assert scan_bench(bench).ok
    for c, _ in _network_pairs(bench):
        assert not set(_keys(c)) & PRIVATE_KEYS


def test_a_planted_answer_is_found_by_the_leak_scan(bench: Path, tmp_path: Path) -> None:
    """Writing a network item's reference value into its question makes the scan fail."""
    public = tmp_path / "public"
    shutil.copytree(bench / "public", public)
    lines = (public / "cases.jsonl").read_text().splitlines()
    pairs = _network_pairs(bench)
    case, oracle = next((c, o) for c, o in pairs if 0.01 < o["value"] < 0.99)
    i = next(n for n, x in enumerate(lines) if json.loads(x)["case_id"] == case["case_id"])
    doc = json.loads(lines[i])
    doc["question"] += f" (hint: {oracle['value']:.4f})"
    lines[i] = json.dumps(doc)
    (public / "cases.jsonl").write_text("\n".join(lines) + "\n")
    report = scan_public(public, load_secrets(bench / "private"))
    assert [f.kind for f in report.findings] == ["value"]


def _keys(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [k for key, v in doc.items() for k in (key, *_keys(v))]
    if isinstance(doc, list):
        return [k for v in doc for k in _keys(v)]
    return []


def test_a_counterfactual_states_its_coupling(bench: Path) -> None:
    """Every rung-3 network case states the coupling of its private estimand, in its
    question, its assumptions and its structured query."""
    rung3 = [(c, o) for c, o in _network_pairs(bench) if c["rung"] == "counterfactual"]
    assert len(rung3) == 12
    for c, o in rung3:
        coupling = c["query"]["coupling"]
        assert o["estimand"].endswith(f"[{coupling} coupling]")
        assert COUPLING_TEXT[coupling] in c["question"]
        assert any(COUPLING_TEXT[coupling] in a for a in c["assumptions"])
        assert o["factual_episode"] is not None


def test_the_skin_audit_and_listing_gate_pass_with_networks(bench: Path) -> None:
    """Network cases pass the nonsense-skin structure audit and the listing-order gate."""
    from rungbench.causal.bench.audit import audit_bench

    audit = audit_bench(bench)
    assert audit["skin_structure"]["mismatched"] == 0
    assert audit["skin_structure"]["pairs"] >= 24
    assert audit["listing_order"]["pass"]


def test_reference_agents_score_as_expected(bench: Path, tmp_path: Path) -> None:
    """On network cases the oracle agent and the original-wording agent are always right,
    always-abstain always abstains,
    and the rung-1 agent is wrong exactly where P(y | x) is farther than tol from the
    answer."""
    oracles = bench_oracles(open_bench(bench))
    net = {cid for cid, o in oracles.items() if o.family == NETWORK_FAMILY}
    rows = {}
    for agent in ("oracle", "always_abstain", "rung1", "original_wording"):
        evaluate(bench, f"reference:{agent}", tmp_path / agent)
        rows[agent] = {r["verdict"]["case_id"]: r for r in run_verdicts(open_run(tmp_path / agent))
                       if r["verdict"]["case_id"] in net}
    for agent in ("oracle", "original_wording"):  # network wording is original wording
        assert {r["verdict"]["outcome"] for r in rows[agent].values()} == {"correct"}
    assert {r["verdict"]["outcome"] for r in rows["always_abstain"].values()} == {"abstain"}
    wrong = {cid for cid, r in rows["rung1"].items() if r["verdict"]["outcome"] == "wrong"}
    expected = {cid for cid in net if oracles[cid].rung > 1
                and abs((oracles[cid].confusions.rung1 or 0.0) - (oracles[cid].value or 0.0))
                > 0.02 + 1e-12}
    assert wrong == expected and wrong


@pytest.mark.parametrize("agent", ["rung1", "rung2_population", "resampled"])
def test_confused_agents_get_their_signature_on_network_failures(
    bench: Path, tmp_path: Path, agent: str
) -> None:
    """Each rung-confused reference agent fails some network cases and every one of those
    failures carries its signature label."""
    oracles = bench_oracles(open_bench(bench))
    evaluate(bench, f"reference:{agent}", tmp_path / "run")
    failed = [r for r in run_verdicts(open_run(tmp_path / "run"))
              if oracles[r["verdict"]["case_id"]].family == NETWORK_FAMILY
              and r["verdict"]["outcome"] == "wrong"]
    assert failed
    assert all(SIGNATURES[agent] in r["labels"] for r in failed)


def test_a_bif_path_builds_like_a_bundled_network(tmp_path: Path) -> None:
    """A network given as a .bif path is built under its file stem, with its source digest
    in the private world record."""
    path = tmp_path / "mycancer.bif"
    path.write_bytes((NETWORK_DIR / "cancer.bif").read_bytes())
    build_split("dev", 1, 8, tmp_path / "bench", networks=str(path))
    worlds = [json.loads(x) for x in (tmp_path / "bench" / "private" / "worlds.jsonl")
              .read_text().splitlines()]
    record = worlds[-1]["network"]
    assert record["name"] == "mycancer" and record["source"] == "mycancer.bif"
    assert record["sha256"].endswith(hashlib.sha256(path.read_bytes()).hexdigest())
    assert sorted(record["couplings"]) == ["comonotone", "independent"]


def test_a_two_variable_network_builds(tmp_path: Path) -> None:
    """A network smaller than the widest evidence draw (2 variables, up to 3 evidence) builds:
    its rung-1 items take the one evidence variable it has (the draw raised ValueError)."""
    path = tmp_path / "pair.bif"
    path.write_text("network pair { }\n"
                    "variable A { type discrete [ 2 ] { yes, no }; }\n"
                    "variable B { type discrete [ 2 ] { yes, no }; }\n"
                    "probability ( A ) { table 0.3, 0.7; }\n"
                    "probability ( B | A ) { (yes) 0.9, 0.1; (no) 0.2, 0.8; }\n")
    for split in ("dev", "test"):
        build_split(split, 1, 8, tmp_path / split, networks=str(path))
        oracles = [json.loads(x) for x in (tmp_path / split / "private" / "oracle.jsonl")
                   .read_text().splitlines()]
        assert any(o["family"] == NETWORK_FAMILY and o["rung"] == 1 for o in oracles), split


def test_both_scorers_agree_on_every_network_case(bench: Path) -> None:
    """The first and the independent second scorer give the same outcome and absolute error
    for every reference agent's response, and for responses off by 0.01 / 0.05."""
    b = open_bench(bench)
    oracles = bench_oracles(b)
    cases = [c for c in bench_cases(b) if c.family == NETWORK_FAMILY]
    compared = 0
    for name in AGENTS:
        agent = reference_agent(f"reference:{name}", oracles)
        for case in cases:
            base = agent.answer(case).model_dump(mode="json")
            for shift in (None, 0.01, 0.05):
                response = dict(base)
                if shift is not None and response.get("value") is not None:
                    response["value"] = min(1.0, response["value"] + shift)
                o = oracles[case.case_id].model_dump(mode="json")
                first, second = score_dict(o, response), second_scorer.score(o, response)
                assert first["outcome"] == second["outcome"], (case.case_id, response)
                assert first["abs_error"] == pytest.approx(second["abs_error"], abs=1e-12)
                compared += 1
    assert compared == len(AGENTS) * len(cases) * 3


def test_the_default_build_is_a_prefix_of_the_network_build(tmp_path: Path) -> None:
    """Without --networks the bench is what it was: its cases are, byte for byte, the first
    lines of the same build with networks."""
    plain, with_net = tmp_path / "plain", tmp_path / "net"
    build_split("validation", 2, 5, plain)
    build_split("validation", 2, 5, with_net, networks="child")
    a = (plain / "public" / "cases.jsonl").read_bytes()
    b = (with_net / "public" / "cases.jsonl").read_bytes()
    assert b.startswith(a) and len(b) > len(a)
    assert "network" not in (plain / "private" / "worlds.jsonl").read_text()


def test_splits_ask_different_questions_of_one_network(tmp_path: Path) -> None:
    """dev and test builds of child have different world ids and different questions."""
    questions = {}
    for split in ("dev", "test"):
        build_split(split, 1, 5, tmp_path / split, networks="child")
        cases = [json.loads(x) for x in (tmp_path / split / "public" / "cases.jsonl")
                 .read_text().splitlines()]
        questions[split] = {(c["world_id"], c["question"]) for c in cases
                            if c["family"] == NETWORK_FAMILY}
    assert not questions["dev"] & questions["test"]
    assert {w for w, _ in questions["dev"]}.isdisjoint({w for w, _ in questions["test"]})


def _cli(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def test_cli_journey_on_a_small_network_build(tmp_path: Path) -> None:
    """build --networks child, eval the oracle agent, report and audit: all succeed and the
    network family is scored 24/24."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    built = _cli(["build", "--split", "dev", "--worlds", "1", "--seed", "3", "--out",
                  str(bench), "--networks", "child", "--json"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["counts"]["network/exact"] == 18
    ran = _cli(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out",
                str(run), "--json"])
    assert ran.exit_code == 0, ran.output
    report = _cli(["report", "--run", str(run), "--json"])
    assert report.exit_code == 0, report.output
    assert "network" in report.stdout
    audited = _cli(["audit", "--bench", str(bench), "--json"])
    assert audited.exit_code == 0, audited.output


@pytest.mark.parametrize("networks, words", [
    ("alarm,nosuch", "unknown network 'nosuch'"),
    ("missing.bif", "BIF file not found"),
])
def test_cli_refuses_bad_network_names_in_one_line(tmp_path: Path, networks: str,
                                                   words: str) -> None:
    """A bad --networks value is one line on stderr naming it, exit non-zero, nothing
    written."""
    out = tmp_path / "bench"
    result = _cli(["build", "--split", "dev", "--worlds", "1", "--seed", "3", "--out",
                   str(out), "--networks", networks])
    assert result.exit_code in (1, 3) and "Traceback" not in result.output
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and words in lines[0]
    assert not out.exists()
