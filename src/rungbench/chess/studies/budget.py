"""Provider budget authorization (seed 001, "The evidence boundary": provider budget is
explicitly authorized before a design executes).

An authorization is a frozen, content-addressed object (``<study>/budget/<hex>.json``)
naming its ceilings (cells, tokens, US dollars), the models, routes and bindings it
covers and who authorized it. A study run is refused unless an authorization covers
its binding, model and route with room left under every ceiling given what earlier
runs under the same authorization already sent; the run then stops at the first ceiling.
Spend is never a separate counter that can drift: it is summed from the verified event
logs of every run the authorization covered (each run's manifest names the authorization digest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.store import write_atomic
from rungbench.execute.events import read_events
from rungbench.execute.run_dir import EVENTS, MANIFEST, run_manifest

BUDGET_SCHEMA = "rungbench.chess.budget-authorization/1"
"""Schema name and version of an authorization."""
GATE = "chess study budget"
"""Gate name of budget refusals."""


@dataclass(frozen=True)
class Authorization:
    """Ceilings and scope of one provider-budget authorization."""

    max_cells: int
    """Most cells the covered runs may send to a provider, in all."""
    max_tokens: int
    """Most prompt + completion tokens, in all."""
    max_cost_usd: float
    """Most US dollars, in all."""
    models: tuple[str, ...]
    """Model labels covered."""
    routes: tuple[str, ...]
    """Route (provider base URL) labels covered."""
    authorized_by: str
    """Who authorized the spend."""
    bindings: tuple[str, ...] = ()
    """Binding digests covered (empty: any binding of the study)."""
    first_chunk: int = 1
    """Cells a run sends before it knows any per-cell spend (the reserve a ceiling can be
    crossed by: with no spend seen, nothing bounds the first chunk's tokens or cost)."""
    chunk_cap: int = 256
    """Most cells per chunk once the per-cell spend is known (the run re-reads its spend
    from its own verified log between chunks)."""

    def __post_init__(self) -> None:
        for name in ("first_chunk", "chunk_cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} must be an integer >= 1, got {value!r}", field=name)
        for name in ("max_cells", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{name} must be an integer >= 0, got {value!r}", field=name)
        if not (isinstance(self.max_cost_usd, int | float) and math.isfinite(self.max_cost_usd)
                and self.max_cost_usd >= 0):
            raise InputError(f"max_cost_usd must be finite and >= 0, got {self.max_cost_usd!r}",
                             field="max_cost_usd")
        if not self.authorized_by.strip():
            raise InputError("an authorization must name who authorized it",
                             field="authorized_by")
        if not self.models or not self.routes:
            raise InputError("an authorization must name the models and routes it covers",
                             field="models")

    def to_json(self) -> dict[str, Any]:
        """Return the frozen document."""
        return {"schema": BUDGET_SCHEMA, "max_cells": self.max_cells,
                "max_tokens": self.max_tokens, "max_cost_usd": float(self.max_cost_usd),
                "models": sorted(self.models), "routes": sorted(self.routes),
                "bindings": sorted(self.bindings), "authorized_by": self.authorized_by,
                "first_chunk": self.first_chunk, "chunk_cap": self.chunk_cap}

    @classmethod
    def from_json(cls, data: dict[str, Any], *, path: str) -> Authorization:
        """Rebuild an authorization from its document."""
        if data.get("schema") != BUDGET_SCHEMA:
            raise InputError(f"not a {BUDGET_SCHEMA} document", path=path, field="schema")
        try:
            return cls(int(data["max_cells"]), int(data["max_tokens"]),
                       float(data["max_cost_usd"]), tuple(data["models"]),
                       tuple(data["routes"]), str(data["authorized_by"]),
                       tuple(data["bindings"]), int(data["first_chunk"]),
                       int(data["chunk_cap"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed authorization: {exc}", path=path) from exc


def budget_dir(study: Path) -> Path:
    """``<study>/budget``."""
    return study / "budget"


def freeze_authorization(study: Path, auth: Authorization) -> str:
    """Freeze ``auth`` in the study; return its digest (same document, same name)."""
    data = canonical_bytes(auth.to_json())
    name = bytes_digest(data)
    path = budget_dir(study) / f"{name[7:]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        write_atomic(path, data)
    elif path.read_bytes() != data:
        raise IntegrityError(f"{path} exists with other bytes than its name")
    return name


def load_authorization(study: Path, name: str) -> tuple[str, Authorization]:
    """Read authorization ``name`` (digest or hex prefix), re-hashed against its name."""
    hexpart = name.removeprefix("sha256:")
    found = sorted(budget_dir(study).glob(f"{hexpart}*.json")) if hexpart else []
    if len(found) != 1:
        raise Refusal([Reason("budget_unauthorized", f"{'no' if not found else 'more than one'}"
                              f" frozen budget authorization matches {name!r}",
                              subject=name)], gate=GATE)
    data = found[0].read_bytes()
    if bytes_digest(data)[7:] != found[0].stem:
        raise IntegrityError(f"{found[0]} does not hash to its name")
    return bytes_digest(data), Authorization.from_json(loads_canonical(data, path=str(found[0])),
                                                       path=str(found[0]))


@dataclass(frozen=True)
class Spend:
    """What runs under one authorization have sent."""

    cells: int
    """Cells sent at least once."""
    calls: int
    """Provider calls (attempts)."""
    tokens: int
    """Prompt + completion tokens."""
    cost_usd: float
    """US dollars."""

    def to_json(self) -> dict[str, Any]:
        """Return the spend as a JSON-ready mapping."""
        return {"cells": self.cells, "calls": self.calls, "tokens": self.tokens,
                "cost_usd": round(self.cost_usd, 6)}


_SPENT: dict[tuple[str, str], Spend] = {}
"""Spends already summed, by the digests of a run's manifest and log bytes: the same bytes
verify and sum the same way, so a budget check over many runs reads each run's files once
per change instead of parsing every log again (a study with many runs checks its spend
before every chunk of every run)."""


def run_spend(run_dir: Path) -> Spend:
    """Sum one run's spend from its event log: the manifest verified against the log's
    anchor, every line of the log against its hash chain (the frozen schedule's requests
    are not re-hashed: a spend counts attempts and usage, never what was asked; the runner
    verifies the schedule before it sends anything)."""
    key = _files_key(run_dir)
    if key in _SPENT:
        return _SPENT[key]
    spend = _sum_spend(run_dir)
    if _files_key(run_dir) == key:  # not kept when the run moved on while it was summed
        _SPENT[key] = spend
    return spend


def _files_key(run_dir: Path) -> tuple[str, str]:
    return (bytes_digest((run_dir / MANIFEST).read_bytes()),
            bytes_digest((run_dir / EVENTS).read_bytes()))


def _sum_spend(run_dir: Path) -> Spend:
    run_manifest(run_dir)
    events = read_events(run_dir / EVENTS)
    sent = {e["cell"] for e in events if e["kind"] == "attempt"}
    calls = sum(1 for e in events if e["kind"] == "attempt")
    usage = [e for e in events if e["kind"] == "tool_event"]
    return Spend(len(sent), calls, sum(int(e.get("tokens_in", 0)) + int(e.get("tokens_out", 0))
                                       for e in usage),
                 sum(float(e.get("cost_usd", 0.0)) for e in usage))


def authorized_runs(runs: Path, auth_digest: str) -> list[Path]:
    """Every run under ``runs`` whose manifest names ``auth_digest``."""
    found = []
    for run_dir in sorted(p for p in runs.glob("*") if p.is_dir() and not p.name.startswith(".")):
        manifest = loads_canonical((run_dir / MANIFEST).read_bytes().rstrip(b"\n"),
                                   path=str(run_dir / MANIFEST))
        if manifest.get("agent", {}).get("authorization") == auth_digest:
            found.append(run_dir)
    return found


def total_spend(runs: Path, auth_digest: str) -> Spend:
    """Spend of every run under ``runs`` made under ``auth_digest``."""
    parts = [run_spend(r) for r in authorized_runs(runs, auth_digest)]
    return Spend(sum(p.cells for p in parts), sum(p.calls for p in parts),
                 sum(p.tokens for p in parts), sum(p.cost_usd for p in parts))


def coverage_reasons(auth: Authorization, *, binding: str, model: str, route: str,
                     pending: int, spent: Spend) -> list[Reason]:
    """Return why ``auth`` does not cover sending more of this run's ``pending`` cells.

    A ceiling below the pending count is allowed: the run stops at it. An exhausted
    ceiling refuses.
    """
    reasons = []
    if model not in auth.models:
        reasons.append(Reason("budget_model_not_covered", f"model {model!r} is not among "
                              f"{list(auth.models)}", subject=model))
    if route not in auth.routes:
        reasons.append(Reason("budget_route_not_covered", f"route {route!r} is not among "
                              f"{list(auth.routes)}", subject=route))
    if auth.bindings and binding not in auth.bindings:
        reasons.append(Reason("budget_binding_not_covered", f"binding {binding} is not covered",
                              subject=binding))
    if pending and spent.cells >= auth.max_cells:
        reasons.append(Reason("budget_cells_exhausted", f"{pending} cells pending but "
                              f"{spent.cells} already sent reach the ceiling of {auth.max_cells}",
                              subject="max_cells",
                              data={"pending": pending, "sent": spent.cells,
                                    "max_cells": auth.max_cells}))
    if spent.tokens >= auth.max_tokens:
        reasons.append(Reason("budget_tokens_exhausted", f"{spent.tokens} tokens spent, ceiling "
                              f"{auth.max_tokens}", subject="max_tokens"))
    if spent.cost_usd >= auth.max_cost_usd:
        reasons.append(Reason("budget_cost_exhausted", f"${spent.cost_usd:.6f} spent, ceiling "
                              f"${auth.max_cost_usd}", subject="max_cost_usd"))
    return reasons


def next_chunk(auth: Authorization, spent: Spend, per_cell_tokens: int, per_cell_cost: float,
               *, cap: int) -> int:
    """How many more cells may be sent without crossing a ceiling at the largest per-cell
    spend seen so far (``per_cell_*``); 0 means stop."""
    room = [auth.max_cells - spent.cells, cap]
    if per_cell_tokens > 0:
        room.append((auth.max_tokens - spent.tokens) // per_cell_tokens)
    if per_cell_cost > 0:
        # a relative tolerance keeps 0.5 / 0.1 at 5 (float floor division gives 4)
        room.append(math.floor((auth.max_cost_usd - spent.cost_usd) / per_cell_cost + 1e-9))
    return max(0, min(room))
