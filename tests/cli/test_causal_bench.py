"""`rungbench causal build|eval|report|audit`: thin commands, one JSON document, clear errors."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.causal.bench.scorer import score_dict
from rungbench.causal.checks import agreement
from rungbench.cli.causal_bench import register

app = typer.Typer()
register(app)


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_build_eval_report_audit_round_trip(tmp_path: Path) -> None:
    """build → eval → report → audit, each printing exactly one JSON document."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    built = _json(["build", "--split", "dev", "--worlds", "8", "--seed", "3",
                   "--out", str(bench)])
    assert built["leak_scan"]["ok"] and built["n_worlds"] == 8
    assert stat.S_IMODE((bench / "private").stat().st_mode) == 0o700
    ev = _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    assert ev["outcomes"]["correct"] + ev["outcomes"]["correct_non_id"] == ev["n"]
    rep = _json(["report", "--run", str(run)])
    assert rep["overall"]["accuracy"] == 1.0
    audit = _json(["audit", "--bench", str(bench), "--run", str(run)])
    assert audit["listing_order"]["before"]["rate"] == 1.0


def test_human_output_and_markdown(tmp_path: Path) -> None:
    """Without --json the report prints Markdown headings."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    _json(["build", "--split", "test", "--worlds", "6", "--seed", "1", "--out", str(bench)])
    _json(["eval", "--bench", str(bench), "--agent", "reference:rung1", "--out", str(run)])
    result = CliRunner().invoke(app, ["report", "--run", str(run)])
    assert result.exit_code == 0
    assert "## Identification table" in result.stdout


def test_the_build_line_counts_the_episode_cases(tmp_path: Path) -> None:
    """The human build summary adds the records/2 episode cases and their worlds to the
    records/1 count (it printed only the latter, under the total the table showed)."""
    result = CliRunner().invoke(app, ["build", "--split", "dev", "--worlds", "2", "--seed", "3",
                                      "--families", "incident", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.stdout
    doc = json.loads((tmp_path / "b" / "public" / "manifest.json").read_text())
    v2 = doc["records_v2"]
    assert (f"{doc['n_cases']} cases + {v2['n_cases']} episode cases over {v2['n_worlds']} "
            "worlds (records/2)") in " ".join(result.stdout.split())


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    """A missing bench is exit 1 naming it; an unknown split is a refusal (exit 3)."""
    args = ["eval", "--bench", str(tmp_path / "none"), "--agent", "reference:oracle",
            "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{tmp_path / 'none'}: not a directory" in "".join(result.stderr.split("\n"))
    doc = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert doc["error"] == "input_error" and str(tmp_path / "none") in doc["message"]
    refused = CliRunner().invoke(app, ["build", "--split", "final", "--seed", "1",
                                       "--out", str(tmp_path / "b"), "--json"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["reasons"][0]["code"] == "bad_request"


def test_scorer_agreement_prints_one_document() -> None:
    """`scorer-agreement --json` prints one document with both comparisons; exit 0 iff pass."""
    result = CliRunner().invoke(app, ["scorer-agreement", "--n", "120", "--json"])
    doc = json.loads(result.stdout)
    assert {"hand", "generated", "pass", "thresholds"} <= set(doc)
    assert doc["generated"]["n"] == 120
    assert result.exit_code == (0 if doc["pass"] else 1)


def test_score_names_bad_lines(tmp_path: Path) -> None:
    """`score` on a file with a malformed line counts it invalid and names its line number."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    _json(["build", "--split", "dev", "--worlds", "4", "--seed", "2", "--out", str(bench)])
    _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    lines = (run / "responses.jsonl").read_text().splitlines()
    responses = tmp_path / "mine.jsonl"
    responses.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    doc = _json(["score", "--bench", str(bench), "--responses", str(responses),
                 "--out", str(tmp_path / "scored")])
    assert doc["outcomes"]["invalid"] == 0 and len(doc["invalid_lines"]) == 1
    assert doc["invalid_lines"][0]["line"] == 2
    assert "malformed JSON" in doc["invalid_lines"][0]["error"]
    human = CliRunner().invoke(app, ["score", "--bench", str(bench), "--responses",
                                     str(responses), "--out", str(tmp_path / "s2")])
    assert human.exit_code == 0 and "invalid line 2" in human.stdout


