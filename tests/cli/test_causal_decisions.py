"""`rungbench causal decisions` and `causal weekly-report --decisions`: question 3 answered from
two episode runs, as a user types the commands (the installed `rungbench` in a subprocess)."""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.instrument import claims

EXE = str(Path(sys.executable).parent / "rungbench")
PRICED = "--usd-per-mtok-in 0.15 --usd-per-mtok-out 0.6"
pytestmark = pytest.mark.xdist_group("decisions_journey")  # one worker builds the journey


def rb(line: str) -> subprocess.CompletedProcess[str]:
    """Run one command line as typed (``rungbench`` is this environment's entry point)."""
    argv = shlex.split(line)
    assert argv[0] == "rungbench"
    return subprocess.run([EXE, *argv[1:]], capture_output=True, text=True, timeout=300)


def ok_json(line: str) -> Any:
    """The JSON document a command that must succeed prints."""
    r = rb(line)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def claim_store(path: Path) -> None:
    """A store whose one claim (older than 7 days at the week's end) has a resolved
    prediction: resolution coverage 1/1, so question 3 is not capped by coverage."""
    db = sqlite3.connect(path, isolation_level=None)
    claims.create_store(db)
    app = claims.Appender(db)
    db.execute("BEGIN")

    def add(event: str, **fields: Any) -> None:
        app.append(event, claims.validate_event(event, fields), "2026-10-12T00:00:00Z")

    add("claim", claim_id="c1", episode_id="e1", seq=1, t="2026-10-05T00:00:00Z",
        author="piper", rung="counterfactual", cause="swap", effect="oom",
        polarity="positive", confidence=0.6, status="asserted", evidence_ids=["ev"],
        competing_ids=["alt"])
    add("prediction", pred_id="p1", claim_id="c1", episode_id="e1", seq=2,
        action="repair swap", predicted_effect="oom stops", p=0.8)
    add("resolution", pred_id="p1", episode_id="e1", seq=3, executed=1,
        observed_effect="oom stops", resolved_t="2026-10-11T00:00:00Z", resolver="sandbox")
    db.execute("COMMIT")
    db.close()


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Build a bench, run P2 and premature commitment as priced stand-ins, an unpriced P2 and
    a P2 over only the first 4 worlds."""
    root = tmp_path_factory.mktemp("q3")
    bench, out = root / "bench", root / "out"
    ok_json(f"rungbench causal build --split dev --seed 5 --worlds 8 --families incident "
            f"--out {bench} --json")
    runs = {}
    for name, agent, extra in (("p2", "reference:p2_protocol", PRICED),
                               ("premature", "reference:premature_commitment", PRICED),
                               ("unpriced", "reference:p2_protocol", ""),
                               ("fewer", "reference:p2_protocol", f"{PRICED} --worlds 4")):
        doc = ok_json(f"rungbench causal episodes --bench {bench} --agent {agent} {extra} "
                      f"--families incident --out {out}/{name} --json")
        runs[name] = doc["run"]
    store = root / "claims.sqlite"
    claim_store(store)
    return {"root": root, "bench": bench, "runs": runs, "store": store}


def test_decisions_then_weekly_report_answer_question_3(journey: dict[str, Any]) -> None:
    """`causal decisions` writes the document, prints both runs and the answer; the weekly
    report reads it, answers question 3 with the same interval and answer, and shows each
    run's sandbox repair success in its Diagnosis and repair block; a second --out to the same
    file is refused (exit 1, the file untouched) unless --force; an edited interval no longer
    matches the document's digest and the weekly report refuses it in one line."""
    j = journey
    doc_path = j["root"] / "decisions.json"
    line = (f"rungbench causal decisions --bench {j['bench']} {j['runs']['p2']} "
            f"{j['runs']['premature']} --out {doc_path} --cost-ceiling 1.0")
    r = rb(line)
    assert r.returncode == 0, r.stderr
    assert "expected loss a − b" in r.stdout and "question 3:" in r.stdout
    doc = json.loads(doc_path.read_text())
    d = doc["paired"]["delta"]
    assert d["high"] < 0 and doc["cost"]["ceiling"] == 1.0
    assert doc["runs"]["a"]["agent"] == "reference-p2_protocol"
    assert doc["runs"]["a"]["manifest"].startswith("sha256:")
    assert doc["cost"]["acceptable"] is True and "question 3: yes" in r.stdout
    week = ok_json(f"rungbench causal weekly-report --db {j['store']} --week 2026-10-12 "
                   f"--decisions {doc_path} --json")
    q3 = week["questions"]["decisions_improve_at_acceptable_cost"]
    assert q3["interval"] == [d["low"], d["high"]]
    assert q3["answer"] == "yes"
    text = rb(f"rungbench causal weekly-report --db {j['store']} --week 2026-10-12 "
              f"--decisions {doc_path}")
    assert text.returncode == 0
    assert "3. decisions improve at acceptable cost: **yes**" in text.stdout
    edited = {**doc, "paired": {**doc["paired"], "delta": {**d, "high": 0.5}}}
    forged = j["root"] / "forged.json"
    forged.write_text(json.dumps(edited))
    refused = rb(f"rungbench causal weekly-report --db {j['store']} --week 2026-10-12 "
                 f"--decisions {forged}")
    assert refused.returncode == 1 and "digest" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    again = rb(line)
    assert again.returncode == 1 and "--force" in again.stderr
    assert json.loads(doc_path.read_text()) == doc
    assert rb(line + " --force").returncode == 0
    a = doc["runs"]["a"]["outcomes"]
    assert (f"sandbox repair: reference-p2_protocol success {a['success_rate']:.3f}, loss "
            f"{a['mean_expected_loss']:.3f}") in " ".join(text.stdout.split())
    assert week["sandbox"]["b"]["agent"] == "reference-premature_commitment"


