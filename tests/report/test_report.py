"""The static report (rungbench.report): sections, digests, escaping, fail-closed reading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.report.report_fixtures import HOSTILE, small_demo_dir

from rungbench.chess.studies.falsifiers import FALSIFIERS
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import loads_canonical
from rungbench.evidence.store import ObjectStore
from rungbench.report import render_report
from rungbench.report.inputs import INDEX, OBJECTS

TABLES = ("inputs", "a104", "claim-gates", "coverage-selection", "e023", "falsifiers",
          "rung-accuracy", "mutation-transfer", "identification-causal:reference:rung1",
          "controls-fixed-strict", "objects")
"""Tables the small fixture's page must hold."""


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    """The small demo-layout folder."""
    return small_demo_dir(tmp_path / "demo")


def test_page_holds_every_present_section_and_names_the_absent(demo_dir: Path) -> None:
    """Present inputs give their tables; the study's missing inputs are said to be absent."""
    summary = render_report(demo_dir)
    html = Path(summary["report"]).read_text(encoding="utf-8")
    for table_id in TABLES:
        assert f'<table id="{table_id}">' in html, table_id
    assert summary["sections"]["labels"] == "absent"
    assert summary["sections"]["hazards"] == "absent"
    assert summary["sections"]["agents"] == "absent"  # no study run names its agent here
    assert summary["sections"]["a105"] == "present"
    assert summary["sections"]["ablations"] == "absent"  # the fixture runs no ablation matrix
    assert html.count("Not in this study") == 4
    assert "<script" not in html.replace("&lt;script", "")
    assert HOSTILE not in html and "planted-&lt;script&gt;" in html


def test_falsifier_table_has_a_row_for_every_seed_bullet(demo_dir: Path) -> None:
    """Every seed-001 falsifier appears in the falsifier table: with its verdict where an
    analysis computed it, as "not run" (naming the design) where none did (no E022 here);
    the E023 section states the endpoint-validity warning before its primary contrasts."""
    summary = render_report(demo_dir)
    html = Path(summary["report"]).read_text(encoding="utf-8")
    body = html.split('<table id="falsifiers">', 1)[1].split("</table>", 1)[0]
    rows = body.split("<tr>")[2:]
    for name, (seed_text, _) in FALSIFIERS.items():
        mine = [r for r in rows if r.startswith(f"<td>{name}</td>")]
        assert mine, name
        assert all(seed_text.replace("\u201c", "&#x201c;")[:30] in r or seed_text[:30] in r
                   for r in mine)
    not_run = [r for r in rows if "not run" in r]
    assert len(not_run) == 1 and "<td>transition_search</td>" in not_run[0]
    assert "no E022 analysis in this report" in not_run[0]
    assert summary["sections"]["falsifiers"] == "present"
    e023 = html.split('<section id="e023">', 1)[1].split("</section>", 1)[0]
    assert '<p class="warning"><strong>primary_endpoint_inconsistent_with_mechanism' in e023


def test_every_digest_link_has_its_inventory_entry(demo_dir: Path) -> None:
    """Each #obj-… link points at an inventory anchor, and each object is linked."""
    html = Path(render_report(demo_dir)["report"]).read_text(encoding="utf-8")
    links = set(re.findall(r'href="#obj-([0-9a-f]{64})"', html))
    anchors = set(re.findall(r'id="obj-([0-9a-f]{64})"', html))
    assert links and links <= anchors
    index = loads_canonical((demo_dir / INDEX).read_bytes())
    assert {d.removeprefix("sha256:") for d in index["objects"].values()} <= links


def test_same_inputs_give_the_same_bytes(demo_dir: Path, tmp_path: Path) -> None:
    """Two renders of the same inputs (to two folders) are byte-identical."""
    first = render_report(demo_dir)
    second = render_report(demo_dir, out=tmp_path / "elsewhere")
    assert first["digest"] == second["digest"]
    assert Path(first["report"]).read_bytes() == Path(second["report"]).read_bytes()


def test_a_changed_object_refuses_and_writes_nothing(demo_dir: Path) -> None:
    """Flipping a byte of a stored input raises IntegrityError; no page appears."""
    index = loads_canonical((demo_dir / INDEX).read_bytes())
    hex_ = index["objects"]["instrument"].removeprefix("sha256:")
    path = ObjectStore(demo_dir / OBJECTS).path_for(f"sha256:{hex_}")
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        render_report(demo_dir)
    assert not (demo_dir / "report" / "index.html").exists()


def test_an_unknown_input_kind_refuses(demo_dir: Path) -> None:
    """An index naming an input kind the report does not know is bad input, named."""
    text = (demo_dir / INDEX).read_text().replace('"instrument"', '"mystery"')
    (demo_dir / INDEX).write_text(text)
    with pytest.raises(InputError, match="mystery"):
        render_report(demo_dir)


