"""A run's game result files: which files they are, what the census digests, and how a
game is paired with its file where token counts cannot pair it.

:func:`rungbench.chess.transcripts.llmchess_checks.match_game_jsons` pairs a game with
the one JSON whose token counts are its own. Two cases need more, each stated in the
game's report: a crashed game, whose JSON also counts the request that failed
(:func:`pair_crashed`), and games that share their token counts with other games, so
that any JSON with those counts may be any one's (:func:`shared_checks`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from rungbench.chess.transcripts.llmchess_checks import (
    Check,
    ReplayedGame,
    Signature,
    dominates,
    json_checks,
    json_signature,
    pgn_move_text,
    shared_signature_jsons,
)
from rungbench.chess.transcripts.versions import run_file
from rungbench.evidence.canonical import bytes_digest

ERROR_OCCURED = "ERROR OCCURED"
"""The termination reason the crash path records (the program's spelling)."""

Matches = list[tuple[str | None, str | None]]
"""Per game: the paired result file (or None) and a note on the pairing (or None)."""


class ReplayedRecord(Protocol):
    """What pairing reads of a replayed game."""

    @property
    def complete(self) -> bool:
        """Whether the capture holds the game's GAME OVER summary."""
        ...

    @property
    def reason(self) -> str | None:
        """Why the game ended, in the program's words."""
        ...

    @property
    def moves_made(self) -> int:
        """``MADE MOVE`` count."""
        ...

    def signature(self) -> Signature:
        """(prompt, completion) tokens last printed per colour."""
        ...

    def outcome(self, *, with_sans: bool = True) -> ReplayedGame:
        """The replay's outcome."""
        ...


RESULT_SUFFIXES = (".json", ".filter_error")
"""How a game's result file is named: ``<time>.json``, or ``<time>.filter_error`` for a game
that a provider's content filter stopped (the program stored its result JSON under that
extension; gpt-5.4-high_2026-04-18-22-51-22 game 3)."""


def is_result_file(name: str) -> bool:
    """Whether ``name`` is a game's result file (a run's ``_*.json`` files are not)."""
    return name.endswith(RESULT_SUFFIXES) and not name.startswith("_")


def result_files(folder: Path, files: Mapping[str, bytes] | None) -> dict[str, bytes]:
    """The bytes of every game result file of the run, by file name."""
    if files is not None:
        return {name: files[name] for name in sorted(files) if is_result_file(name)}
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())
            if path.is_file() and is_result_file(path.name)}


def read_digests(folder: Path, output: bytes, results: Mapping[str, bytes],
                files: Mapping[str, bytes] | None) -> dict[str, str]:
    """Digests of every file the replay reads, by ``<run>/<name>``: output.txt, the result
    files, and ``_run.json`` and ``_aggregate_results.json`` where the run has them."""
    read = {"output.txt": output, **results}
    for name in ("_run.json", "_aggregate_results.json"):
        raw = run_file(folder, name, files)
        if raw is not None:
            read[name] = raw
    return {f"{folder.name}/{name}": bytes_digest(raw) for name, raw in sorted(read.items())}


def shared_checks(replays: Sequence[ReplayedRecord], matches: Matches,
                   jsons: Mapping[str, dict[str, Any]],
                   starts: list[str]) -> dict[int, tuple[tuple[str, ...], list[Check]]]:
    """The JSON checks of the games that share their token counts with other games.

    Such games are indistinguishable by what pairs a game with its JSON, so any JSON with
    their counts may be any one's. Each is checked against every such JSON: when all of
    them agree with its replay, whichever is its own agrees, and the game is kept with
    those checks (by game index); when one disagrees, the game stays ``json_ambiguous``,
    its note naming the disagreement (``matches`` is updated in place).
    """
    signatures = [r.signature() if r.complete else None for r in replays]
    out: dict[int, tuple[tuple[str, ...], list[Check]]] = {}
    for i, names in enumerate(shared_signature_jsons(signatures, jsons)):
        if not names or matches[i][0] is not None:
            continue
        outcome = replays[i].outcome()
        checks = [c for n in names for c in json_checks(
            n, jsons[n], outcome, next_start=next_start(jsons[n], starts))[0]]
        failed = next((c for c in checks if not c.ok), None)
        if failed is None:
            out[i] = (names, checks)
        else:
            matches[i] = (None, f"{matches[i][1]}; {failed.name} from {failed.source} "
                          f"disagrees with this game (recorded {failed.expected!r}, replay "
                          f"{failed.observed!r})")
    return out


def pair_crashed(replays: Sequence[ReplayedRecord], matches: Matches,
                  jsons: Mapping[str, dict[str, Any]]) -> Matches:
    """Pair each crashed game that token counts could not pair with its JSON by what the
    JSON records of the game itself.

    A crashed game's JSON counts the tokens of the request that failed, which the console
    never printed, so its counts exceed the console's. Such a game is paired with the one
    JSON left unpaired whose counts dominate the console's (:func:`dominates`), whose move
    count and PGN move text are the replay's, and whose ``time_started`` lies between
    those of the JSONs paired with the games before and after it; a JSON that fits several
    games, or a game that several JSONs fit, stays unpaired.
    """
    used = {name for name, _ in matches if name}
    fits: dict[int, list[str]] = {}
    for i, replay in enumerate(replays):
        if matches[i][0] is not None or not replay.complete or replay.reason != ERROR_OCCURED:
            continue
        after = max((str(jsons[n].get("time_started", "")) for n, _ in matches[:i] if n),
                    default="")
        before = min((str(jsons[n].get("time_started", "")) for n, _ in matches[i + 1:] if n),
                     default="~")
        fits[i] = [n for n, data in jsons.items() if n not in used
                   and _fits_crash(replay, data, after, before)]
    out = list(matches)
    for i, names in fits.items():
        if len(names) == 1 and sum(names[0] in other for other in fits.values()) == 1:
            json_sig = json_signature(jsons[names[0]])
            out[i] = (names[0], f"game JSON {names[0]} paired by its moves, PGN and start "
                      f"time: its tokens {json_sig} exceed the console's last printed "
                      f"{replays[i].signature()} by the failed request's")
    return out


def _fits_crash(replay: ReplayedRecord, data: Mapping[str, Any], after: str, before: str) -> bool:
    """Whether a game JSON records the crashed game ``replay`` (see :func:`pair_crashed`)."""
    started = str(data.get("time_started", ""))
    if not (after < started < before) or data.get("number_of_moves") != replay.moves_made:
        return False
    if not dominates(json_signature(data), replay.signature()):
        return False
    if "pgn" not in data:
        return True
    recorded = pgn_move_text(str(data["pgn"]))
    return recorded == pgn_move_text(replay.outcome().pgn(""))


def next_start(data: Mapping[str, Any] | None, starts: list[str]) -> str | None:
    """The first ``time_started`` among the run's game JSONs after ``data``'s (the run's next
    game, which began once this one had ended), or None; ``starts`` is sorted."""
    if data is None:
        return None
    after = bisect.bisect_right(starts, str(data.get("time_started", "")))
    return starts[after] if after < len(starts) else None
