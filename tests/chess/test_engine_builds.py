"""The registered engine builds (rungbench.chess.engine_builds): Stockfish 18 as WebAssembly
under node, pinned by engines/stockfish18/SHA256SUMS, against the real install (``make setup``
installs it); searches at a reduced budget of 3,000 nodes (registered: 50,000)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import chess.engine
import pytest

import chess
from rungbench.chess import engine_builds as builds
from rungbench.chess.engine import (
    EngineConfig,
    EngineError,
    build_digests,
    identify,
    lines_json,
    search,
    start_uci,
)
from rungbench.chess.workspace import Workspace
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

WASM = builds.REGISTERED_BUILD
CONFIG = EngineConfig(build=WASM, nodes=3_000, hash_mb=16)
ITALIAN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
FOLDER = Path(__file__).resolve().parents[2] / "engines" / "stockfish18"
"""The repository's pinned install."""
ENTRY = FOLDER / "node_modules" / "stockfish" / "bin" / "stockfish-18-single.js"
"""Its engine file."""


def committed_digests() -> dict[str, str]:
    """engines/stockfish18/SHA256SUMS read independently: file name → sha256 hex."""
    out = {}
    for line in (FOLDER / "SHA256SUMS").read_text().splitlines():
        hexdigest, name = line.split("  ")
        out[Path(name).name] = hexdigest
    return out


@pytest.fixture(scope="module")
def engine() -> Iterator[chess.engine.SimpleEngine]:
    """One started Stockfish 18 (WebAssembly) with the registered options."""
    started = start_uci(CONFIG)
    yield started
    started.quit()


def test_the_registered_build_is_installed_and_the_default() -> None:
    """`make setup` installed stockfish@18.0.8's single-threaded build; it is the default."""
    assert builds.is_installed(builds.BUILDS[WASM])
    assert builds.default_build() == WASM == EngineConfig().build
    assert CONFIG.file == ENTRY
    assert CONFIG.command()[1:] == [str(CONFIG.file)] and CONFIG.command()[0].endswith("node")


def test_identity_records_package_files_network_and_name(
        engine: chess.engine.SimpleEngine, tmp_path: Path) -> None:
    """Stockfish 18's identity: npm package and version, both files' sha256 as committed,
    the NNUE networks it declares, its id name, the options sent; no bench signature."""
    ident = identify(engine, CONFIG, Workspace(tmp_path))
    files = {name: "sha256:" + hashlib.sha256((ENTRY.parent / name).read_bytes()).hexdigest()
             for name in ("stockfish-18-single.js", "stockfish-18-single.wasm")}
    assert files == {n: "sha256:" + h for n, h in committed_digests().items()}
    assert ident.name == "Stockfish 18 WASM" and ident.bench_nodes is None
    assert ident.build["key"] == WASM
    assert (ident.build["package"], ident.build["version"]) == ("npm:stockfish", "18.0.8")
    assert ident.build["files"] == files and ident.sha256 == digest(files)
    assert ident.build["network"] == ["nn-c288c895ea92.nnue", "nn-37f18f62d772.nnue"]
    assert ident.build["sent"] == {"Clear Hash": None, "Hash": 16, "MultiPV": 10, "Threads": 1,
                                   "UCI_ShowWDL": True}
    assert "UCI_AnalyseMode" not in ident.options
    assert ident.options["Threads"] == {"type": "spin", "default": 1, "value": 1}


def test_cleared_hash_search_repeats_bit_for_bit_with_wdl(
        engine: chess.engine.SimpleEngine) -> None:
    """Two 3,000-node MultiPV 10 searches of one FEN, each after Clear Hash, give identical
    lines: ten unique legal moves, the engine's WDL, the node limit honoured."""
    board = chess.Board(ITALIAN)
    first = lines_json(board, search(engine, board, CONFIG))
    second = lines_json(board, search(engine, board, CONFIG))
    assert first == second
    assert len(first) == 10 and len({line["uci"] for line in first}) == 10
    assert all(sum(line["wdl"]) == 1000 for line in first)
    assert all(chess.Move.from_uci(line["uci"]) in board.legal_moves for line in first)
    assert 3_000 <= first[0]["search"]["nodes"] < 3_300


def _tampered_install(root: Path) -> Path:
    """An engines/ folder whose stockfish18 install has one changed byte in the .js file."""
    folder = root / "stockfish18"
    bin_dir = folder / "node_modules" / "stockfish" / "bin"
    bin_dir.mkdir(parents=True)
    (folder / "package.json").write_bytes((FOLDER / "package.json").read_bytes())
    (folder / "SHA256SUMS").write_bytes((FOLDER / "SHA256SUMS").read_bytes())
    original = ENTRY.read_bytes()
    (bin_dir / "stockfish-18-single.js").write_bytes(original[:-1] + b" ")
    (bin_dir / "stockfish-18-single.wasm").symlink_to(ENTRY.with_suffix(".wasm"))
    return bin_dir / "stockfish-18-single.js"


def test_changed_engine_file_is_refused_in_one_line(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A file differing from SHA256SUMS is a BuildError (an EngineError) naming the file and
    the digests file, in one line, before any engine starts."""
    monkeypatch.setenv(builds.ENGINES_ENV, str(tmp_path))
    tampered = _tampered_install(tmp_path)
    config = EngineConfig(build=WASM, nodes=1_000)
    assert config.file == tampered
    with pytest.raises(builds.BuildError) as caught:
        build_digests(config)
    message = str(caught.value)
    assert isinstance(caught.value, EngineError) and "\n" not in message
    assert "stockfish-18-single.js" in message and "SHA256SUMS" in message
    assert "stockfish-18-single.wasm," not in message


def test_missing_install_or_node_falls_back_to_debian(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the npm install, or without node on PATH, the default is Debian's 15.1."""
    monkeypatch.setenv(builds.ENGINES_ENV, str(tmp_path))
    assert builds.default_build() == builds.FALLBACK_BUILD
    monkeypatch.delenv(builds.ENGINES_ENV)
    assert builds.default_build() == WASM
    monkeypatch.setattr(builds.shutil, "which", lambda name: None)
    assert builds.default_build() == builds.FALLBACK_BUILD
    with pytest.raises(builds.BuildError, match="node"):
        EngineConfig(build=WASM).command()


def test_unknown_build_is_refused_naming_the_field() -> None:
    """A build key outside the registry is an input error naming ``build``."""
    with pytest.raises(InputError, match="stockfish-18-wasm, stockfish-15-debian") as caught:
        EngineConfig(build="stockfish-17")
    assert caught.value.field == "build"
