"""Reader for public LLM Chess logs: ``output.txt`` with its per-game JSON files.

``output.txt`` is an AutoGen console capture, split into messages and program
lines by :mod:`rungbench.chess.transcripts.console`. Replies are printed as received, before
``remove_text`` is applied. The reader replays every dialogue with the
dispatcher version of the run, regenerates every dispatcher reply with
python-chess, and checks each game against what the run recorded about it: the
console summary and, where one survives upstream, the game JSON (matched by token
counts; the comparisons live in :mod:`rungbench.chess.transcripts.llmchess_checks`). Every
disagreement is reported per game; nothing is smoothed over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import chess
from rungbench.chess.transcripts.console import Block, Event, Marker, tokenize
from rungbench.chess.transcripts.corpus import (
    Attempt,
    Corpus,
    GameRecord,
    frozen_record,
    split_tool_calls,
)
from rungbench.chess.transcripts.dispatch import (
    MOVE_MADE,
    PREVIOUS_MOVES_PREFIX,
    TOO_MANY_WRONG_ACTIONS,
    DispatcherVersion,
    VerdictKind,
    dispatch,
    fen_of,
    invalid_action_message,
    is_game_over,
    is_llm_player,
    previous_moves_prefix,
)
from rungbench.chess.transcripts.eligibility import (
    Exclusion,
    check_exclusions,
    event_exclusions,
    is_opening,
    primary,
)
from rungbench.chess.transcripts.llmchess_checks import (
    COUNTERS,
    Check,
    GameReport,
    ReplayedGame,
    Signature,
    aggregate_checks,
    json_checks,
    match_game_jsons,
    material_count,
    summary_checks,
)
from rungbench.chess.transcripts.result_files import (
    ERROR_OCCURED,
    next_start,
    pair_crashed,
    read_digests,
    result_files,
    shared_checks,
)
from rungbench.chess.transcripts.versions import Detection, detect, run_file
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import loads_canonical

_PROXY = "Proxy"
HALTED = "Execution was halted due to error"
"""The line the program prints when an exception ends a game (the crash path)."""
_MAX_GAME_MOVES = 200
_REGENERATED_KIND = {VerdictKind.BOARD_QUERY: "board", VerdictKind.LEGAL_QUERY: "legal"}
"""Which tally of regenerated replies a verdict's reply counts in (``other`` otherwise)."""
_VALUES = {kind: kind.value for kind in VerdictKind}
"""Each verdict kind's value (read once: ``Enum.value`` is a Python-level property)."""


@dataclass
class _Player:
    name: str
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    failed: int = 0
    requested_board: bool = False
    tokens: tuple[int, int] = (0, 0)
    role: Literal["agent", "opponent"] = "opponent"
    """Whether the player is the LLM side (:func:`is_llm_player`), decided once."""

    def __post_init__(self) -> None:
        self.role = "agent" if is_llm_player(self.name) else "opponent"


