"""Budget authorizations: frozen objects whose scope and ceilings gate a study run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.chess.studies.budget import (
    Authorization,
    Spend,
    coverage_reasons,
    freeze_authorization,
    load_authorization,
    next_chunk,
)
from rungbench.errors import InputError, IntegrityError, Refusal

AUTH = Authorization(100, 10_000, 1.0, ("luna",), ("loop-a",), "pi")


def test_authorization_is_content_addressed(tmp_path: Path) -> None:
    """Freezing one authorization twice gives one digest; reading re-hashes it."""
    a = freeze_authorization(tmp_path, AUTH)
    assert freeze_authorization(tmp_path, AUTH) == a
    digest, auth = load_authorization(tmp_path, a[7:20])
    assert digest == a and auth == AUTH
    path = next((tmp_path / "budget").glob("*.json"))
    path.write_bytes(path.read_bytes().replace(b'"pi"', b'"me"'))
    with pytest.raises(IntegrityError):
        load_authorization(tmp_path, a)


def test_missing_authorization_refuses(tmp_path: Path) -> None:
    """No frozen authorization is a budget_unauthorized refusal."""
    with pytest.raises(Refusal) as err:
        load_authorization(tmp_path, "abc")
    assert err.value.reasons[0].code == "budget_unauthorized"


@pytest.mark.parametrize("kw", [{"authorized_by": " "}, {"models": ()}, {"max_cells": -1},
                                {"max_cost_usd": float("nan")}, {"first_chunk": 0},
                                {"chunk_cap": True}])
def test_malformed_authorization_is_an_input_error(kw: dict[str, object]) -> None:
    """An authorization without a signer, scope, finite ceilings or chunk sizes of at least
    one cell is refused."""
    args: dict[str, object] = {"max_cells": 1, "max_tokens": 1, "max_cost_usd": 1.0,
                               "models": ("m",), "routes": ("r",), "authorized_by": "x"}
    with pytest.raises(InputError):
        Authorization(**{**args, **kw})  # type: ignore[arg-type]


def test_coverage_and_exhaustion() -> None:
    """Uncovered model/route/binding and exhausted ceilings each give their reason."""
    none = Spend(0, 0, 0, 0.0)
    assert coverage_reasons(AUTH, binding="b", model="luna", route="loop-a", pending=5,
                            spent=none) == []
    codes = {r.code for r in coverage_reasons(
        AUTH, binding="b", model="x", route="y", pending=5, spent=Spend(100, 100, 10_000, 1.0))}
    assert codes == {"budget_model_not_covered", "budget_route_not_covered",
                     "budget_cells_exhausted", "budget_tokens_exhausted",
                     "budget_cost_exhausted"}


def test_next_chunk_never_crosses_a_ceiling() -> None:
    """The next chunk fits every ceiling at the largest per-cell spend seen."""
    spent = Spend(10, 10, 9_000, 0.5)
    assert next_chunk(AUTH, spent, 100, 0.01, cap=64) == 10
    assert next_chunk(AUTH, spent, 10, 0.1, cap=64) == 5
    assert next_chunk(AUTH, Spend(100, 100, 0, 0.0), 1, 0.0, cap=64) == 0


def test_the_chunk_sizes_are_recorded_in_the_authorization(tmp_path: Path) -> None:
    """The first chunk (sent before any spend is known) and the chunk cap are part of the
    frozen document: another value is another authorization, and reading restores both."""
    wide = Authorization(100, 10_000, 1.0, ("luna",), ("loop-a",), "pi", first_chunk=4,
                         chunk_cap=32)
    assert AUTH.to_json()["first_chunk"] == 1 and AUTH.to_json()["chunk_cap"] == 256
    a, b = freeze_authorization(tmp_path, AUTH), freeze_authorization(tmp_path, wide)
    assert a != b
    assert load_authorization(tmp_path, b)[1] == wide
