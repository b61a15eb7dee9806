"""Tokenizer for AutoGen console captures (the ``output.txt`` of an LLM Chess run).

A message prints as::

    <Sender> (to <Recipient>):\\n\\n<content>\\n[<tool-call displays>\\n]\\n<80 dashes>\\n

and between messages the program prints its own lines (``MADE MOVE n``, token
counts, ``BREAKING >>> ...``, the ``GAME OVER`` summary). ``tokenize`` splits a
capture into :class:`Block` (messages, with byte ranges) and :class:`Marker`
(program lines); the game replay lives in :mod:`rungbench.chess.transcripts.llmchess`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rungbench.chess.transcripts.corpus import DASHES, frozen_record
from rungbench.errors import Reason, Refusal

_HEADER_BYTES = re.compile(rb"^(?P<sender>[A-Za-z0-9_]+) \(to (?P<recipient>[A-Za-z0-9_]+)\):\n\n",
                           re.M)
"""A message header line followed by its blank line, found without decoding."""
_TERMINATOR = ("\n\n" + DASHES + "\n").encode()
_TO = b" (to "
"""The literal every header line holds (after the sender, which has no space)."""


@dataclass(frozen=True)
class Block:
    """One printed message."""

    sender: str
    """Who sent it."""
    recipient: str
    """Who received it."""
    body: str
    """Content plus any tool-call displays."""
    line: int
    """1-based line of the header."""
    body_line: int
    """1-based line where the body starts."""
    span: tuple[int, int]
    """Byte range [start, end) of the body."""


@dataclass(frozen=True)
class Marker:
    """One program line printed between messages."""

    kind: str
    """``made_move``, ``tokens``, ``breaking``, ``game_over``, or ``other``."""
    line: int
    """1-based line."""
    text: str
    """The line (for ``game_over``: the whole summary up to the next message)."""


Event = Block | Marker


def tokenize(data: bytes, *, path: str) -> list[Event]:
    """Split a console capture into messages and program lines, with byte offsets.

    A message whose closing dashed line is missing means the capture was cut inside
    a message: that is refused (reason ``truncated``) naming the file and line.
    """
    events: list[Event] = []
    pos, line, size, tail = 0, 1, len(data), len(_TERMINATOR)
    names: dict[bytes, str] = {}  # each participant's name, decoded once
    while pos < size:
        # (a header right at ``pos`` is the leftmost, so what the search would find)
        header = _HEADER_BYTES.match(data, pos) or next_header(data, pos)
        gap_end = header.start() if header else size
        if gap_end > pos:  # program lines between two messages, split once
            line = _markers(data[pos:gap_end].decode("utf-8"), line, events)
        if header is None:
            break
        sender_raw, recipient_raw = header.group(1, 2)
        sender = names.get(sender_raw) or names.setdefault(sender_raw, sender_raw.decode())
        recipient = (names.get(recipient_raw)
                     or names.setdefault(recipient_raw, recipient_raw.decode()))
        body_start = header.end()
        stop = data.find(_TERMINATOR, body_start)
        if stop < 0:
            raise Refusal([Reason(
                "truncated", f"{path}:{line}: message from {sender} has no "
                "closing dashed line (transcript cut inside a message)",
                subject=f"{path}:{line}", data={"path": path, "line": line})],
                gate="llm chess transcript")
        body = data[body_start:stop].decode("utf-8")
        events.append(frozen_record(Block, sender=sender, recipient=recipient, body=body,
                                    line=line, body_line=line + 2, span=(body_start, stop)))
        line += 2 + data.count(b"\n", body_start, stop + tail)
        pos = stop + tail
    return events


def next_header(data: bytes, pos: int) -> re.Match[bytes] | None:
    """``_HEADER_BYTES.search(data, pos)``, found by the literal `` (to `` instead of trying
    the pattern at every byte: a header starts a line (at or after ``pos``) whose first
    `` (to `` directly follows the sender, so only those line starts are tried."""
    find = data.find
    at = find(_TO, pos)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if start >= pos:
            header = _HEADER_BYTES.match(data, start)
            if header is not None:
                return header
        end = find(b"\n", at)
        if end < 0:
            return None
        at = find(_TO, end + 1)
    return None


def _markers(text: str, line: int, events: list[Event]) -> int:
    """Append the program lines of ``text`` (which ends before a message header or at the
    end of the capture) as markers; a ``GAME OVER`` line takes the rest of ``text`` as its
    summary. Return the line number after ``text``."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # text ends with a newline
    for i, item in enumerate(lines):
        if item == "GAME OVER":
            events.append(Marker("game_over", line, "\n".join(lines[i:])
                                 + ("\n" if text.endswith("\n") else "")))
            return line + len(lines) - i
        events.append(frozen_record(Marker, kind=_marker_kind(item), line=line, text=item))
        line += 1
    return line


def _marker_kind(text: str) -> str:
    if text.startswith("MADE MOVE "):
        return "made_move"
    if text.startswith(("Prompt Tokens: ", "Completion Tokens: ")):
        return "tokens"
    if text.startswith("BREAKING >>> "):
        return "breaking"
    return "other"