@dataclass(frozen=True)
class RunReport:
    """A parsed and replayed LLM Chess run, every game verified on its own."""

    folder: str
    """The run folder."""
    dispatcher: DispatcherVersion
    """The dispatcher version replayed."""
    games: tuple[GameReport, ...]
    """Per-game reports in transcript order."""
    run_checks: tuple[Check, ...]
    """Run-level checks (the printed aggregate against ``_aggregate_results.json``)."""
    unmatched_json: tuple[str, ...]
    """Game JSON files no game matched."""
    corpus: Corpus
    """The attempts of the eligible games, in the common corpus shape."""
    exclusions: dict[str, tuple[Exclusion, ...]] = field(default_factory=dict)
    """Every exclusion found, by game; a game listed here is not in ``corpus``."""
    detection: Detection | None = None
    """How the program version was decided."""
    variant: str = ""
    """The run's interface variant."""

    @property
    def disagreements(self) -> list[tuple[str, Check]]:
        """Every failed check, with the game it belongs to (``run`` for run-level ones)."""
        out = [(g.game, c) for g in self.games for c in g.disagreements]
        return out + [("run", c) for c in self.run_checks if not c.ok]

    def excluded(self) -> list[tuple[GameReport, Exclusion]]:
        """Each excluded game with the exclusion that names its cause."""
        out = []
        for game in self.games:
            cause = primary(self.exclusions.get(game.game, ()))
            if cause is not None:
                out.append((game, cause))
        return out

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready mapping."""
        return {
            "folder": self.folder, "dispatcher": self.dispatcher.to_json(),
            "detection": self.detection.to_json() if self.detection else None,
            "games": [g.to_json() for g in self.games],
            "run_checks": [c.to_json() for c in self.run_checks],
            "unmatched_json": list(self.unmatched_json),
            "disagreements": len(self.disagreements),
            "exclusions": {g: [e.to_json() for e in ex] for g, ex in self.exclusions.items()},
        }


def is_llmchess_folder(folder: Path) -> bool:
    """Return whether ``folder`` looks like an LLM Chess log folder."""
    return (folder / "output.txt").is_file()


def run_dispatcher(folder: Path, *, override: str | None = None) -> DispatcherVersion:
    """The dispatcher version of a run (:func:`rungbench.chess.transcripts.versions.detect`)."""
    data = (folder / "output.txt").read_bytes()
    return detect(folder, data, tokenize(data, path=str(folder / "output.txt")),
                  override=override).version


def variant_of(dv: DispatcherVersion) -> str:
    """The interface variant a version presents: assistance, board mode, reflection (and
    the moves-so-far line of the "previous moves" ablation)."""
    assist = "candidate-assisted" if dv.candidates_in_prompt else "unaided"
    reflection = "reflection" if dv.enable_reflection else "no-reflection"
    history = "/previous-moves" if dv.previous_moves_in_prompt else ""
    return f"llmchess/{assist}/{dv.board_mode}/{reflection}{history}"


def read_run(folder: Path, *, dispatcher: str | None = None,
             files: Mapping[str, bytes] | None = None) -> RunReport:
    """Parse, replay and check one LLM Chess run folder, game by game.

    ``dispatcher`` names a version to replay with instead of the detected one.
    ``files``, when given, are every file of the run by name, already read (a frozen
    corpus's verified bytes, :func:`rungbench.chess.transcripts.frozen.read_frozen`): the
    run is read from them, never from disk, and a name they lack is a file the run lacks.
    Games that fail a check are excluded with a registered reason
    (:mod:`rungbench.chess.transcripts.eligibility`); only eligible games reach the corpus.
    """
    out_path = folder / "output.txt"
    data = run_file(folder, "output.txt", files)
    if data is None:
        data = out_path.read_bytes()  # raises naming the missing file
    events = tokenize(data, path=str(out_path))
    results = result_files(folder, files)
    jsons = {name: loads_canonical(raw, path=str(folder / name)) for name, raw in results.items()}
    detection = detect(folder, data, events, override=dispatcher, jsons=jsons, files=files)
    dv = detection.version
    games = _split_games(events)
    run_group, variant = folder.name, variant_of(dv)
    replays = []
    for index, game_events in enumerate(games, start=1):
        replay = _Replay(dv, f"{run_group}/g{index:02d}", run_group, variant, str(out_path),
                         f"{run_group}/output.txt")
        replay.run(game_events)
        replays.append(replay)
    matches = match_game_jsons([r.signature() if r.complete else None for r in replays], jsons)
    matches = pair_crashed(replays, matches, jsons)
    starts = sorted(str(d.get("time_started", "")) for d in jsons.values())
    shared = shared_checks(replays, matches, jsons, starts)
    reports = []
    for index, (replay, (name, note)) in enumerate(zip(replays, matches, strict=True), start=1):
        game_json = jsons.get(name or "")
        reports.append(replay.report(index, name, game_json, note,
                                     next_start=next_start(game_json, starts),
                                     shared=shared.get(index - 1)))
    used = {name for name, _ in matches if name}
    run_checks = aggregate_checks(folder, events, reports, files=files)
    per_game = _exclusions(folder, games, replays, reports, matches, run_checks, files,
                           set(shared))
    attempts, records = [], []
    for replay in replays:
        if replay.game in per_game:
            continue
        attempts.extend(replay.attempts)
        records.append(replay.record(sum(a.role == "agent" for a in replay.attempts)))
    corpus = Corpus(
        attempts=tuple(attempts), games=tuple(records),
        sources={f"{run_group}/output.txt": data},
        dispatchers={dv.name: dv}, records_path=str(out_path),
        origin={"format": "llm_chess", "folder": folder.name,
                "files": read_digests(folder, data, results, files)},
    )
    return RunReport(str(folder), dv, tuple(reports), tuple(run_checks),
                     tuple(sorted(set(jsons) - used)), corpus, per_game, detection, variant)


def _exclusions(
    folder: Path, games: list[list[Event]], replays: list[_Replay], reports: list[GameReport],
    matches: list[tuple[str | None, str | None]], run_checks: list[Check],
    files: Mapping[str, bytes] | None, shared: set[int],
) -> dict[str, tuple[Exclusion, ...]]:
    """Every game's exclusions: its console lines, its failed checks, its JSON (``shared``:
    the games checked against every JSON their shared token counts match, all agreeing)."""
    stores_json = _stores_game_json(folder, files)
    aggregate = [c for c in run_checks if not c.ok]
    out: dict[str, tuple[Exclusion, ...]] = {}
    for index, (events, replay, report, (name, note)) in enumerate(
            zip(games, replays, reports, matches, strict=True)):
        first_block = next((e for e in events if isinstance(e, Block)), None)
        found = event_exclusions(events, first_game=index == 0,
                                 opening_ok=first_block is not None and is_opening(first_block))
        found += check_exclusions(report.disagreements, report.line)  # (it skips the rest)
        crashed = any(e.code == "engine_crash" for e in found)
        if crashed and name is not None:
            found = [_with_result_file(e, name) for e in found]
        if (replay.complete and name is None and note is not None and not crashed
                and index not in shared):
            # (a crashed game's JSON counts the tokens of the request that failed, which
            # the console never printed, so it cannot be paired by token counts)
            if "ambiguous" in note:
                found.append(Exclusion("json_ambiguous", note, report.line))
            elif stores_json:
                found.append(Exclusion("json_missing", note, report.line))
        found += [Exclusion("aggregate_mismatch", f"{c.name} from {c.source}: recorded "
                            f"{c.expected!r}, replay {c.observed!r}", report.line)
                  for c in aggregate]
        if found:
            out[replay.game] = tuple(found)
    return out


def _with_result_file(exclusion: Exclusion, name: str) -> Exclusion:
    """An engine-crash exclusion that names the game's result file (and, for a
    ``.filter_error`` file, what that extension records)."""
    if exclusion.code != "engine_crash":
        return exclusion
    why = (" (the program stored it under .filter_error: a provider's content filter "
           "refused a request)" if name.endswith(".filter_error") else "")
    return Exclusion(exclusion.code, f"{exclusion.detail} Result file: {name}{why}.",
                     exclusion.line)


def _stores_game_json(folder: Path, files: Mapping[str, bytes] | None) -> bool:
    path = folder / "_run.json"
    raw = run_file(folder, "_run.json", files)
    if raw is None:
        return False
    data = loads_canonical(raw, path=str(path))
    return bool(data.get("metadata", {}).get("store_individual_logs")) if isinstance(
        data, dict) else False


def _split_games(events: list[Event]) -> list[list[Event]]:
    games: list[list[Event]] = []
    current: list[Event] = []
    for event in events:
        if isinstance(event, Block) or current:
            current.append(event)
        if isinstance(event, Marker) and event.kind == "game_over":
            games.append(current)
            current = []
    if any(isinstance(e, Block) for e in current):
        games.append(current)
    return games


class _Replay:
    """State of one game's replay: the board, both players, attempts and checks."""

    def __init__(self, dv: DispatcherVersion, game: str, run_group: str, variant: str,
                 source: str, source_key: str) -> None:
        self.dv, self.game, self.run_group, self.variant = dv, game, run_group, variant
        self.source, self.source_key = source, source_key
        self.board = chess.Board()
        self._fen: str | None = None  # the position's FEN, cached until the next move
        self.players: dict[str, _Player] = {}
        self.colours: dict[str, Literal["white", "black"]] = {}
        self.attempts: list[Attempt] = []
        self.checks: list[Check] = []
        self.regenerated = {"board": 0, "legal": 0, "other": 0}
        self.moves_made = 0
        self.complete = False
        self.start_line = 0
        self.summary = ""
        self.winner: str | None = None
        self.reason: str | None = None

    def run(self, events: list[Event]) -> None:
        dialogue: list[Event] = []
        crashed = False
        last: _Player | None = None
        for event in events:
            if not isinstance(event, Marker):
                dialogue.append(event)
            elif event.kind == "made_move":
                last = self._dialogue(dialogue, ended=True)
                dialogue = []
                self.moves_made += 1
                self.checks.append(Check("made_move_number", "console",
                                         int(event.text.split()[-1]), self.moves_made))
            elif event.kind == "game_over":
                self.complete = True
                self.summary = event.text
            elif event.text.startswith(HALTED):
                crashed = True
                dialogue.append(event)
            elif event.kind == "tokens" and last is not None:
                # Token counts are printed after MADE MOVE, for the dialogue just ended.
                value = int(event.text.split(": ")[1])
                prompt, completion = last.tokens
                last.tokens = ((value, completion) if event.text.startswith("Prompt")
                               else (prompt, value))
            else:
                dialogue.append(event)
        if any(isinstance(e, Block) for e in dialogue):
            self._dialogue(dialogue, ended=False)
        if crashed and self.complete and self.reason is None:
            # The crash path: the run loop's exception handler ends the game with no
            # winner and the reason ERROR OCCURED (so the PGN result is 1/2-1/2).
            self.winner, self.reason = "NONE", ERROR_OCCURED
        first = next((e for e in events if isinstance(e, Block)), None)
        self.start_line = first.line if first else 0

    def _player(self, name: str) -> _Player:
        if name not in self.players:
            self.players[name] = _Player(name)
            self.colours[name] = "white" if self.board.turn == chess.WHITE else "black"
        return self.players[name]

    def _dialogue(self, events: list[Event], *, ended: bool) -> _Player | None:
        blocks = [e for e in events if isinstance(e, Block)]
        if not blocks:
            return None
        opening = blocks[0]
        if self.reason is not None:
            self.checks.append(Check(f"dialogue@{self.source}:{opening.line}", "transcript",
                                     "a further move dialogue", f"game over: {self.reason}"))
        self._check_structure(blocks, ended=ended)
        if self.dv.previous_moves_in_prompt:
            self._check_previous_moves(opening)
        player = self._player(opening.recipient)
        if self.dv.failure_scope == "move":
            player.failed = 0
        if self.dv.wrong_counters_per_move:
            player.counters["wrong_moves"] = player.counters["wrong_actions"] = 0
        player.requested_board = False
        prompt = opening
        last_message = opening.body
        turns = 0
        breaking = [e for e in events if isinstance(e, Marker) and e.kind == "breaking"]
        for i, block in enumerate(blocks[1:], start=1):
            if block.sender == _PROXY:
                prompt = block
                continue
            turns += 1
            reply = blocks[i + 1] if i + 1 < len(blocks) else None
            last_message = self._attempt(player, prompt, block, reply, turns, breaking)
        if ended:
            self._end_of_move(player, last_message, turns)
        return player

    def _check_previous_moves(self, opening: Block) -> None:
        """The moves-so-far line of an opening prompt, regenerated from the replayed moves."""
        match = PREVIOUS_MOVES_PREFIX.match(opening.body)
        check = Check(f"reply@{self.source}:{opening.body_line}", "transcript",
                      opening.body[:match.end()] if match else "",
                      previous_moves_prefix([m.uci() for m in self.board.move_stack]))
        self.checks.append(check)
        if check.ok:
            self.regenerated["other"] += 1

    def _check_structure(self, blocks: list[Block], *, ended: bool) -> None:
        """A dialogue alternates Proxy and one player, and only its last reply may go
        unanswered: at the turn limit, when the reply echoes a termination message, or
        when the capture stops (``ended`` False)."""
        player = blocks[0].recipient
        for i, block in enumerate(blocks):
            sender, recipient = (_PROXY, player) if i % 2 == 0 else (player, _PROXY)
            if (block.sender, block.recipient) != (sender, recipient):
                self.checks.append(Check(f"message@{self.source}:{block.line}", "transcript",
                                         f"{block.sender} to {block.recipient}",
                                         f"{sender} to {recipient}"))
                return
        replies = len(blocks) // 2
        if ended and len(blocks) % 2 == 0 and replies < self.dv.max_turns:
            content = split_tool_calls(blocks[-1].body)[0].lower().strip()
            if content not in (MOVE_MADE.lower(), TOO_MANY_WRONG_ACTIONS.lower()):
                self.checks.append(Check(
                    f"unanswered@{self.source}:{blocks[-1].line}", "transcript",
                    "a reply left unanswered", f"answered (only {replies} of "
                    f"{self.dv.max_turns} turns used)"))

    def _attempt(self, player: _Player, prompt: Block, block: Block, reply: Block | None,
                 turns: int, breaking: list[Marker]) -> str:
        content, calls = split_tool_calls(block.body)
        if self._fen is None:
            self._fen = fen_of(self.board)
        fen = self._fen
        ply = len(self.board.move_stack)
        role = player.role
        dispatched = reply is not None and reply.sender == _PROXY
        verdict = dispatch(self.dv, content, board=self.board, previous_prompt=prompt.body,
                           fen=fen)
        if dispatched:
            assert reply is not None
            self._apply(player, verdict.kind, verdict.move)
            expected = verdict.reply
            if player.failed >= self.dv.max_failed_attempts and verdict.failed:
                self._check_breaking(breaking, verdict.reply, block)
                expected = TOO_MANY_WRONG_ACTIONS
            kind = _REGENERATED_KIND.get(verdict.kind, "other")
            check = frozen_record(Check, name=f"reply@{self.source}:{reply.body_line}",
                                  source="transcript", expected=reply.body, observed=expected)
            self.checks.append(check)
            if check.ok:
                self.regenerated[kind] += 1
        self.attempts.append(frozen_record(
            Attempt,
            run_group=self.run_group, variant=self.variant, game=self.game, ply=ply,
            colour="white" if self.board.turn == chess.WHITE else "black", player=player.name,
            role=role, attempt=turns, fen_before=fen, prompt=prompt.body, response=block.body,
            verdict=_VALUES[verdict.kind] if dispatched else None,
            move=verdict.move if dispatched else None,
            reply=reply.body if dispatched and reply is not None else None,
            dispatcher=self.dv.name, source=self.source_key, line=block.body_line,
            response_range=block.span, prompt_range=prompt.span,
            tool_calls=tuple([c.name for c in calls]) if calls else (),
        ))
        if dispatched and verdict.accepted and verdict.move is not None:
            move = chess.Move.from_uci(verdict.move)
            self.board.push(move)
            self._fen = None
        return reply.body if dispatched and reply is not None else block.body

    def _apply(self, player: _Player, kind: VerdictKind, move: str | None) -> None:
        c = player.counters
        if kind is VerdictKind.BOARD_QUERY:
            c["get_board_count"] += 1
            player.requested_board = True
        elif kind is VerdictKind.LEGAL_QUERY:
            c["get_legal_moves_count"] += 1
            player.requested_board = True
        elif kind is VerdictKind.REFLECTION:
            c["reflections_used"] += 1
            if not player.requested_board:
                c["reflections_used_before_board"] += 1
        elif kind in (VerdictKind.MOVE_ACCEPTED, VerdictKind.MOVE_REJECTED):
            c["make_move_count"] += 1
            if kind is VerdictKind.MOVE_REJECTED:
                c["wrong_moves"] += 1
                player.failed += 1
        elif kind is VerdictKind.INVALID_ACTION:
            c["wrong_actions"] += 1
            player.failed += 1

    def _check_breaking(self, breaking: list[Marker], reply: str, block: Block) -> None:
        after = [m for m in breaking if m.line > block.line]
        observed = after[0].text if after else None
        self.checks.append(Check(f"breaking@{self.source}:{block.line}", "transcript",
                                 observed, "BREAKING >>> " + reply))

    def _end_of_move(self, player: _Player, last_message: str, turns: int) -> None:
        """The run loop's end-of-move rules (winner and reason), in the program's order."""
        last = last_message.lower().strip()
        other = next((n for n in self.players if n != player.name), None)
        if last == TOO_MANY_WRONG_ACTIONS.lower():
            self.winner, self.reason = other or "?", TOO_MANY_WRONG_ACTIONS
        elif is_game_over(self.board):
            self.winner, self.reason = _game_over(self.board, self.players, self.colours)
        elif last != MOVE_MADE.lower() and turns >= self.dv.max_turns:
            self.winner, self.reason = other or "?", "Max turns in single dialog"
        elif self.moves_made + 1 >= _MAX_GAME_MOVES:
            self.winner, self.reason = "NONE", "Max moves reached"
        elif last not in (MOVE_MADE.lower(), invalid_action_message(
                enable_reflection=self.dv.enable_reflection,
                actions=self.dv.actions).lower()) and not last.startswith(
                "failed to make move:"):
            self.winner, self.reason = "NONE", "Unknown issue, failed to make a move"

    def record(self, n_agent: int) -> GameRecord:
        """The game in the common corpus shape."""
        agent: Literal["white", "black"] = next(
            (c for n, c in self.colours.items() if is_llm_player(n)), "black")
        return GameRecord(
            game=self.game, run_group=self.run_group, variant=self.variant, agent_colour=agent,
            start_fen=chess.STARTING_FEN, moves=tuple(m.uci() for m in self.board.move_stack),
            termination=self.reason or ("incomplete" if not self.complete else "unknown"),
            attempts=n_agent,
        )

    def report(self, index: int, name: str | None, data: dict[str, Any] | None,
               note: str | None, *, next_start: str | None = None,
               shared: tuple[tuple[str, ...], list[Check]] | None = None) -> GameReport:
        against = ["transcript"]
        unavailable: list[str] = []
        checks = list(self.checks)
        outcome = self.outcome(with_sans="\nGame PGN:\n" in self.summary
                               or (data is not None and "pgn" in data))
        if self.complete:
            against.append("console")
            checks.extend(summary_checks(self.summary, outcome))
        else:
            unavailable.append("summary, counters, PGN: the capture ends before GAME OVER "
                               "(run aborted mid-game; no game JSON exists)")
        if name is not None and data is not None:
            against.append(name)
            found, missing = json_checks(name, data, outcome, next_start=next_start)
            checks.extend(found)
            unavailable.extend(missing)
            if note is not None:
                unavailable.append(f"token counts: {note}")
        elif shared is not None:
            names, shared_checks = shared
            against.extend(names)
            checks.extend(shared_checks)
            unavailable.append(f"game JSON: its token counts are shared with other games and "
                               f"match {list(names)}, so which is its own is unknown; every "
                               "one of them agrees with this game's replay")
        elif note is not None:
            unavailable.append(note)
        if not self.dv.action_counters:
            unavailable.append("get_board_count, get_legal_moves_count, make_move_count: not "
                               "recorded by this program version")
        return GameReport(index, self.game, self.start_line, self.complete, name, tuple(against),
                          tuple(unavailable), tuple(checks), dict(self.regenerated))

    def outcome(self, *, with_sans: bool = True) -> ReplayedGame:
        """The replay's outcome, as the run's records state it.

        ``with_sans`` False leaves the SAN move list empty (nothing recorded about the game
        holds a PGN to compare it with), sparing a SAN rendering of every move.
        """
        white = next((n for n, c in self.colours.items() if c == "white"), "")
        black = next((n for n, c in self.colours.items() if c == "black"), "")
        result = ("1/2-1/2" if self.winner == "NONE" else "1-0" if self.winner == white
                  else "0-1" if self.winner == black else "*")
        counters: dict[str, dict[str, int]] = {}
        for name, colour in self.colours.items():
            counters.setdefault(colour, dict(self.players[name].counters))
        return ReplayedGame(self.winner, self.reason, self.moves_made,
                            material_count(self.board), counters,
                            _move_text(self.dv, self.board.move_stack) if with_sans else (),
                            result)

    def signature(self) -> Signature:
        """(prompt, completion) tokens last printed for each colour's player."""
        out = {"white": (0, 0), "black": (0, 0)}
        for name, player in self.players.items():
            out[self.colours[name]] = player.tokens
        return out


