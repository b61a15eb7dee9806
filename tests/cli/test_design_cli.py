"""`rungbench design ...`: audits print one JSON document; broken balance exits 1."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rungbench.cli.design import app
from rungbench.design.registry import load_design


def _invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def test_e023_audit_json() -> None:
    """`design audit e023 --json` prints one document with every check passing."""
    code, out, _ = _invoke(["audit", "e023", "--json"])
    assert code == 0, out
    doc: dict[str, Any] = json.loads(out)
    assert doc["ok"] and doc["failed"] == []
    assert doc["digest"] == load_design("e023").digest
    figures = {f["key"]: f for f in doc["figures"]}
    assert figures["cyclic_far_tail_rank_slot_count"]["ours"] == 80
    assert figures["shuffle_deranged_pairs_w10"]["seed"] == 78


def test_a105_audit_table() -> None:
    """`design audit a105` prints the seed figure beside ours and exits 0."""
    code, out, _ = _invoke(["audit", "a105"])
    assert code == 0, out
    assert "179520" in out and "4800" in out and "masked chess-token leaks" in out


def test_broken_preset_exits_1(tmp_path: Path) -> None:
    """An E023 preset whose positions break exact balance fails the audit with exit 1."""
    text = (resources.files("rungbench.designs") / "e023.toml").read_text(encoding="utf-8")
    path = tmp_path / "e023.toml"
    path.write_text(text.replace("positions = 200", "positions = 202"), encoding="utf-8")
    code, out, _ = _invoke(["audit", "e023", "--file", str(path), "--json"])
    assert code == 1
    doc = json.loads(out)
    assert not doc["ok"] and "cyclic_near_strong_rank_slot_exact" in doc["failed"]


def test_unknown_design_is_one_line_error() -> None:
    """An unknown design name exits 1 with one error line."""
    code, out, err = _invoke(["audit", "z999"])
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "z999" in err


def test_list_json() -> None:
    """`design list --json` names both presets with their digests."""
    code, out, _ = _invoke(["list", "--json"])
    assert code == 0
    names = {d["name"]: d["digest"] for d in json.loads(out)["designs"]}
    assert names["a105"] == load_design("a105").digest


def test_e020_audit_table_and_json() -> None:
    """`design audit e020` prints the ladder checks and the seed's cell figure; --json is ok."""
    code, out, _ = _invoke(["audit", "e020"])
    assert code == 0, out
    assert "oracle_lists_nest" in out and "8800" in out and "8400" in out
    code, out, _ = _invoke(["audit", "e022", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["digest"] == load_design("e022").digest


def test_broken_ladder_preset_exits_1(tmp_path: Path) -> None:
    """An E020/E021 preset whose top-5 shows one move fails the nesting check, exit 1."""
    text = (resources.files("rungbench.designs") / "e020_e021.toml").read_text(encoding="utf-8")
    path = tmp_path / "e020_e021.toml"
    path.write_text(text.replace("width = 5\n", "width = 1\n", 1), encoding="utf-8")
    code, out, _ = _invoke(["audit", "e020", "--file", str(path), "--json"])
    assert code == 1
    assert "oracle_lists_nest" in json.loads(out)["failed"]


def test_every_demo_preset_passes_its_own_audit_by_name() -> None:
    """`design audit demo_…` audits a bundled preset by its kind: the demo's E020/E021 counts
    only its bound partitions, and the demo's E023 (20 positions, a multiple of its width)
    is exactly balanced; both pass, as does the demo's A105."""
    for name, design in (("demo_e020_e021", "E020_E021"), ("demo_e023", "E023"),
                         ("demo_a105", "A105")):
        code, out, _ = _invoke(["audit", name, "--json"])
        doc = json.loads(out)
        assert code == 0 and doc["ok"], (name, doc["failed"])
        assert doc["design"] == design and doc["digest"] == load_design(name).digest


def test_the_e020_audit_states_the_seeds_cells_the_produced_and_why() -> None:
    """The audit prints the seed's 8,800, the preset's 8,400 and why no reading of the seed
    gives 8,800 (every count is a multiple of 150)."""
    code, out, _ = _invoke(["audit", "e020", "--json"])
    statement = json.loads(out)["detail"]["cells_statement"]
    assert code == 0
    assert (statement["seed"], statement["registered"], statement["produced"]) == (
        8800, 8400, 8400)
    assert "multiple of 150" in statement["explanation"]
    assert "7,200" in statement["explanation"] and "9,600" in statement["explanation"]
    code, out, _ = _invoke(["audit", "e020"])
    assert "the seed states 8,800" in " ".join(out.split())


def test_a_misspelt_key_is_refused_before_any_audit_work(tmp_path: Path) -> None:
    """A preset file with `confidense` is refused naming the key it resembles, exit 1."""
    text = (resources.files("rungbench.designs") / "e020_e021.toml").read_text(encoding="utf-8")
    path = tmp_path / "mine.toml"
    path.write_text(text.replace("confidence = 0.95", "confidense = 0.95"), encoding="utf-8")
    code, out, err = _invoke(["audit", "e020", "--file", str(path)])
    assert code == 1 and out == ""
    assert "did you mean 'confidence'" in err and "analysis.confidense" in err


def test_e023_audit_prints_the_endpoint_table_and_its_warnings() -> None:
    """`design audit e023` prints every endpoint's contrast per selector and the warning that
    WDL regret moves against the mechanism for the diffuse selector, and still exits 0."""
    code, out, _ = _invoke(["audit", "e023"])
    flat = " ".join(out.split())
    assert code == 0, out
    assert "endpoint validity, near_strong-far_tail (registered regret profile)" in flat
    assert "endpoint validity, near_strong-mixed_tail" in flat
    assert "diffuse -0.0078 ✗ 0 = -0.2382 ✓ +0.2031 ✓ -0.0795 ✗" in flat
    assert "legality, latency, tokens, cost" in flat
    assert "warning primary_endpoint_inconsistent_with_mechanism" in flat
    assert "primary endpoint wdl_regret moves against the declared mechanism" in flat


def test_e023_audit_json_carries_the_warnings_and_the_table() -> None:
    """`design audit e023 --json`: ok, a top-level warnings list naming wdl_regret and the
    diffuse selector, and the endpoint table under detail.endpoint_validity."""
    code, out, _ = _invoke(["audit", "e023", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["ok"]
    first = doc["warnings"][0]
    assert (first["code"], first["endpoint"], first["selector"]) == (
        "primary_endpoint_inconsistent_with_mechanism", "wdl_regret", "diffuse")
    table = doc["detail"]["endpoint_validity"]["table"]["near_strong-far_tail"]
    assert table["diffuse"]["wdl_regret"]["verdict"] == "against"
    assert table["sharp"]["tokens"]["contrast"] is None
