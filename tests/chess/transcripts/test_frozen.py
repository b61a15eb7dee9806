"""The frozen multi-run corpus: one changed byte anywhere refuses everything, naming the file,
whatever game-level eligibility would have made of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.frozen import MANIFEST_NAME, freeze, verify_frozen
from rungbench.errors import InputError, Refusal
from rungbench.evidence.canonical import canonical_bytes
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
CEREBRAS = "gpt-oss-120b-low_2025-08-08-19-10-17"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of the bundled frozen corpus."""
    out = tmp_path / "llm_chess"
    shutil.copytree(DATA, out)
    return out


def test_bundled_manifest_lists_every_run_file() -> None:
    """The committed manifest verifies and names the 25 bundled run folders."""
    runs = verify_frozen(DATA)
    assert [r.name for r in runs] == sorted(p.name for p in DATA.iterdir() if p.is_dir())
    assert len(runs) == 25


def test_flipped_byte_in_a_run_file_refuses_the_whole_corpus(corpus: Path) -> None:
    """One bit flipped in the August run's output.txt: the census of all 25 runs is
    refused (digest_mismatch naming the file), not just that game excluded."""
    path = corpus / "gpt-oss-20b-low_2025-08-12-15-06-46" / "output.txt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(Refusal) as info:
        census_path(corpus)
    assert list(info.value.codes) == ["digest_mismatch"] and str(path) in str(info.value)


def test_a_crashed_games_file_changed_still_refuses(corpus: Path) -> None:
    """Even a file whose games are all excluded anyway (the Cerebras JSON) is integrity:
    changing it refuses the corpus."""
    path = corpus / CEREBRAS / "2025.08.08_19-11.json"
    path.write_bytes(path.read_bytes().replace(b"0.614", b"0.615"))
    with pytest.raises(Refusal) as info:
        census_path(corpus)
    assert "digest_mismatch" in info.value.codes and str(path) in str(info.value)


def test_missing_unlisted_and_truncated_files_are_each_named(corpus: Path) -> None:
    """A deleted file is absent, an added one unlisted, a shortened one truncated."""
    (corpus / CEREBRAS / "_run.json").unlink()
    (corpus / CEREBRAS / "extra.json").write_text("{}")
    out = corpus / "gpt-35-turbo-0301_2025-01-22" / "output.txt"
    out.write_bytes(out.read_bytes()[:1000])
    with pytest.raises(Refusal) as info:
        census_path(corpus)
    assert sorted(info.value.codes) == ["absent", "truncated", "unlisted"]


def test_edited_manifest_is_named_by_its_own_digest(corpus: Path) -> None:
    """A byte changed inside the manifest's description is caught by manifest_digest."""
    path = corpus / MANIFEST_NAME
    manifest = json.loads(path.read_bytes())
    manifest["description"] = manifest["description"].replace("LLM", "LLN", 1)
    path.write_bytes(canonical_bytes(manifest) + b"\n")
    with pytest.raises(Refusal) as info:
        census_path(corpus)
    assert list(info.value.codes) == ["digest_mismatch"] and str(path) in str(info.value)


def test_freeze_refuses_to_replace_without_force(corpus: Path) -> None:
    """Re-freezing needs force; with it, a re-freeze of unchanged files is identical."""
    before = (corpus / MANIFEST_NAME).read_bytes()
    with pytest.raises(InputError, match="--force"):
        freeze(corpus, description="x")
    description = json.loads(before)["description"]
    freeze(corpus, description=description, force=True)
    assert (corpus / MANIFEST_NAME).read_bytes() == before


def test_cli_freeze_then_census_and_refreeze_needs_force(corpus: Path) -> None:
    """`chess census DIR --freeze` writes the manifest and censuses; again without --force
    it exits 1 naming --force; with --force it succeeds."""
    import typer
    from typer.testing import CliRunner

    from rungbench.cli.chess_census import register

    (corpus / MANIFEST_NAME).unlink()
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    first = runner.invoke(app, ["census", str(corpus), "--freeze", "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["counts"]["eligible_attempts"] == 3237
    assert verify_frozen(corpus)
    again = runner.invoke(app, ["census", str(corpus), "--freeze"])
    assert again.exit_code == 1 and "--force" in again.output
    forced = runner.invoke(app, ["census", str(corpus), "--freeze", "--force"])
    assert forced.exit_code == 0
