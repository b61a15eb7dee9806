"""A104 transition census over a verified transcript corpus.

Seed 000, "First, preserve the chronology exactly".

Order of work, as A104 registered it: verify every frozen source file, response
byte range, parser-visible response and reconstructed chess state *before*
counting anything; then group eligible attempts into chains at the exact same
(game, ply, position), form only consecutive same-position transitions, and
tabulate the prior response (board query / legal-list query / non-tool
unresolved) against whether the next response contained a legal command the
historical parser accepted. Any verification failure refuses the whole census.
"""

from __future__ import annotations

import gc
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
from rungbench.chess.transcripts.corpus import (
    Attempt,
    Corpus,
    is_native_corpus,
    load_corpus,
    split_tool_calls,
)
from rungbench.chess.transcripts.dispatch import (
    TOO_MANY_WRONG_ACTIONS,
    DispatcherVersion,
    VerdictKind,
    dispatch,
    fen_of,
    is_board_display,
    is_legal_list,
    rendered,
)
from rungbench.chess.transcripts.eligibility import EXCLUSION_REASONS
from rungbench.chess.transcripts.frozen import is_frozen_corpus, read_frozen, run_folders
from rungbench.chess.transcripts.llmchess import (
    RunReport,
    is_llmchess_folder,
    read_run,
    refuse_exclusions,
)
from rungbench.chess.transcripts.llmchess_checks import COUNTERS
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import digest
from rungbench.stats import clopper_pearson

CENSUS_SCHEMA = "rungbench.chess.census/1"

CLAIM_BOUNDARY = (
    "This census describes what followed the agent's own tool calls; it does not "
    "measure what the tools did. The agent chose when to ask for the board or the "
    "legal-move list, so each rate is conditioned on that choice and on whatever "
    "led to it (the position, an earlier failed reply, the variant, the attempt "
    "depth). The rates are chronology, not effects: the non-tool row is not a "
    "control group, differences between rows are not causal contrasts, and an "
    "accepted command says nothing about move quality. Learning what revealing the "
    "board or the list changes needs randomized, byte-matched assignment (A105)."
)
"""The claim boundary, stated with every census (seed 000, "Why 99.68% is not an effect size")."""

PRIOR_CLASSES = ("board_query", "legal_list_query", "non_tool_unresolved", "reflection")
"""Rows of the transition table; reflection is kept apart rather than merged into another row."""

_ACCEPTED = VerdictKind.MOVE_ACCEPTED.value
_VALUES = {kind: kind.value for kind in VerdictKind}
"""Each verdict kind's value (read once: ``Enum.value`` is a Python-level property)."""
_BOARD = VerdictKind.BOARD_QUERY.value
_LEGAL = VerdictKind.LEGAL_QUERY.value

_PRIOR = {
    VerdictKind.BOARD_QUERY.value: "board_query",
    VerdictKind.LEGAL_QUERY.value: "legal_list_query",
    VerdictKind.INVALID_ACTION.value: "non_tool_unresolved",
    VerdictKind.MOVE_REJECTED.value: "non_tool_unresolved",
    VerdictKind.REFLECTION.value: "reflection",
    VerdictKind.REFLECTION_FOLLOWUP.value: "reflection",
}


@dataclass(frozen=True)
class Row:
    """One row of the transition table."""

    prior: str
    """Class of the prior response."""
    transitions: int
    """Consecutive same-position transitions from that class."""
    accepted: int
    """Of those, how many next responses contained an accepted legal command."""

    def to_json(self, alpha: float) -> dict[str, Any]:
        """Return the row with its rate and Clopper–Pearson interval (None when n = 0)."""
        if self.transitions == 0:
            return {"prior": self.prior, "transitions": 0, "accepted": 0, "rate": None,
                    "ci": None}
        low, high = clopper_pearson(self.accepted, self.transitions, alpha)
        return {"prior": self.prior, "transitions": self.transitions, "accepted": self.accepted,
                "rate": self.accepted / self.transitions, "ci": [low, high]}


def is_eligible(attempt: Attempt) -> bool:
    """An attempt counts when the agent under study made it and the dispatcher answered it."""
    return attempt.role == "agent" and attempt.verdict is not None


def _location(corpus: Corpus, index: int, attempt: Attempt) -> str:
    if corpus.origin.get("format") == "llm_chess":
        return f"{corpus.records_path}:{attempt.line}"
    return f"{corpus.records_path}:{index + 1} ({attempt.source}:{attempt.line})"


