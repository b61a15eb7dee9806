"""shared_data_dir: environment override, then the bundled data/ or shared/data above."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.errors import InputError
from rungbench.evidence import paths
from rungbench.evidence.canonical import file_digest
from rungbench.evidence.paths import DATA_ENV, recorded_digests, shared_data_dir


def test_finds_bundled_data_next_to_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the override, the data dir is the repository's bundled data/ with its SOURCES.md."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    found = shared_data_dir()
    assert found == (Path(__file__).resolve().parents[2] / "data").resolve()
    assert (found / "SOURCES.md").is_file()


def test_environment_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RUNGBENCH_DATA names the directory when set."""
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert shared_data_dir() == tmp_path.resolve()


def test_override_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A RUNGBENCH_DATA that is not a directory is an InputError naming it."""
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="nowhere"):
        shared_data_dir()


def test_not_found_is_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no override and no data/ or shared/data above package or cwd, the error says so."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "pkg" / "paths.py"))
    with pytest.raises(InputError, match=DATA_ENV):
        shared_data_dir()


def test_cwd_ancestor_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shared/data above the working directory is found when the package has none above it."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    work = tmp_path / "main" / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "elsewhere" / "x" / "paths.py"))
    assert shared_data_dir() == (tmp_path / "shared" / "data").resolve()


def test_bundled_data_needs_its_sources_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data/ folder counts only with its SOURCES.md; without it shared/data is used."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    (tmp_path / "data").mkdir()
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "elsewhere" / "x" / "paths.py"))
    assert shared_data_dir() == (tmp_path / "shared" / "data").resolve()
    (tmp_path / "data" / "SOURCES.md").write_text("# sources\n")
    assert shared_data_dir() == (tmp_path / "data").resolve()


def test_recorded_digests_match_bundled_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file SOURCES.md lists exists and hashes to the sha256 it records."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    data = shared_data_dir()
    recorded = recorded_digests(data)
    assert len(recorded) >= 29
    assert recorded["llm_chess/gpt-oss-20b-low_2025-08-12-15-06-46/_run.json"] == (
        "sha256:cfc0e9a3ee7093a01a5b2fc01c74a18fa36c5d70c4c88ebf5bd232a220af4e11"
    )
    for name, expected in recorded.items():
        assert file_digest(str(data / name)) == expected, name


def test_recorded_digests_rejects_bad_rows(tmp_path: Path) -> None:
    """A malformed sha256 cell or a file listed twice is an InputError naming the line."""
    head = "| file (relative to data/) | sha256 |\n|---|---|\n"
    (tmp_path / "SOURCES.md").write_text(head + "| `a.txt` | `XYZ` |\n")
    with pytest.raises(InputError, match=r"SOURCES\.md:3: sha256 'XYZ'"):
        recorded_digests(tmp_path)
    row = "| `a.txt` | `" + "a" * 64 + "` |\n"
    (tmp_path / "SOURCES.md").write_text(head + row + row)
    with pytest.raises(InputError, match=r"SOURCES\.md:4: file 'a.txt' listed twice"):
        recorded_digests(tmp_path)


def test_recorded_digests_ignores_tables_without_sha256(tmp_path: Path) -> None:
    """Tables without a file and a sha256 column contribute nothing."""
    text = "| positions | tactical |\n|---|---|\n| 40 | 37 |\n\n| file | sha256 |\n|---|---|\n"
    (tmp_path / "SOURCES.md").write_text(text + "| `b` | " + "0" * 64 + " |\n")
    assert recorded_digests(tmp_path) == {"b": "sha256:" + "0" * 64}


def test_every_bundled_data_file_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file bundled in data/ has its provenance row in SOURCES.md (corpus manifests,
    which rungbench writes itself and which digest the files they list, excepted)."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    data = shared_data_dir()
    recorded = set(recorded_digests(data))
    bundled = {p.relative_to(data).as_posix() for p in data.rglob("*")
               if p.is_file() and p.name not in ("SOURCES.md", "corpus_manifest.json")}
    assert bundled == recorded
