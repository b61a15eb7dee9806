"""AutoGen console tokenizer: messages with byte ranges, program lines, truncation."""

from __future__ import annotations

import pytest

from rungbench.chess.transcripts.console import Block, Marker, tokenize
from rungbench.chess.transcripts.corpus import DASHES
from rungbench.errors import Refusal
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
SEP = DASHES + "\n"
CAPTURE = (
    "Proxy (to Player_Black):\n\nYour move.\nTwo lines.\n\n" + SEP
    + "Player_Black (to Proxy):\n\nmake_move e7e5\n\n" + SEP
    + "MADE MOVE 1\nPrompt Tokens: 12\nCompletion Tokens: 3\nBREAKING >>> too many\n"
    + "Material Count - White: 39, Black: 39\n"
    + "GAME OVER\n\nWinner: NONE\nReason: Max moves\n"
    + "Proxy (to Player_White):\n\nnext\n\n" + SEP
).encode()


def test_blocks_carry_sender_lines_and_exact_byte_ranges() -> None:
    """Each message's byte range slices exactly its body out of the capture; lines are 1-based."""
    events = tokenize(CAPTURE, path="output.txt")
    blocks = [e for e in events if isinstance(e, Block)]
    assert [(b.sender, b.recipient) for b in blocks] == [
        ("Proxy", "Player_Black"), ("Player_Black", "Proxy"), ("Proxy", "Player_White")]
    assert [b.body for b in blocks] == ["Your move.\nTwo lines.", "make_move e7e5", "next"]
    for b in blocks:
        assert CAPTURE[b.span[0]:b.span[1]].decode() == b.body
        assert CAPTURE.decode().split("\n")[b.line - 1].startswith(f"{b.sender} (to ")
        assert CAPTURE.decode().split("\n")[b.body_line - 1] == b.body.split("\n")[0]
    assert [b.line for b in blocks] == [1, 7, 21]


def test_program_lines_are_classified_and_game_over_keeps_its_summary() -> None:
    """Between messages: made_move, tokens, breaking, other; GAME OVER holds the summary."""
    markers = [e for e in tokenize(CAPTURE, path="output.txt") if isinstance(e, Marker)]
    assert [(m.kind, m.line) for m in markers] == [
        ("made_move", 12), ("tokens", 13), ("tokens", 14), ("breaking", 15), ("other", 16),
        ("game_over", 17)]
    assert markers[-1].text == "GAME OVER\n\nWinner: NONE\nReason: Max moves\n"


def test_capture_cut_inside_a_message_refuses_naming_file_and_line() -> None:
    """A message with no closing dashed line is refused as truncated at its header's line."""
    cut = CAPTURE[:CAPTURE.index(b"make_move") + 4]
    with pytest.raises(Refusal) as info:
        tokenize(cut, path="run/output.txt")
    assert info.value.codes == ("truncated",)
    assert info.value.reasons[0].subject == "run/output.txt:7"


def test_every_bundled_capture_tokenizes_to_contiguous_events() -> None:
    """On every bundled public run every byte range is inside the file, ranges never overlap,
    and each message's bytes end just before its closing dashed line."""
    for run in sorted(p for p in DATA.iterdir() if p.is_dir()):
        data = (run / "output.txt").read_bytes()
        blocks = [e for e in tokenize(data, path=str(run)) if isinstance(e, Block)]
        assert len(blocks) >= 4, run
        assert all(data[b.span[1]:b.span[1] + 83] == b"\n\n" + b"-" * 80 + b"\n"
                   for b in blocks), run
        ends = [0]
        for b in blocks:
            assert ends[-1] <= b.span[0] <= b.span[1] <= len(data)
            ends.append(b.span[1])