def _reason(code: str, where: str, detail: str, **data: Any) -> Reason:
    return Reason(code, f"{where}: {detail}", subject=where, data={"location": where, **data})


def verify(corpus: Corpus) -> list[Reason]:
    """Check every byte range, response, verdict, position and prompt; return the defects."""
    reasons: list[Reason] = []
    boards = _game_boards(corpus, reasons)
    played = {game.game: game.moves for game in corpus.games}  # the games _game_boards kept
    fens: dict[tuple[str, int], str] = {}
    lines = {name: _Lines(data) for name, data in corpus.sources.items()}
    for index, attempt in enumerate(corpus.attempts):
        defects = _check_bytes(corpus, attempt, lines)
        positions = boards.get(attempt.game, {})
        board = positions.get(attempt.ply)
        if board is None:
            defects.append(("state_mismatch", f"game {attempt.game!r} has no position at ply "
                            f"{attempt.ply}"))
        else:
            key = (attempt.game, attempt.ply)
            fen = fens[key] if key in fens else fens.setdefault(key, fen_of(board))
            if fen != attempt.fen_before:
                defects.append(("state_mismatch", f"recorded position {attempt.fen_before!r} "
                                f"but the game's moves give {fen!r}"))
            else:
                moves = played.get(attempt.game, ())
                known = (attempt.ply + 1 in positions and attempt.ply < len(moves)
                         and moves[attempt.ply] == attempt.move)
                defects += _check_verdict(corpus, attempt, board, fen, known_legal=known)
        if defects:  # the location is spelled out only for an attempt that has a defect
            where = _location(corpus, index, attempt)
            reasons.extend(_reason(code, where, detail) for code, detail in defects)
    reasons.extend(_check_chronology(corpus))
    reasons.extend(_check_completeness(corpus))
    return reasons


def _game_boards(corpus: Corpus, reasons: list[Reason]) -> dict[str, dict[int, chess.Board]]:
    """Every position of every game, rebuilt from the game's moves."""
    out: dict[str, dict[int, chess.Board]] = {}
    for game in corpus.games:
        board = chess.Board(game.start_fen)
        positions = {0: board.copy(stack=False)}
        for ply, uci in enumerate(game.moves):
            move = chess.Move.from_uci(uci)
            if not board.is_legal(move):  # what ``move in board.legal_moves`` asks
                reasons.append(Reason("illegal_game_move", f"game {game.game}: move {uci} at "
                                      f"ply {ply} is illegal", subject=game.game))
                break
            board.push(move)
            positions[ply + 1] = board.copy(stack=False)
        out[game.game] = positions
    return out


class _Lines:
    """Line numbers of byte offsets in one source, counted on from the previous offset asked
    (a census asks in file order), from the start again when an offset lies behind it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0
        self.newlines = 0

    def line(self, offset: int) -> int:
        """The 1-based line holding byte ``offset``: one more than the newlines before it."""
        offset = max(offset, 0)
        if offset < self.offset:
            self.offset = self.newlines = 0
        self.newlines += self.data.count(b"\n", self.offset, offset)
        self.offset = offset
        return self.newlines + 1


def _check_bytes(corpus: Corpus, attempt: Attempt,
                 lines: dict[str, _Lines]) -> list[tuple[str, str]]:
    """The (reason code, detail) of each defect of an attempt's byte ranges and line."""
    data = corpus.sources.get(attempt.source)
    if data is None:
        return [("absent", f"source {attempt.source!r} is not in the corpus")]
    out = []
    line = lines[attempt.source].line(attempt.response_range[0])
    if line != attempt.line:
        out.append(("line_mismatch", f"response starts on line {line} of "
                    f"{attempt.source}, record says {attempt.line}"))
    calls = split_tool_calls(attempt.response)[1]
    names = tuple([c.name for c in calls]) if calls else ()
    if names != attempt.tool_calls:
        out.append(("tool_calls_mismatch", f"displayed tool calls {names} differ "
                    f"from recorded {attempt.tool_calls}"))
    for label, (start, end), text in (("response", attempt.response_range, attempt.response),
                                      ("prompt", attempt.prompt_range, attempt.prompt)):
        if not 0 <= start <= end <= len(data):
            out.append(("range_outside_file", f"{label} byte range [{start}, "
                        f"{end}) lies outside {attempt.source} ({len(data)} bytes)"))
        elif data[start:end] != text.encode("utf-8"):
            out.append((f"{label}_bytes_mismatch", f"{label} text differs from "
                        f"bytes [{start}, {end}) of {attempt.source}"))
    return out