def _small_bench(tmp_path: Path) -> tuple[Path, list[str]]:
    """A 4-world dev bench and the oracle agent's response lines for it."""
    bench, run = tmp_path / "bench", tmp_path / "oracle_run"
    _json(["build", "--split", "dev", "--worlds", "4", "--seed", "2", "--out", str(bench)])
    _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    return bench, (run / "responses.jsonl").read_text().splitlines()


def test_score_counts_every_kind_of_bad_line(tmp_path: Path) -> None:
    """`score`: each bad line is invalid, named by its line; the rest is scored; exit 0.

    The bad lines name no new bench case (they repeat the first case, name an unknown id
    or none), so every bench case keeps its first answer and n is the bench's cases.
    """
    bench, lines = _small_bench(tmp_path)
    first = json.loads(lines[0])
    bad = {
        3: "{broken",
        5: json.dumps({k: v for k, v in first.items() if k != "arm"}),
        7: json.dumps({**first, "case_id": "w-unknown"}),
        9: json.dumps({**first, "value": -0.25}),
        11: json.dumps({**first, "status": "abstain", "bounds": [0.9, 0.1]}),
    }
    out = list(lines)
    for n in sorted(bad):
        out.insert(n - 1, bad[n])
    responses = tmp_path / "mine.jsonl"
    responses.write_text("\n".join(out) + "\n")
    doc = _json(["score", "--bench", str(bench), "--responses", str(responses),
                 "--out", str(tmp_path / "scored")])
    assert doc["n"] == len(lines) and doc["lines"] == len(out)
    assert doc["outcomes"]["invalid"] == 0 and len(doc["invalid_lines"]) == len(bad)
    assert doc["outcomes"]["correct"] + doc["outcomes"]["correct_non_id"] == len(lines)
    assert doc["missing"] == 0
    named = {b["line"]: b["error"] for b in doc["invalid_lines"]}
    assert sorted(named) == sorted(bad)
    for n, needle in ((3, "malformed JSON"), (5, "'arm'"), (7, "unknown case id 'w-unknown'"),
                      (9, "value -0.25 outside [0, 1]"), (11, "bounds [0.9, 0.1]")):
        assert f"mine.jsonl:{n}: " in named[n] and needle in named[n], named[n]
    human = CliRunner().invoke(app, ["score", "--bench", str(bench), "--responses",
                                     str(responses), "--out", str(tmp_path / "s2")])
    assert human.exit_code == 0
    for n in bad:
        assert f"invalid line {n}:" in human.stdout


def test_eval_and_score_input_errors_exit_1(tmp_path: Path) -> None:
    """Unknown agent, corrupted case or oracle file, unreadable responses: one line, exit 1."""
    bench, lines = _small_bench(tmp_path)
    unknown = CliRunner().invoke(app, ["eval", "--bench", str(bench), "--agent",
                                       "reference:psychic", "--out", str(tmp_path / "r")])
    assert unknown.exit_code == 1 and unknown.stdout == ""
    message = " ".join(unknown.stderr.split())
    assert "unknown agent 'reference:psychic'" in message and "reference:oracle" in message
    missing = CliRunner().invoke(app, ["score", "--bench", str(bench), "--responses",
                                       str(tmp_path / "absent.jsonl"), "--out",
                                       str(tmp_path / "r2"), "--json"])
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"] == "input_error"
    for side, name, call in (("public", "cases.jsonl", "eval"), ("private", "oracle.jsonl",
                                                                 "score")):
        broken = tmp_path / f"broken_{side}"
        shutil.copytree(bench, broken)
        path = broken / side / name
        rows = path.read_text().splitlines()
        path.write_text("\n".join([rows[0], '{"case_id": 3}', *rows[1:]]) + "\n")
        responses = tmp_path / "responses.jsonl"
        responses.write_text("\n".join(lines) + "\n")
        args = (["eval", "--agent", "reference:oracle"] if call == "eval"
                else ["score", "--responses", str(responses)])
        result = CliRunner().invoke(app, [*args, "--bench", str(broken), "--out",
                                          str(tmp_path / f"run_{side}"), "--json"])
        assert result.exit_code == 1, result.output
        doc = json.loads(result.stdout)
        assert doc["error"] == "integrity_error" and str(path) in doc["message"]


