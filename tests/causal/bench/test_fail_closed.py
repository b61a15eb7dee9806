"""Fail closed (issue 11 #2, #3, #7, #8, #12, #17, #20–#22): verified reads, atomic builds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.causal.bench import build as build_module
from rungbench.causal.bench.build import MAX_WORLDS, build_split
from rungbench.causal.bench.report import accuracy, build_report, to_markdown
from rungbench.causal.bench.requests import causal_schedule
from rungbench.cli.causal_bench import register
from rungbench.errors import Refusal
from rungbench.evidence.sealed import write_seal

app = typer.Typer()
register(app)


def _cli(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def _ok(args: list[str]) -> dict[str, Any]:
    result = _cli([*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _one_line(result: Any) -> str:
    """The stderr of a failed command, asserted to be one logical line (no traceback)."""
    assert "Traceback" not in result.output
    text: str = result.stderr
    assert text.strip() and "\n  File " not in text
    return " ".join(text.split())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 3-world dev bench and the oracle agent's scored run on it."""
    root = tmp_path_factory.mktemp("fail_closed")
    bench, run = root / "bench", root / "run"
    _ok(["build", "--split", "dev", "--worlds", "3", "--seed", "4", "--out", str(bench)])
    _ok(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    return bench, run


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _edit_line(path: Path, index: int, change: dict[str, Any]) -> None:
    """Rewrite JSONL record ``index`` of ``path`` with ``change`` applied."""
    os.chmod(path, 0o600)
    lines = path.read_text().splitlines()
    lines[index] = json.dumps({**json.loads(lines[index]), **change})
    path.write_text("\n".join(lines) + "\n")


# --- item 2: tampering is detected, naming the file ---------------------------------------

def test_edited_oracle_value_makes_score_exit_1_naming_the_file(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """One changed reference value in private/oracle.jsonl: `score` exits 1 naming that file."""
    bench = _copy(built[0], tmp_path / "bench")
    oracle = bench / "private" / "oracle.jsonl"
    rows = [json.loads(t) for t in oracle.read_text().splitlines()]
    i = next(k for k, r in enumerate(rows) if r["value"] is not None)
    _edit_line(oracle, i, {"value": round(1.0 - rows[i]["value"], 6)})
    result = _cli(["score", "--bench", str(bench), "--responses",
                   str(built[1] / "responses.jsonl"), "--out", str(tmp_path / "s"), "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["error"] == "integrity_error" and str(oracle) in doc["message"]
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(("side", "name", "command"), [
    ("public", "cases.jsonl", "eval"), ("public", "cases.jsonl", "audit"),
    ("private", "worlds.jsonl", "eval"), ("private", "worlds.jsonl", "audit"),
])
def test_edited_cases_or_worlds_fail_eval_and_audit(
    built: tuple[Path, Path], tmp_path: Path, side: str, name: str, command: str
) -> None:
    """An edited cases.jsonl or worlds.jsonl makes `eval` and `audit` exit 1 naming the file."""
    bench = _copy(built[0], tmp_path / "bench")
    path = bench / side / name
    _edit_line(path, 0, {"world_id": "wforged"})
    args = (["eval", "--agent", "reference:oracle", "--out", str(tmp_path / "r")]
            if command == "eval" else ["audit"])
    result = _cli([*args, "--bench", str(bench), "--json"])
    assert result.exit_code == 1
    assert str(path) in json.loads(result.stdout)["message"]


def test_resealed_tampering_is_caught_by_the_manifest_digests(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """An oracle edit with a recomputed seal still fails: the private manifest's digest differs."""
    bench = _copy(built[0], tmp_path / "bench")
    oracle = bench / "private" / "oracle.jsonl"
    _edit_line(oracle, 0, {"tol": 0.5})
    write_seal(bench, kind="rungbench.causal.bench")
    result = _cli(["audit", "--bench", str(bench), "--json"])
    assert result.exit_code == 1
    message = json.loads(result.stdout)["message"]
    assert str(oracle) in message and "manifest.json" in message


# --- item 3: a bench is visible only complete ---------------------------------------------

_KILLER = """
import os, pathlib, signal, sys
from rungbench.causal.bench import build
point, out = sys.argv[1], sys.argv[2]
real_write, real_rename = build._write, pathlib.Path.rename
def write(path, data, mode=0o644):
    digest = real_write(path, data, mode)
    if path.name == point:
        os.kill(os.getpid(), signal.SIGKILL)
    return digest
def rename(self, target):
    if point == "rename" and pathlib.Path(target).name == "bench":
        os.kill(os.getpid(), signal.SIGKILL)
    return real_rename(self, target)
build._write, pathlib.Path.rename = write, rename
from rungbench.cli import main
sys.argv = ["rungbench", "causal", "build", "--split", "dev", "--worlds", "3", "--seed", "4",
            "--out", out, "--json"]
main()
"""


@pytest.mark.parametrize("point", ["cases.jsonl", "manifest.json", "oracle.jsonl",
                                   "worlds.jsonl", "rename"])
def test_sigkilled_build_leaves_no_bench_and_readers_refuse_the_rest(
    tmp_path: Path, point: str
) -> None:
    """SIGKILL of `causal build` at any point leaves nothing at --out; a half-written
    temporary directory it leaves is refused by eval, score, audit and the run schedule."""
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, "-c", _KILLER, point, str(out)],
                          capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []
    temps = sorted(tmp_path.glob(".bench.tmp-*"))
    assert len(temps) == 1
    for temp in temps:
        if point == "rename":
            continue  # complete and sealed, but never made visible at --out
        for args in (["eval", "--agent", "reference:oracle", "--out", str(tmp_path / "r")],
                     ["score", "--responses", str(temp), "--out", str(tmp_path / "r")],
                     ["audit"]):
            result = _cli([*args, "--bench", str(temp)])
            assert result.exit_code == 1
            assert f"{temp / 'SEAL.json'}: missing" in _one_line(result)
        with pytest.raises(Exception, match=r"SEAL\.json: missing"):
            causal_schedule(temp)


def test_build_that_fails_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build raising after oracle.jsonl is written leaves neither --out nor its temp dir."""
    real = build_module._write

    def failing(path: Path, data: bytes, mode: int = 0o644) -> str:
        if path.name == "worlds.jsonl":
            raise OSError(28, "No space left on device", str(path))
        return real(path, data, mode)

    monkeypatch.setattr(build_module, "_write", failing)
    with pytest.raises(OSError, match="No space left"):
        build_split("dev", 2, 4, tmp_path / "bench")
    assert list(tmp_path.iterdir()) == []


def test_unsealed_bench_layout_is_refused(built: tuple[Path, Path], tmp_path: Path) -> None:
    """A bench directory without SEAL.json (an unfinished one) is refused by every reader."""
    bench = _copy(built[0], tmp_path / "bench")
    (bench / "SEAL.json").unlink()
    result = _cli(["eval", "--bench", str(bench), "--agent", "reference:oracle",
                   "--out", str(tmp_path / "r"), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == "integrity_error"
    with pytest.raises(Exception, match=r"SEAL\.json: missing"):
        causal_schedule(bench)


# --- item 7: nothing is replaced without --force ------------------------------------------

def test_build_refuses_an_existing_bench_without_force(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """A second build to the same --out refuses `exists` (exit 3), leaving it; --force replaces."""
    bench = _copy(built[0], tmp_path / "bench")
    before = (bench / "private" / "oracle.jsonl").read_bytes()
    args = ["build", "--split", "dev", "--worlds", "2", "--seed", "9", "--out", str(bench)]
    refused = _cli([*args, "--json"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["reasons"][0]["code"] == "exists"
    assert (bench / "private" / "oracle.jsonl").read_bytes() == before
    assert _ok([*args, "--force"])["n_worlds"] == 2
    assert (bench / "private" / "oracle.jsonl").read_bytes() != before


@pytest.mark.parametrize("command", ["eval", "score"])
def test_eval_and_score_refuse_an_existing_run_without_force(
    built: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    """`eval`/`score` onto an existing run refuse `exists` (exit 3) unless --force."""
    bench, run = built
    out = _copy(run, tmp_path / "run")
    args = (["eval", "--agent", "reference:rung1"] if command == "eval"
            else ["score", "--responses", str(run / "responses.jsonl")])
    refused = _cli([*args, "--bench", str(bench), "--out", str(out), "--json"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["reasons"][0]["code"] == "exists"
    assert _ok([*args, "--bench", str(bench), "--out", str(out), "--force"])["n"] > 0


# --- item 8: per-case verdicts are private ------------------------------------------------

def _readable_outside_private(run: Path) -> dict[str, str]:
    """Files another user (an agent-side process) could read: outside private/, mode o+r."""
    return {p.relative_to(run).as_posix(): p.read_text() for p in run.rglob("*")
            if p.is_file() and "private" not in p.relative_to(run).parts
            and p.stat().st_mode & 0o004}


def test_verdicts_live_under_private_with_owner_only_modes(built: tuple[Path, Path]) -> None:
    """Per-case verdicts sit in RUN/private (0700) as 0600 files; nothing else holds them,
    and the seal listing their digests is owner-only too."""
    run = built[1]
    assert stat.S_IMODE((run / "private").stat().st_mode) == 0o700
    for name in ("private/verdicts.jsonl", "private/score.json", "SEAL.json"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600, name
    public = _readable_outside_private(run)
    assert "verdicts.jsonl" not in public
    for name, text in public.items():
        assert '"identifiable"' not in text and '"abs_error"' not in text, name


def test_a_zero_probe_recovers_no_reference_value(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """A probe answering 0.0 everywhere finds no reference value in any agent-readable file."""
    bench, run = built
    lines = [json.loads(t) for t in (run / "responses.jsonl").read_text().splitlines()]
    probe = tmp_path / "probe.jsonl"
    probe.write_text("".join(json.dumps({"case_id": r["case_id"], "arm": "probe",
                                         "status": "answer", "value": 0.0}) + "\n"
                             for r in lines))
    out = tmp_path / "probe_run"
    _ok(["score", "--bench", str(bench), "--responses", str(probe), "--out", str(out)])
    oracle = [json.loads(t) for t in (bench / "private" / "oracle.jsonl").read_text()
              .splitlines()]
    values = {f"{o['value']}" for o in oracle if o["value"] not in (None, 0.0, 1.0)}
    assert values
    summary = json.loads((out / "summary.json").read_text())
    assert isinstance(summary["outcomes"], dict) and isinstance(summary["invalid_lines"], int)
    for name, text in _readable_outside_private(out).items():
        if name == "responses.jsonl":
            continue
        leaked = [v for v in values if v in text]
        assert not leaked, (name, leaked[:3])


# --- item 12: foreign and repeated case ids -----------------------------------------------

def test_responses_for_another_bench_are_refused(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """Responses made for another bench refuse with `foreign_cases` (exit 3), nothing written."""
    other = tmp_path / "other"
    _ok(["build", "--split", "dev", "--worlds", "2", "--seed", "99", "--out", str(other)])
    result = _cli(["score", "--bench", str(other), "--responses",
                   str(built[1] / "responses.jsonl"), "--out", str(tmp_path / "s"), "--json"])
    assert result.exit_code == 3
    reason = json.loads(result.stdout)["reasons"][0]
    assert reason["code"] == "foreign_cases" and reason["data"]["foreign_lines"] > 0
    assert not (tmp_path / "s").exists()


def test_a_repeated_case_id_is_an_invalid_line_and_the_denominator_is_the_bench(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """One correct answer repeated 5 times: 1 right, 4 invalid lines, accuracy 1/n_cases."""
    bench, run = built
    first = (run / "responses.jsonl").read_text().splitlines()[0]
    mine = tmp_path / "mine.jsonl"
    mine.write_text((first + "\n") * 5)
    doc = _ok(["score", "--bench", str(bench), "--responses", str(mine), "--out",
               str(tmp_path / "s")])
    right = doc["outcomes"]["correct"] + doc["outcomes"]["correct_non_id"]
    assert right == 1 and len(doc["invalid_lines"]) == 4
    assert [b["line"] for b in doc["invalid_lines"]] == [2, 3, 4, 5]
    assert all("duplicate case id" in b["error"] for b in doc["invalid_lines"])
    n_cases = len((bench / "public" / "cases.jsonl").read_text().splitlines())
    assert doc["n"] == n_cases and doc["missing"] == n_cases - 1
    report = _ok(["report", "--run", str(tmp_path / "s")])
    assert report["overall"]["k"] == 1 and report["overall"]["n"] == n_cases


# --- item 17: registered sizes ------------------------------------------------------------

def test_worlds_past_the_registered_maximum_is_a_usage_error(tmp_path: Path) -> None:
    """`build --worlds 99999999999` is exit 2 naming --worlds and its maximum; nothing written."""
    result = _cli(["build", "--split", "dev", "--seed", "1", "--worlds", "99999999999",
                   "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "--worlds" in result.output and str(MAX_WORLDS) in result.output
    assert not (tmp_path / "b").exists()


def test_build_split_refuses_too_many_worlds_before_drawing_any(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library refuses n_worlds past MAX_WORLDS before drawing a single world."""
    def never(*_: object, **__: object) -> None:
        raise AssertionError("a world was drawn")

    monkeypatch.setattr(build_module, "world_plan", never)
    with pytest.raises(Refusal) as caught:
        build_split("dev", MAX_WORLDS + 1, 1, tmp_path / "b")
    assert caught.value.reasons[0].data["max_worlds"] == MAX_WORLDS


# --- items 20 and 21: one line, never a traceback -----------------------------------------

def test_report_on_a_folder_without_verdicts_is_one_line(tmp_path: Path) -> None:
    """`report --run` on a folder without verdicts: exit 1, one line / one JSON document."""
    (tmp_path / "run").mkdir()
    human = _cli(["report", "--run", str(tmp_path / "run")])
    assert human.exit_code == 1 and "SEAL.json" in _one_line(human)
    as_json = _cli(["report", "--run", str(tmp_path / "run"), "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"] == "integrity_error"


def test_bad_paths_and_options_are_one_line(built: tuple[Path, Path], tmp_path: Path) -> None:
    """--out FILE, a nonexistent --run or --bench: exit 1 naming it; --n 0: exit 2 naming it."""
    bench, _ = built
    file = tmp_path / "file"
    file.write_text("x")
    for args in (["build", "--split", "dev", "--seed", "1", "--worlds", "1", "--out", str(file)],
                 ["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out",
                  str(file)],
                 ["report", "--run", "/nonexistent"],
                 ["audit", "--bench", "/nonexistent"]):
        result = _cli(args)
        assert result.exit_code == 1, (args, result.output)
        line = _one_line(result)
        assert (str(file) if str(file) in args else "/nonexistent") in line
    assert file.read_text() == "x"
    usage = _cli(["scorer-agreement", "--n", "0"])
    assert usage.exit_code == 2 and "--n" in usage.output


# --- item 22: cluster-bootstrap intervals beside Clopper–Pearson --------------------------

def test_accuracy_reports_a_cluster_interval_that_widens_with_clustering() -> None:
    """Ten worlds, all right or all wrong: the world-cluster CI is far wider than per-case CP."""
    rows = [{"world_id": f"w{w}", "verdict": {"outcome": "correct" if w < 5 else "wrong"}}
            for w in range(10) for _ in range(20)]
    a = accuracy(rows)
    lo, hi = a["ci95"]
    c_lo, c_hi = a["ci95_cluster_bootstrap"]
    assert a["n_worlds"] == 10 and a["accuracy"] == 0.5
    assert c_hi - c_lo > 2 * (hi - lo)


def test_report_names_both_intervals_in_json_and_table(built: tuple[Path, Path]) -> None:
    """The report's by-rung rows carry both intervals and say which is which."""
    report = build_report(built[1])
    assert set(report["intervals"]) == {"ci95", "ci95_cluster_bootstrap"}
    assert "Clopper" in report["intervals"]["ci95"]
    assert "worlds" in report["intervals"]["ci95_cluster_bootstrap"]
    for row in report["by_rung"].values():
        assert len(row["ci95_cluster_bootstrap"]) == 2
    text = to_markdown(report)
    assert "95% CI per case (Clopper–Pearson)" in text
    assert "95% CI over worlds (cluster bootstrap)" in text