def _check_verdict(corpus: Corpus, attempt: Attempt, board: chess.Board,
                   fen: str, *, known_legal: bool = False) -> list[tuple[str, str]]:
    """The (reason code, detail) of a recorded verdict's defect, regenerated at ``fen``.

    ``known_legal``: the attempt's move is the game's move from this very position, which
    :func:`_game_boards` found legal there (it keeps a position after a move only then),
    so its legality is not asked again.
    """
    if attempt.verdict is None:
        return []
    dv = corpus.dispatchers.get(attempt.dispatcher)
    if dv is None:
        return [("absent", f"dispatcher {attempt.dispatcher!r} is not described")]
    if attempt.verdict == _ACCEPTED and not known_legal and not _is_legal(board, attempt.move):
        return [("illegal_accepted_move", f"move {attempt.move!r} is recorded as "
                 f"accepted but is illegal in {attempt.fen_before}")]
    verdict = dispatch(dv, attempt.content, board=board, previous_prompt=attempt.prompt, fen=fen)
    kind = _VALUES[verdict.kind]
    if (kind, verdict.move) != (attempt.verdict, attempt.move):
        return [("verdict_mismatch", f"recorded {attempt.verdict}/{attempt.move} "
                 f"but {dv.name} gives {kind}/{verdict.move}")]
    out = []
    if attempt.reply is not None and attempt.reply not in (verdict.reply, TOO_MANY_WRONG_ACTIONS):
        out.append(("reply_mismatch", f"recorded dispatcher reply is not the "
                    f"{kind} reply regenerated by python-chess"))
    return out


def _is_legal(board: chess.Board, uci: str | None) -> bool:
    try:
        return uci is not None and board.is_legal(chess.Move.from_uci(uci))  # ``in legal_moves``
    except ValueError:
        return False