def test_a_folder_with_no_input_refuses_and_writes_nothing(tmp_path: Path) -> None:
    """An empty folder is not a study: InputError naming it, and no report folder appears."""
    with pytest.raises(InputError, match="no report input"):
        render_report(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_sealed_run_gets_its_report_beside_it(tmp_path: Path) -> None:
    """A scored causal run is sealed: its page goes to RUN.report/, the run still verifies."""
    from rungbench.causal.bench.build import build_split
    from rungbench.causal.bench.evaluate import evaluate
    from rungbench.causal.bench.verified import open_run

    build_split("dev", 2, 5, tmp_path / "bench")
    evaluate(tmp_path / "bench", "reference:rung1", tmp_path / "run")
    summary = render_report(tmp_path / "run")
    assert summary["report"] == str(tmp_path / "run.report" / "index.html")
    assert summary["sections"]["rungs"] == summary["sections"]["identification"] == "present"
    assert summary["sections"]["failure_labels"] == "present"
    page = (tmp_path / "run.report" / "index.html").read_text()
    table = page.split('id="failure-labels"')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 22 + 2  # header, the seed's 22, the project's two
    assert "confounding_neglect" in table and "mechanism_fabrication" in table
    open_run(tmp_path / "run")


def test_the_transfer_table_shows_the_paraphrase_gap_and_what_was_not_built(
        tmp_path: Path) -> None:
    """A run on a paraphrase bench: the page's transfer table has five rows per rung (every
    mutation), the skin swap and renaming rows say "not built" with no accuracy, and the
    wording-bound agent's paraphrase rows show accuracy 0 and gap −1."""
    from rungbench.causal.bench.build import build_split
    from rungbench.causal.bench.evaluate import evaluate

    build_split("dev", 4, 5, tmp_path / "bench", paraphrases=1)
    evaluate(tmp_path / "bench", "reference:original_wording", tmp_path / "run")
    summary = render_report(tmp_path / "run")
    assert summary["sections"]["transfer"] == "present"
    page = Path(summary["report"]).read_text()
    table = page.split('id="mutation-transfer"')[1].split("</table>")[0]
    rows = table.split("<tr>")[2:]
    assert len(rows) == 3 * 5
    for rung in ("1", "2", "3"):
        mine = [r for r in rows if f"<td>{rung}</td>" in r]
        assert [re.findall(r"<td>(original|skin_swap|nonsense_skin|renaming|paraphrase)</td>",
                           r) for r in mine] == [["original"], ["skin_swap"], ["nonsense_skin"],
                                                 ["renaming"], ["paraphrase"]]
        assert all("not built" in r for r in (mine[1], mine[3]))
        assert "not built" not in mine[4] and "0.000" in mine[4] and "-1.000" in mine[4]


def _flow_section(engine: dict[str, object] | None, tmp_path: Path) -> str:
    from rungbench.report.inputs import Inputs, Source
    from rungbench.report.sections import label_flow

    flow: dict[str, object] = {"planned_positions": 4, "planned_passes": 8, "labelled": 3,
                               "excluded": 1, "labels": {"tactical": 3},
                               "exclusions": {"class_changed": 1}}
    if engine is not None:
        flow["engine"] = engine
    source = Source("label_flow", "sha256:" + "a" * 64, "flow_report.json", "test", flow)
    return label_flow(Inputs(root=tmp_path, flow=source))


def test_label_section_names_the_engine_and_flags_an_unregistered_one(tmp_path: Path) -> None:
    """The label section names the stage's engine; when it is not seed 002's registered
    Stockfish 18 it says so above and beside every label table."""
    engine = {"name": "Stockfish 18 WASM", "build": "stockfish-18-wasm",
              "package": "npm:stockfish", "version": "18.0.8",
              "network": ["nn-c288c895ea92.nnue"], "sha256": "sha256:" + "b" * 64,
              "registered_build": "stockfish-18-wasm", "is_registered": True}
    registered = _flow_section(engine, tmp_path)
    assert "Labelled by Stockfish 18 WASM" in registered and "registered engine" in registered
    assert "<caption>" not in registered and "not</strong>" not in registered
    other = _flow_section({**engine, "name": "Stockfish 15.1", "build": "stockfish-15-debian",
                           "is_registered": False}, tmp_path)
    assert "<strong>not</strong> seed 002" in other
    assert other.count("<caption>Not the registered engine: labelled by Stockfish 15.1") == 3
    unknown = _flow_section(None, tmp_path)
    assert "does not name its engine" in unknown and unknown.count("<caption>") == 3
