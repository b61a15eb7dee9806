"""Which LLM Chess program version wrote a run: ``_run.json``, dated evidence, or an override.

The program changed over its public history (late 2024 to late 2025), and a run
replayed with the wrong dispatcher would disagree with itself game after game.
The version is therefore decided before any game is replayed, in this order:

1. ``--dispatcher VERSION`` (an override): that version, with the run's
   ``_run.json`` configuration applied when there is one;
2. ``_run.json`` (written from August 2025 on): the August 2025 program with the
   run's configuration, every configuration key known and replayable;
3. dated evidence otherwise: the run's dates (game JSON ``time_started``, PGN
   ``[Date]`` headers, the folder name) must fall inside a version's evidence
   window *and* the run's own prompts must be that version's (every opening
   turn prompt and every invalid-action reply, byte for byte).

When nothing matches, the run is refused naming its dates and, per candidate
version, what did not match; it is never assumed to be January 2025's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rungbench.chess.transcripts.console import Block, Event
from rungbench.chess.transcripts.dispatch import (
    PREVIOUS_MOVES_PREFIX_TEXT,
    VERSIONS,
    DispatcherVersion,
    invalid_action_message,
    is_llm_player,
    strip_previous_moves,
    turn_prompt,
    version,
)
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import loads_canonical

AUGUST_2025 = "llmchess-2025-08"
"""The program that writes ``_run.json``."""

RUN_CONFIG_KEYS = frozenset({
    "enable_reflection", "board_representation_mode", "rotate_board_for_white",
    "max_game_moves", "max_llm_turns", "max_failed_attempts", "throttle_delay",
    "dialog_turn_delay", "max_api_retries", "api_retry_delay", "random_print_board",
    "visualize_board", "remove_text",
})
"""``_run.json`` configuration keys of the August 2025 program (all of them are modelled
or do not affect the dialogue: delays, retries, printing)."""

_DATE = re.compile(r"(20\d\d)[.-](\d\d)[.-](\d\d)")
_PGN_DATE = re.compile(rb'\[Date "(20\d\d\.\d\d\.\d\d)"\]')


@dataclass(frozen=True)
class Detection:
    """The program version a run is replayed with, and why."""

    version: DispatcherVersion
    """The dispatcher version (with the run's configuration applied)."""
    how: Literal["override", "_run.json", "dated evidence"]
    """Which rule decided it."""
    dates: tuple[str, ...]
    """Every run date found (``YYYY.MM.DD``), sorted."""

    def to_json(self) -> dict[str, Any]:
        """Return the detection as a JSON-ready mapping."""
        return {"version": self.version.name, "how": self.how, "dates": list(self.dates)}


def run_dates(folder: Path, output: bytes,
              jsons: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Dates of a run: game JSON ``time_started``, PGN ``[Date]`` headers, the folder name's
    trailing date (:func:`_folder_date`).

    ``jsons`` are the run's parsed game JSONs by file name, when already read.
    """
    found = {m.decode() for m in _PGN_DATE.findall(output)}
    if jsons is None:
        jsons = {p.name: loads_canonical(p.read_bytes(), path=str(p))
                 for p in folder.glob("*.json") if not p.name.startswith("_")}
    for data in jsons.values():
        match = _DATE.match(str(data.get("time_started", ""))) if isinstance(data, dict) else None
        if match:
            found.add(".".join(match.groups()))
    folder_date = _folder_date(folder.name)
    if folder_date:
        found.add(folder_date)
    return tuple(sorted(found))


def _folder_date(name: str) -> str | None:
    """The run's own date in a run folder's name: its last date (``YYYY-MM-DD``), the one
    LLM Chess appends when it names the log folder; a date earlier in the name belongs to
    the model (``o3-mini-2025-01-31-high_2025-03-01_1`` ran on 2025.03.01)."""
    dates = _DATE.findall(name)
    return ".".join(dates[-1]) if dates else None


def run_file(folder: Path, name: str, files: Mapping[str, bytes] | None) -> bytes | None:
    """The bytes of the file ``name`` of a run: from ``files`` (every file of the run, already
    read) when given, else from ``folder`` on disk; None when the run has no such file."""
    if files is not None:
        return files.get(name)
    path = folder / name
    return path.read_bytes() if path.is_file() else None


def detect(folder: Path, output: bytes, events: Sequence[Event], *,
           override: str | None = None, jsons: Mapping[str, Any] | None = None,
           files: Mapping[str, bytes] | None = None) -> Detection:
    """Decide the program version of the run in ``folder`` (see the module docstring).

    ``jsons`` are the run's parsed game JSONs by file name, when already read; ``files``
    every file of the run by name, when already read (see :func:`run_file`).
    """
    dates = run_dates(folder, output, jsons)
    run_json = folder / "_run.json"
    raw = run_file(folder, "_run.json", files)
    config = _run_config(run_json, raw) if raw is not None else None
    if override is not None:
        dv = version(override)
        return Detection(_configured(dv, config, run_json) if config is not None else dv,
                         "override", dates)
    if config is not None:
        dv = _configured(version(AUGUST_2025), config, run_json)
        problem = fingerprint_mismatch(dv, events)
        if problem:
            raise _unknown(folder, dates, [f"{dv.name} (from _run.json): {problem}"])
        return Detection(dv, "_run.json", dates)
    if not dates:
        raise _unknown(folder, dates, ["no _run.json, and no date in the game JSONs, the PGN "
                                       "headers or the folder name"])
    misses, hits = [], []
    for dv in VERSIONS.values():
        first, last = dv.evidence_window
        if not first:
            continue
        if not (first <= dates[0] and dates[-1] <= last):
            misses.append(f"{dv.name}: dates {dates[0]}..{dates[-1]} outside its window "
                          f"{first}..{last}")
            continue
        problem = fingerprint_mismatch(dv, events)
        if problem:
            misses.append(f"{dv.name}: {problem}")
        else:
            hits.append(dv)
    if len(hits) != 1:
        reasons = misses if not hits else [f"several versions match: {[h.name for h in hits]}"]
        raise _unknown(folder, dates, reasons)
    return Detection(hits[0], "dated evidence", dates)


def fingerprint_mismatch(dv: DispatcherVersion, events: Sequence[Event]) -> str | None:
    """The first prompt of the run that ``dv`` would not have printed, or None.

    Checked: every opening prompt to an LLM player (:func:`is_llm_player`) and every
    invalid-action reply, against the texts the version prints; a version that prints the
    moves so far before its prompts needs at least one prompt to carry them.
    """
    invalid = invalid_action_message(enable_reflection=dv.enable_reflection, actions=dv.actions)
    openings = {turn_prompt(c, enable_reflection=dv.enable_reflection, actions=dv.actions)
                for c in ("white", "black")}
    previous: Block | None = None
    prefixed = False
    for event in events:
        if not isinstance(event, Block):
            continue
        opening = previous is None or previous.sender != event.recipient
        if event.sender == "Proxy" and event.body.startswith("Invalid action.") and (
                event.body != invalid):
            return f"line {event.body_line}: invalid-action reply {event.body[:90]!r} differs"
        if opening and event.sender == "Proxy" and is_llm_player(event.recipient):
            if not _opening_ok(dv, event.body, openings):
                return f"line {event.body_line}: turn prompt {event.body[:90]!r} differs"
            prefixed = prefixed or event.body.startswith(PREVIOUS_MOVES_PREFIX_TEXT)
        previous = event
    if dv.previous_moves_in_prompt and not prefixed:
        return (f"no turn prompt starts with {PREVIOUS_MOVES_PREFIX_TEXT!r} (this version "
                "prints the moves so far before every prompt after the first move)")
    return None


def _opening_ok(dv: DispatcherVersion, body: str, openings: set[str]) -> bool:
    if dv.previous_moves_in_prompt:
        body = strip_previous_moves(body)
    if dv.candidates_in_prompt:
        return body.startswith("Current board state:\n") and any(
            body.endswith("\n\n" + o) for o in openings) and "\n\nLegal moves:\n" in body
    return body in openings


def _run_config(path: Path, raw: bytes) -> dict[str, Any]:
    data = loads_canonical(raw, path=str(path))
    config = data.get("config") if isinstance(data, dict) else None
    if not isinstance(config, dict):
        raise _unknown(path.parent, (), [f"{path.name} has no config mapping"])
    return config


def _configured(dv: DispatcherVersion, config: dict[str, Any], path: Path) -> DispatcherVersion:
    unknown = sorted(set(config) - RUN_CONFIG_KEYS)
    problems = [f"config key(s) {unknown} are not modelled"] if unknown else []
    mode = config.get("board_representation_mode", "UNICODE_ONLY")
    if mode not in ("UNICODE_ONLY", "FEN_ONLY"):
        problems.append(f"board_representation_mode {mode!r} is not replayable")
    if config.get("rotate_board_for_white"):
        problems.append("rotate_board_for_white true is not replayable")
    if int(config.get("max_game_moves", 200)) != 200:
        problems.append(f"max_game_moves {config['max_game_moves']} is not 200")
    if problems:
        raise _unknown(path.parent, (), [f"{path.name}: {p}" for p in problems])
    board_mode: Literal["UNICODE_ONLY", "FEN_ONLY"] = (
        "FEN_ONLY" if mode == "FEN_ONLY" else "UNICODE_ONLY")
    return dv.with_config(
        remove_text=config.get("remove_text"),
        enable_reflection=bool(config.get("enable_reflection")),
        max_failed_attempts=int(config.get("max_failed_attempts", 3)),
        max_turns=int(config.get("max_llm_turns", 10)), board_mode=board_mode,
    )


def _unknown(folder: Path, dates: Sequence[str], misses: Sequence[str]) -> Refusal:
    when = f"dated {dates[0]}..{dates[-1]}" if dates else "undated"
    return Refusal([Reason(
        "unknown_program_version",
        f"{folder}: no known LLM Chess program version matches this run ({when}): "
        + "; ".join(misses) + ". Name one with --dispatcher VERSION "
        f"(known: {', '.join(sorted(VERSIONS))}).",
        subject=str(folder), data={"dates": list(dates), "misses": list(misses)})],
        gate="llm chess program version")