def test_default_cost_ceiling_says_no_to_p2s_extra_turns(journey: dict[str, Any]) -> None:
    """At the seed's default +25% ceiling, P2's extra turns (its discriminating check) raise
    dollars per incident past the ceiling: the loss is lower, and the answer is no."""
    j = journey
    doc = ok_json(f"rungbench causal decisions --bench {j['bench']} {j['runs']['p2']} "
                  f"{j['runs']['premature']} --json")
    assert doc["paired"]["delta"]["high"] < 0 and doc["cost"]["ratio"] > 1.25
    assert doc["answer"]["answer"] == "no" and "ceiling" in doc["answer"]["why"]


def test_unpriced_run_prints_no_prices(journey: dict[str, Any]) -> None:
    """An agent run without prices: the command prints no_prices and answers inconclusive."""
    j = journey
    r = rb(f"rungbench causal decisions --bench {j['bench']} {j['runs']['unpriced']} "
           f"{j['runs']['premature']}")
    assert r.returncode == 0, r.stderr
    assert "success per $ a − b no_prices" in r.stdout
    assert "question 3: inconclusive" in r.stdout and "no_prices" in r.stdout


def test_same_run_twice_is_inconclusive(journey: dict[str, Any]) -> None:
    """A run against itself: delta 0, question 3 inconclusive."""
    j = journey
    doc = ok_json(f"rungbench causal decisions --bench {j['bench']} {j['runs']['p2']} "
                  f"{j['runs']['p2']} --json")
    assert doc["paired"]["delta"]["mean"] == 0 and doc["answer"]["answer"] == "inconclusive"


def test_refusals_are_one_line(journey: dict[str, Any]) -> None:
    """A folder that is no run, and a run on another bench's cases, fail with one line naming
    the problem and no traceback."""
    j = journey
    r = rb(f"rungbench causal decisions --bench {j['bench']} {j['root']} {j['runs']['p2']}")
    assert r.returncode == 1 and "not a run directory" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    other = j["root"] / "other"
    ok_json(f"rungbench causal build --split dev --seed 6 --worlds 3 --families incident "
            f"--out {other} --json")
    r = rb(f"rungbench causal decisions --bench {other} {j['runs']['p2']} "
           f"{j['runs']['premature']}")
    assert r.returncode == 3 and "other_bench" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_weekly_report_computes_question_3_from_two_runs(journey: dict[str, Any]) -> None:
    """`--decisions-from RUN_A RUN_B --episode-bench B` answers as the written document does;
    runs over different incidents are refused in one line; a missing bench is a usage error."""
    j = journey
    week = f"rungbench causal weekly-report --db {j['store']} --week 2026-10-12"
    direct = ok_json(f"{week} --decisions-from {j['runs']['p2']} {j['runs']['premature']} "
                     f"--episode-bench {j['bench']} --json")
    doc = ok_json(f"rungbench causal decisions --bench {j['bench']} {j['runs']['p2']} "
                  f"{j['runs']['premature']} --json")
    q3 = direct["questions"]["decisions_improve_at_acceptable_cost"]
    assert q3["answer"] == doc["answer"]["answer"] == "no"
    assert q3["interval"] == doc["answer"]["interval"]
    r = rb(f"{week} --decisions-from {j['runs']['fewer']} {j['runs']['premature']} "
           f"--episode-bench {j['bench']}")
    assert r.returncode == 3 and "different_cases" in r.stderr and "only in" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = rb(f"{week} --decisions-from {j['runs']['p2']} {j['runs']['premature']}")
    assert r.returncode == 2 and "--episode-bench" in r.stderr