def test_scorer_agreement_passes_and_prints_disagreements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real scorers agree (exit 0); a skewed scorer 2's disagreements print both verdicts."""
    result = CliRunner().invoke(app, ["scorer-agreement", "--n", "200", "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["pass"]
    assert doc["hand"]["rate"] == 1.0 and doc["generated"]["rate"] >= 0.99

    def skewed() -> Any:
        def score(o: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
            v = score_dict(o, r)
            return {**v, "outcome": "wrong"} if v["outcome"] == "abstain" else v
        return score

    monkeypatch.setattr(agreement, "_second_scorer", skewed)
    human = CliRunner().invoke(app, ["scorer-agreement", "--n", "50"])
    assert human.exit_code == 1
    assert "agreement FAIL" in human.stdout
    assert "'outcome': 'abstain'" in human.stdout and "'outcome': 'wrong'" in human.stdout
    assert "first=" in human.stdout and "second=" in human.stdout


def test_build_with_twins_adds_twin_worlds_and_the_report_counts_clusters(
        tmp_path: Path) -> None:
    """--twins adds twin cases (more public worlds than generated ones); the oracle's report
    counts only the generated worlds (twins share their parent's cluster) and lists the twin
    labels, at zero."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    plain = _json(["build", "--split", "dev", "--worlds", "8", "--seed", "3",
                   "--out", str(tmp_path / "plain")])
    built = _json(["build", "--split", "dev", "--worlds", "8", "--seed", "3", "--twins",
                   "--out", str(bench)])
    assert built["leak_scan"]["ok"] and built["n_worlds"] == 8
    assert built["n_cases"] > plain["n_cases"] and len(built["world_ids"]) > 8
    _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    rep = _json(["report", "--run", str(run)])
    assert rep["overall"]["n_worlds"] == 8 and rep["overall"]["accuracy"] == 1.0
    assert rep["failure_labels"]["correlation_as_causation"] == 0


def test_paraphrase_journey_build_eval_report(tmp_path: Path) -> None:
    """build --paraphrases 2 --skin-swap --renaming → eval (oracle, and the agent bound to
    the original wording) → report: the build says how many mutated cases of each kind it
    added and its leak scan is clean; the report's transfer table has a paraphrase row per
    rung, a zero gap for the oracle and a negative one (interval below zero) for the
    wording-bound agent, which transfers to the skin swap and renaming (gap 0); a bench
    built without them says "not built"; --paraphrases 4 is a usage error (exit 2)."""
    bench = tmp_path / "bench"
    built = _json(["build", "--split", "dev", "--worlds", "10", "--seed", "3",
                   "--paraphrases", "2", "--skin-swap", "--renaming", "--out", str(bench)])
    per_kind = built["n_cases"] // 6
    assert built["leak_scan"]["ok"]
    assert built["mutations"]["cases"] == {"paraphrase": 2 * per_kind, "renaming": per_kind,
                                           "skin_swap": per_kind}
    for agent in ("oracle", "original_wording"):
        _json(["eval", "--bench", str(bench), "--agent", f"reference:{agent}",
               "--out", str(tmp_path / agent)])
    oracle = _json(["report", "--run", str(tmp_path / "oracle")])["transfer"]
    bound = _json(["report", "--run", str(tmp_path / "original_wording")])["transfer"]
    assert sorted(oracle) == sorted(bound) == ["1", "2", "3"]
    for rung in bound:
        assert oracle[rung]["paraphrase"]["gap"] == 0.0
        assert bound[rung]["paraphrase"]["ci95_cluster_bootstrap"][1] < 0
        assert bound[rung]["skin_swap"]["gap"] == bound[rung]["renaming"]["gap"] == 0.0
    human = CliRunner().invoke(app, ["report", "--run", str(tmp_path / "original_wording")],
                               terminal_width=200)
    assert human.exit_code == 0
    assert "| 2 (intervention) | paraphrase |" in human.stdout
    assert "| 2 (intervention) | renaming | " in human.stdout
    _json(["build", "--split", "dev", "--worlds", "4", "--seed", "3", "--paraphrases", "1",
           "--out", str(tmp_path / "plain")])
    _json(["eval", "--bench", str(tmp_path / "plain"), "--agent", "reference:oracle",
           "--out", str(tmp_path / "plain_run")])
    plain = CliRunner().invoke(app, ["report", "--run", str(tmp_path / "plain_run")],
                               terminal_width=200)
    assert "| 2 (intervention) | renaming | not built |" in plain.stdout
    refused = CliRunner().invoke(app, ["build", "--split", "dev", "--seed", "3",
                                       "--paraphrases", "4", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and "[0, 3]" in refused.output
    assert not (tmp_path / "x").exists()
