"""Registered design presets and their digests (DESIGN.md, "Conventions")."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import (
    load_design,
    load_design_file,
    parse_design,
    registered_names,
)
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

# Frozen digests of the registered presets: a change to any registered constant must
# change these, and the change must be deliberate (update here with the reason).
# A105 changed when gate 3's materiality rules moved into its [analysis.material] table, and
# both when every key came to drive the code (docs/presets.md): keys read by nothing went
# (lower_is_better, A105's [factors], [panels] and sensitivities, E023's rank_source_depth),
# the retry cap, the catastrophic threshold and the interval method were registered.
# E023 changed again when it registered its [falsifiers] table and the endpoint-validity
# inputs (selectors.wdl_regret_by_rank, analysis.primary_endpoints: design/endpoint_validity.py).
A105_DIGEST = "sha256:7f8ac2f6723597030f71454085edb47b87219d7c975b8d8872118e54af319e1a"
E023_DIGEST = "sha256:aaa0e76dab1857346b58db8547a3874db32abac0e00b9b349255b2825a6ba8c0"


def test_presets_registered() -> None:
    """Both seed presets ship with the package."""
    assert {"a105", "e023"} <= set(registered_names())


def test_digests_are_frozen() -> None:
    """The preset digests equal the recorded ones."""
    assert load_design("a105").digest == A105_DIGEST
    assert load_design("e023").digest == E023_DIGEST


def test_digest_is_of_parsed_document() -> None:
    """The digest is sha256 of the canonical JSON of the tomllib parse."""
    text = (resources.files("rungbench.designs") / "a105.toml").read_text(encoding="utf-8")
    assert load_design("a105").digest == digest(tomllib.loads(text))


def test_comments_and_order_do_not_change_digest() -> None:
    """Reordered keys and comments give the same digest; a changed constant does not."""
    one = parse_design("a = 1\nb = [1, 2]\n", name="t", source="t")
    two = parse_design("# note\nb = [1, 2]  # list\na = 1\n", name="t", source="t")
    three = parse_design("a = 2\nb = [1, 2]\n", name="t", source="t")
    assert one.digest == two.digest != three.digest


def test_bad_toml_names_source_and_line(tmp_path: Path) -> None:
    """Malformed TOML raises InputError naming the file and line."""
    path = tmp_path / "bad.toml"
    path.write_text("a = 1\nb = = 2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.toml:2"):
        load_design_file(path)


def test_unknown_design_raises() -> None:
    """An unknown preset name raises InputError listing the registered ones."""
    with pytest.raises(InputError, match="a105"):
        load_design("nope")


def test_a105_constants() -> None:
    """A105: four conditions, two orders, two models, 150 + 150 positions, Holm over four."""
    d = factorial_design()
    assert d.condition_names == ("no_information", "board_only", "legal_list_only",
                                 "board_plus_legal_list")
    assert d.condition("board_only").present == (True, False)
    assert d.orders == ("board_first", "legal_list_first")
    assert len(d.models) == 2 and d.splits == (("development", 150), ("held_out", 150))
    assert d.gate.alpha == 0.05 and d.gate.family_size == 4
    assert d.planned_cells == 4800 and d.planned_requests_per_model == 2400


def test_e023_constants() -> None:
    """E023: 200 positions, width 5, four arms all holding rank 1, near − far primary."""
    d = arms_design()
    assert (d.positions, d.width, d.rotation) == (200, 5, 1)
    assert len(d.arms) == 4 and all(a.ranks[0] == 1 and len(a.ranks) == 5 for a in d.arms)
    assert d.arm("near_strong").ranks == (1, 2, 3, 4, 5)
    assert d.primary_contrast == ("near_strong", "far_tail")


def test_bad_arm_raises(tmp_path: Path) -> None:
    """An arm without rank 1 raises InputError naming the arm's field."""
    text = (resources.files("rungbench.designs") / "e023.toml").read_text(encoding="utf-8")
    path = tmp_path / "e.toml"
    path.write_text(text.replace("ranks = [1, 2, 3, 4, 5]", "ranks = [2, 3, 4, 5, 6]"),
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"arms\[0\]\.ranks"):
        arms_design(load_design_file(path))