def _dialogues(attempts: Iterable[Attempt]) -> list[list[Attempt]]:
    """Attempts of one player's move dialogue (same game, ply, player), in order."""
    groups: dict[tuple[str, int, str], list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        groups[(attempt.game, attempt.ply, attempt.player)].append(attempt)
    return list(groups.values())


def _check_chronology(corpus: Corpus) -> list[Reason]:
    """Each dialogue's next prompt is the previous reply, in the shape its query implies."""
    index = {id(a): i for i, a in enumerate(corpus.attempts)}
    out = []
    for dialogue in _dialogues(corpus.attempts):
        for prev, nxt in itertools.pairwise(dialogue):
            if nxt.attempt != prev.attempt + 1 or prev.reply is None:
                detail = (f"attempt {nxt.attempt} follows attempt {prev.attempt} without a "
                          "dispatcher reply")
            elif nxt.prompt != prev.reply:
                detail = "prompt is not the dispatcher's reply to the previous attempt"
            elif not _shape_ok(corpus, prev, nxt.prompt):
                detail = f"prompt after a {prev.verdict} does not have the expected shape"
            else:
                continue
            out.append(_reason("chronology_mismatch", _location(corpus, index[id(nxt)], nxt),
                               detail))
    return out


def _shape_ok(corpus: Corpus, prev: Attempt, prompt: str) -> bool:
    """The prompt after a query has the display's shape and is the display of that position."""
    dv = corpus.dispatchers.get(prev.dispatcher)
    if prev.verdict == _BOARD:
        mode = dv.board_mode if dv else "UNICODE_ONLY"
        shaped = is_board_display(prompt) if mode == "UNICODE_ONLY" else True
        return shaped and prompt == _display(prev.fen_before, "board", mode)
    if prev.verdict == _LEGAL:
        return is_legal_list(prompt) and prompt == _display(prev.fen_before, "legal", "")
    return True


def _display(fen: str, kind: str, mode: str) -> str:
    return rendered("board", mode, fen=fen) if kind == "board" else rendered("legal", "", fen=fen)


def _check_completeness(corpus: Corpus) -> list[Reason]:
    counts = Counter(a.game for a in corpus.attempts if a.role == "agent")
    out = []
    for game in corpus.games:
        if counts[game.game] != game.attempts:
            out.append(Reason("truncated", f"{corpus.records_path}: game {game.game} declares "
                              f"{game.attempts} agent attempts but {counts[game.game]} are "
                              "present", subject=corpus.records_path,
                              data={"game": game.game, "line": len(corpus.attempts) + 1}))
    return out


def chains(attempts: Sequence[Attempt]) -> list[list[Attempt]]:
    """Eligible attempts grouped at the exact same (game, ply, position), in order."""
    groups: dict[tuple[str, int, str], list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        if is_eligible(attempt):
            groups[(attempt.game, attempt.ply, attempt.fen_before)].append(attempt)
    return list(groups.values())


def transitions(chain_list: Sequence[Sequence[Attempt]]) -> list[tuple[Attempt, Attempt]]:
    """Consecutive same-position transitions: (prior, next) pairs inside each chain."""
    return [(a, b) for chain in chain_list for a, b in itertools.pairwise(chain)]


def transition_table(pairs: Sequence[tuple[Attempt, Attempt]]) -> list[Row]:
    """Counts of 'next response contains an accepted legal command' by class of prior response."""
    n: Counter[str] = Counter()
    k: Counter[str] = Counter()
    for prior, nxt in pairs:
        cls = _PRIOR.get(prior.verdict or "")
        if cls is None:
            continue
        n[cls] += 1
        k[cls] += nxt.verdict == _ACCEPTED
    return [Row(c, n[c], k[c]) for c in PRIOR_CLASSES]


def escalations(pairs: Sequence[tuple[Attempt, Attempt]]) -> dict[str, int]:
    """Board query followed at the same position by a legal-list query, by variant."""
    out: Counter[str] = Counter()
    for prior, nxt in pairs:
        if (prior.verdict, nxt.verdict) == (_BOARD, _LEGAL):
            out[prior.variant] += 1
    return dict(sorted(out.items()))


_CHRONO_KEYS = ("board_queries", "board_displays", "board_without_next_prompt",
                "list_queries", "uci_lists", "list_without_next_prompt")


def chronology(corpus: Corpus) -> dict[str, int]:
    """How many board/list queries were followed by the expected display (after verification).

    A query that ends its dialogue (the capture stops, or the turn limit is hit) has no
    following prompt; it is counted as ``*_without_next_prompt`` rather than reconciled.
    """
    counts = dict.fromkeys(_CHRONO_KEYS, 0)
    for dialogue in _dialogues(a for a in corpus.attempts if a.role == "agent"):
        for prev, nxt in zip(dialogue, [*dialogue[1:], None], strict=True):
            kind = {_BOARD: ("board_queries", "board_displays",
                                                    "board_without_next_prompt"),
                    _LEGAL: ("list_queries", "uci_lists",
                                                    "list_without_next_prompt")}.get(
                prev.verdict or "")
            if kind is None:
                continue
            counts[kind[0]] += 1
            if nxt is None:
                counts[kind[2]] += 1
            elif _shape_ok(corpus, prev, nxt.prompt):
                counts[kind[1]] += 1
    return counts


def _reconciled(c: dict[str, int]) -> bool:
    return (c["board_displays"] + c["board_without_next_prompt"] == c["board_queries"]
            and c["uci_lists"] + c["list_without_next_prompt"] == c["list_queries"])


def census(
    corpus: Corpus, *, alpha: float = 0.05, replay: Sequence[RunReport] = (),
) -> dict[str, Any]:
    """Verify ``corpus`` and return the canonical census document with its digest.

    ``corpus`` holds the eligible games only; ``replay`` gives, per LLM Chess run,
    the games that were excluded and why (the exclusion table). The document holds
    the pooled census (``counts``, ``transition_table``), one table per run
    (``runs``) and per variant (``variants``), escalations by variant, and the
    chronology reconciliation pooled and per run.

    The digest covers content only (file digests, folder names, counts), never where
    the corpus sits on disk, so the same corpus gives the same digest anywhere.

    Raises :class:`Refusal` listing every defect when verification fails; nothing is
    counted from a corpus that fails.
    """
    reasons = verify(corpus)
    if reasons:
        raise Refusal(reasons, gate="A104 census")
    eligible = [a for a in corpus.attempts if is_eligible(a)]
    chain_list = chains(corpus.attempts)
    pairs = transitions(chain_list)
    table = transition_table(pairs)
    runs = run_tables(corpus, pairs, replay, alpha)
    chrono = {key: sum(r["chronology"][key] for r in runs) for key in _CHRONO_KEYS}
    excluded = Counter("opponent" if a.role != "agent" else "not_dispatched"
                       for a in corpus.attempts if not is_eligible(a))
    exclusions = exclusion_table(replay)
    doc: dict[str, Any] = {
        "schema": CENSUS_SCHEMA,
        "corpus": corpus.origin,
        "dispatchers": {n: d.to_json() for n, d in sorted(corpus.dispatchers.items())},
        "counts": {
            "eligible_attempts": len(eligible),
            "excluded_attempts": dict(sorted(excluded.items())),
            "same_position_transitions": len(pairs),
            "position_chains": len(chain_list),
            "source_games": len({a.game for a in eligible}),
            "eligible_games": len(corpus.games),
            "excluded_games": len(exclusions),
            "run_groups": len({a.run_group for a in eligible}),
            "verdicts": dict(sorted(Counter(str(a.verdict) for a in eligible).items())),
        },
        "alpha": alpha,
        "transition_table": [row.to_json(alpha) for row in table],
        "board_to_list_escalations": escalations(pairs),
        "chronology": {**chrono, "reconciled": _reconciled(chrono)},
        "runs": runs,
        "variants": variant_tables(eligible, pairs, alpha),
        "exclusions": exclusions,
        "exclusions_by_reason": dict(sorted(Counter(e["reason"] for e in exclusions).items())),
        "exclusion_reasons": {code: EXCLUSION_REASONS[code]
                              for code in sorted({e["reason"] for e in exclusions})},
        "replay": [_replay_summary(r) for r in replay],
        "claim_boundary": CLAIM_BOUNDARY,
    }
    doc["digest"] = digest(doc)
    return doc


def exclusion_table(replay: Sequence[RunReport]) -> list[dict[str, Any]]:
    """One row per excluded game: run, game, line, reason code and what did not match."""
    rows = []
    for report in replay:
        for game, cause in report.excluded():
            rows.append({"run": Path(report.folder).name, "game": game.game,
                         "line": cause.line, "reason": cause.code, "detail": cause.detail,
                         "also": sorted({e.code for e in report.exclusions[game.game]}
                                        - {cause.code})})
    return rows


def run_tables(corpus: Corpus, pairs: Sequence[tuple[Attempt, Attempt]],
               replay: Sequence[RunReport], alpha: float) -> list[dict[str, Any]]:
    """Per run group: games eligible and excluded, attempts, transitions, table, chronology."""
    reports = {Path(r.folder).name: r for r in replay}
    by_run: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in corpus.attempts:
        by_run[attempt.run_group].append(attempt)
    pairs_by_run: dict[str, list[tuple[Attempt, Attempt]]] = defaultdict(list)
    for pair in pairs:
        pairs_by_run[pair[0].run_group].append(pair)
    out = []
    for run in sorted(set(by_run) | set(reports)):
        attempts = by_run.get(run, [])
        sub = Corpus(attempts=tuple(attempts), games=(), sources=corpus.sources,
                     dispatchers=corpus.dispatchers)
        chrono = chronology(sub)
        row: dict[str, Any] = {
            "run_group": run,
            "variant": sorted({a.variant for a in attempts})[0] if attempts else
            (reports[run].variant if run in reports else ""),
            "eligible_attempts": sum(is_eligible(a) for a in attempts),
            "same_position_transitions": len(pairs_by_run.get(run, [])),
            "transition_table": [r.to_json(alpha)
                                 for r in transition_table(pairs_by_run.get(run, []))],
            "board_to_list_escalations": escalations(pairs_by_run.get(run, [])),
            "chronology": {**chrono, "reconciled": _reconciled(chrono)},
        }
        if run in reports:
            row.update(_run_games(reports[run]))
        out.append(row)
    return out


def _run_games(report: RunReport) -> dict[str, Any]:
    excluded = report.excluded()
    eligible = [g for g in report.games if g.game not in report.exclusions]
    return {
        "dispatcher": report.dispatcher.name,
        "detection": report.detection.to_json() if report.detection else None,
        "games": len(report.games),
        "eligible_games": len(eligible),
        "excluded_games": dict(sorted(Counter(e.code for _, e in excluded).items())),
        "counters_reproduced": sum(
            any(c.name.split(".")[-1] in COUNTERS for c in g.checks) for g in eligible),
        "replies_regenerated": {
            kind: sum(g.replies_regenerated.get(kind, 0) for g in eligible)
            for kind in ("board", "legal", "other")},
    }


def variant_tables(eligible: Sequence[Attempt], pairs: Sequence[tuple[Attempt, Attempt]],
                   alpha: float) -> list[dict[str, Any]]:
    """Per interface variant: run groups, attempts, transitions and the transition table."""
    out = []
    for variant in sorted({a.variant for a in eligible}):
        mine = [p for p in pairs if p[0].variant == variant]
        out.append({
            "variant": variant,
            "run_groups": len({a.run_group for a in eligible if a.variant == variant}),
            "eligible_attempts": sum(a.variant == variant for a in eligible),
            "same_position_transitions": len(mine),
            "transition_table": [r.to_json(alpha) for r in transition_table(mine)],
        })
    return out


def _replay_summary(report: RunReport) -> dict[str, Any]:
    return {
        "folder": Path(report.folder).name, "dispatcher": report.dispatcher.name,
        "games": len(report.games),
        "complete_games": sum(g.complete for g in report.games),
        "games_with_json": sum(g.json_file is not None for g in report.games),
        "checks": sum(len(g.checks) for g in report.games) + len(report.run_checks),
        "disagreements": len(report.disagreements),
        "per_game": [{"game": g.game, "checked_against": list(g.checked_against),
                      "unavailable": list(g.unavailable), "checks": len(g.checks),
                      "disagreements": len(g.disagreements),
                      "eligible": g.game not in report.exclusions} for g in report.games],
    }


def merge(corpora: Sequence[Corpus]) -> Corpus:
    """Combine corpora whose source names and dispatcher names do not collide."""
    sources: dict[str, bytes] = {}
    dispatchers: dict[str, DispatcherVersion] = {}
    for corpus in corpora:
        for name, data in corpus.sources.items():
            if name in sources and sources[name] != data:
                raise InputError(f"two corpora hold different bytes under {name!r}", path=name)
            sources[name] = data
        for name, dv in corpus.dispatchers.items():
            if name in dispatchers and dispatchers[name] != dv:
                raise InputError(f"two corpora configure dispatcher {name!r} differently",
                                 field="dispatchers")
            dispatchers[name] = dv
    if len(corpora) == 1:
        return corpora[0]
    return Corpus(
        attempts=tuple(a for c in corpora for a in c.attempts),
        games=tuple(g for c in corpora for g in c.games), sources=sources,
        dispatchers=dispatchers, records_path=", ".join(c.records_path for c in corpora),
        origin={"format": "merged", "parts": [c.origin for c in corpora]},
    )


def load_any(path: Path, *, strict: bool = False,
             dispatcher: str | None = None) -> tuple[Corpus, list[RunReport]]:
    """Load a native corpus, an LLM Chess run folder, or a folder of run folders.

    A folder of runs with a ``corpus_manifest.json`` is frozen: every file is checked
    against it first, and any mismatch refuses the whole corpus. Each LLM Chess game
    is then replayed and verified on its own; a failing game is excluded with a
    registered reason, or, with ``strict``, refuses everything. ``dispatcher`` names
    the program version to replay every run with instead of the detected one.
    """
    if not path.is_dir():
        raise InputError("not a folder (expected a corpus or an LLM Chess log folder)",
                         path=str(path))
    if is_native_corpus(path):
        return load_corpus(path), []
    runs: list[tuple[Path, dict[str, bytes] | None]]
    if is_frozen_corpus(path):
        runs = list(read_frozen(path))  # the replay reads the verified bytes
    elif is_llmchess_folder(path):
        runs = [(path, None)]
    else:
        runs = [(run, None) for run in run_folders(path)]
    if not runs:
        raise InputError("no manifest.json and no LLM Chess output.txt found", path=str(path))
    reports = [read_run(run, dispatcher=dispatcher, files=files) for run, files in runs]
    if strict:
        for report in reports:
            refuse_exclusions(report)
    return merge([r.corpus for r in reports]), reports


def census_path(path: Path, *, alpha: float = 0.05, strict: bool = False,
                dispatcher: str | None = None) -> dict[str, Any]:
    """Load ``path`` (any accepted form), verify it and return its census document.

    The cyclic garbage collector is paused meanwhile (:func:`cyclic_gc_paused`)."""
    with cyclic_gc_paused():
        corpus, reports = load_any(path, strict=strict, dispatcher=dispatcher)
        doc = census(corpus, alpha=alpha, replay=reports)
        del corpus, reports  # freed before the collector resumes, not walked by it
    return doc


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, restoring its state after.

    A census allocates tens of thousands of long-lived, acyclic records (events, attempts,
    checks, boards), each allocation counting towards a collection that then walks the
    whole growing heap and frees nothing: about a tenth of a cold census's CPU time.
    Reference counting still frees everything as usual; any cycle waits for the next
    collection after the block. A collector already paused stays paused.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