def _move_text(dv: DispatcherVersion, moves: list[chess.Move]) -> tuple[str, ...]:
    """The moves of a game as ``dv`` writes them into its PGN (``pgn_moves``)."""
    if dv.pgn_moves == "uci":
        return tuple(move.uci() for move in moves)
    if dv.pgn_moves == "none":
        return ()
    return _sans(moves)


def _sans(moves: list[chess.Move]) -> tuple[str, ...]:
    """SAN of every move of a game from the starting position."""
    board = chess.Board()
    return tuple(board.san_and_push(move) for move in moves)  # ``san`` then ``push``, once


def _game_over(board: chess.Board, players: dict[str, _Player],
               colours: dict[str, Literal["white", "black"]]) -> tuple[str, str]:
    if board.is_checkmate():
        loser = "white" if board.turn == chess.WHITE else "black"
        return next((n for n, c in colours.items() if c != loser), "?"), "Checkmate"
    if board.is_stalemate():
        return "NONE", "Stalemate"
    if board.is_insufficient_material():
        return "NONE", "Insufficient material"
    if board.is_seventyfive_moves():
        return "NONE", "Seventy-five moves rule"
    return "NONE", "Fivefold repetition"


def refuse_exclusions(report: RunReport) -> None:
    """Raise a :class:`Refusal` listing every exclusion of a replayed run (``--strict``)."""
    reasons = [
        Reason(e.code, f"{game}: {e.detail}", subject=f"{report.folder}/output.txt:{e.line}",
               data={"game": game, "line": e.line})
        for game, found in report.exclusions.items() for e in found
    ]
    if reasons:
        raise Refusal(reasons, gate="llm chess replay (strict)")
