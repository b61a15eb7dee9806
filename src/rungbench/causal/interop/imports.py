"""Sealed import directories for worlds built from CPTs (BIF files, CLadder models).

An import directory is a sealed directory (``evidence.sealed``) of kind
``rungbench.cpt_import`` holding ``import.json`` (schema ``rungbench.cpt_import/1``):
the source file's digest, the CPTs at full precision (a variable of more than two states
as ``table``: P(V=s | row) per row), the state names, the encoding (`cpts.ENCODING`, or
`cpts.CATEGORICAL_ENCODING` when a variable has more than two states), the coupling caveat
(`cpts.COUPLING_NOTE`), the coupling the import was made with (``null`` = unspecified; the
comonotone world then stands in for every coupling on the queries that cannot tell them
apart), and ``world.json`` — the `rungbench.world/1` (all-binary network) or
`rungbench.world/2` document of the encoded world. Readers rebuild the world from the CPTs
and refuse (IntegrityError) when it differs from ``world.json``.

Queries go through :func:`answer`: rung 1 and 2 always; a rung-3 query (or PN/PS) whose
value depends on the coupling is refused (``coupling_dependent``, exit 3) unless a
coupling is named, at import or at query time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.causal.interop.bif import BifNetwork, read_bif
from rungbench.causal.scm import cpts as cpt_module
from rungbench.causal.scm import estimands, oracle
from rungbench.causal.scm.cpts import CATEGORICAL_ENCODING, COUPLING_NOTE, ENCODING, Coupling, Cpt
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.evidence.sealed import publish_dir, verify_sealed

IMPORT_KIND = "rungbench.cpt_import"
"""Seal kind of an import directory."""

IMPORT_SCHEMA = "rungbench.cpt_import/1"
"""Schema of ``import.json``."""

WORLD_SEED = 0
"""Listing-order seed of ``world.json`` (imports are public; the order carries no secret)."""


@dataclass(frozen=True)
class Imported:
    """A verified import: its CPTs, the coupling it was made with, and the encoded world."""

    world_id: str
    """World id (the network name)."""
    cpts: tuple[Cpt, ...]
    """CPTs at full precision."""
    states: Mapping[str, tuple[str, ...]]
    """State names per variable: value i = the (i+1)-th listed."""
    coupling: str | None
    """Coupling named at import, or None (unspecified)."""
    world: World
    """The encoded world (comonotone when the coupling is unspecified)."""
    document: Mapping[str, Any]
    """``import.json`` as read."""

    def world_for(self, coupling: str | None) -> World:
        """The world under ``coupling`` (the imported one when None)."""
        if coupling is None or coupling == (self.coupling or "comonotone"):
            return self.world
        return _build(self.world_id, self.cpts, coupling)


def _build(world_id: str, cpts: Sequence[Cpt], coupling: str) -> World:
    if coupling not in cpt_module.COUPLINGS:
        raise InputError(f"unknown coupling {coupling!r}; choose one of "
                         f"{list(cpt_module.COUPLINGS)}", field="coupling")
    named: Coupling = "independent" if coupling == "independent" else "comonotone"
    return cpt_module.world_from_cpts(world_id, cpts, coupling=named)


BINARY_CONVENTION = "value 0 = the first listed state, value 1 = the second"
"""How an all-binary import maps states to values."""

CATEGORICAL_CONVENTION = ("value i = the (i+1)-th listed state (0 = the first); queries may "
                          "also name a state")
"""How an import with a variable of more than two states maps states to values."""


def import_document(world_id: str, cpts: Sequence[Cpt],
                    states: Mapping[str, tuple[str, ...]], source: Mapping[str, Any],
                    coupling: str | None) -> tuple[dict[str, Any], World]:
    """The ``import.json`` document and the encoded world."""
    world = _build(world_id, cpts, coupling or "comonotone")
    error = cpt_module.max_cpt_error(world, cpts)
    binary = world.is_binary
    doc = {
        "schema": IMPORT_SCHEMA,
        "world_id": world_id,
        "source": dict(source),
        "value_convention": BINARY_CONVENTION if binary else CATEGORICAL_CONVENTION,
        "states": {k: list(v) for k, v in states.items()},
        "cpts": [_cpt_json(c) for c in cpts],
        "encoding": ENCODING if binary else CATEGORICAL_ENCODING,
        "coupling": coupling,
        "coupling_note": COUPLING_NOTE,
        "max_cpt_error": error,
        "n_variables": len(world.variables),
        "response_tables": {v.name: len(v.responses) for v in world.variables},
    }
    return doc, world


def _cpt_json(c: Cpt) -> dict[str, Any]:
    """One CPT of ``import.json``: binary ones as before (``p_one``), named or larger ones
    with their ``states`` and, past two states, ``table`` (P(V=s | row) per row)."""
    out: dict[str, Any] = {"name": c.name, "parents": list(c.parents)}
    if c.table:
        out["table"] = [list(row) for row in c.table]
    else:
        out["p_one"] = list(c.p_one)
    if c.states:
        out["states"] = list(c.states)
    return out


def _cpt_from_json(c: Mapping[str, Any]) -> Cpt:
    names = tuple(str(s) for s in c.get("states", ()))
    table = tuple(tuple(float(q) for q in row) for row in c.get("table", ()))
    p_one = () if table else tuple(float(q) for q in c["p_one"])
    return Cpt(str(c["name"]), tuple(str(p) for p in c["parents"]), p_one, True, names, table)


def write_import(out: Path, doc: Mapping[str, Any], world: World, *, force: bool) -> None:
    """Publish the sealed import directory ``out`` (refused ``exists`` unless ``force``)."""
    with publish_dir(out, kind=IMPORT_KIND, force=force) as tmp:
        (tmp / "import.json").write_bytes(canonical_bytes(doc))
        (tmp / "world.json").write_bytes(canonical_bytes(world.to_json(seed=WORLD_SEED)))


def import_bif(path: Path, out: Path, *, coupling: str | None = None,
               force: bool = False) -> dict[str, Any]:
    """Import a BIF file into the sealed directory ``out``; return a summary."""
    net: BifNetwork = read_bif(path)
    world_id = path.stem if net.name in ("unknown", "") else net.name
    source = {"kind": "bif", "file": path.name, "sha256": bytes_digest(path.read_bytes())}
    doc, world = import_document(world_id, net.cpts, net.states, source, coupling)
    write_import(out, doc, world, force=force)
    return summary(doc)


def summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What an import prints: size, encoding, coupling and the coupling caveat."""
    tables = doc["response_tables"]
    return {
        "world_id": doc["world_id"], "source": doc["source"], "n_variables": doc["n_variables"],
        "max_response_tables": max(tables.values()),
        "total_response_tables": sum(tables.values()),
        "max_cpt_error": doc["max_cpt_error"], "encoding": doc["encoding"],
        "coupling": doc["coupling"], "coupling_note": doc["coupling_note"],
    }


def load_import(directory: Path) -> Imported:
    """Verify and read an import directory; the world is rebuilt and compared."""
    verify_sealed(directory, kind=IMPORT_KIND)
    try:
        doc = json.loads((directory / "import.json").read_bytes())
        world_doc = json.loads((directory / "world.json").read_bytes())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable import: {exc}", path=str(directory)) from None
    if doc.get("schema") != IMPORT_SCHEMA:
        raise InputError(f"schema must be {IMPORT_SCHEMA!r}", path=str(directory / "import.json"),
                         field="schema")
    try:
        cpts = tuple(_cpt_from_json(c) for c in doc["cpts"])
        states = {str(k): tuple(str(s) for s in v) for k, v in doc["states"].items()}
        world_id, coupling = str(doc["world_id"]), doc["coupling"]
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise InputError(f"malformed import document: {exc!r}",
                         path=str(directory / "import.json")) from None
    world = _build(world_id, cpts, coupling or "comonotone")
    if world != World.from_json(world_doc):
        raise IntegrityError(f"{directory / 'world.json'}: does not encode the CPTs of import.json")
    return Imported(world_id, cpts, states, coupling, world, doc)


def parse_query(imported: Imported, doc: Mapping[str, Any]) -> Query:
    """A `rungbench.query/1` document on ``imported``: values are indices or the state names
    the import recorded (CONTRACTS §2)."""
    return Query.from_json(doc, states=imported.states)


def answer(imported: Imported, query: Query, *, coupling: str | None = None) -> dict[str, Any]:
    """The exact value of ``query``; refuses a coupling-dependent one with no coupling named."""
    named = coupling if coupling is not None else imported.coupling
    world = imported.world_for(named)
    coupled = cpt_module.coupling_dependence(world, query)
    cpt_module.require_coupling_free(world, coupled, f"rung-{query.rung} query", named)
    result = oracle.answer(world, query)
    return {"world_id": imported.world_id, "query": query.to_json(),
            "query_states": _named(imported, query), "value": result.value,
            "method": result.method, "coupling": named,
            "coupling_dependent": list(coupled),
            "coupling_invariant": not coupled}


def _named(imported: Imported, query: Query) -> dict[str, dict[str, str]]:
    """The query's values as state names (each part of the query document)."""
    out: dict[str, dict[str, str]] = {}
    for part in ("target", "do", "evidence"):
        event: Mapping[str, int] = getattr(query, part)
        out[part] = {k: imported.states[k][v] for k, v in event.items()
                     if k in imported.states and v < len(imported.states[k])}
    return out


def answer_estimand(imported: Imported, name: str, x: str, y: str, *,
                    coupling: str | None = None,
                    mediator_set: Sequence[str] | None = None) -> dict[str, Any]:
    """ATE/ETT/NDE/NIE of ``x`` on ``y``; refused when coupling-dependent and no coupling named."""
    named = coupling if coupling is not None else imported.coupling
    world = imported.world_for(named)
    coupled = estimands.coupled(world, name, x, y, mediator_set=mediator_set)
    cpt_module.require_coupling_free(world, coupled, name.upper(), named)
    est = estimands.estimate(world, name, x, y, mediator_set=mediator_set)
    return {"world_id": imported.world_id, "estimand": name, "x": x, "y": y,
            "mediators": list(est.mediators), "value": est.value, "method": est.method,
            "coupling": named, "coupling_dependent": list(coupled),
            "coupling_invariant": not coupled}


def load_cladder_model(directory: Path, model_id: int) -> Imported:
    """One model of a verified CLadder import directory, as an :class:`Imported` world."""
    from rungbench.causal.interop.cladder import CLADDER_IMPORT_KIND

    verify_sealed(directory, kind=CLADDER_IMPORT_KIND)
    for n, line in enumerate((directory / "worlds.jsonl").read_text(encoding="utf-8")
                             .splitlines(), start=1):
        rec = json.loads(line)
        if rec.get("model_id") != model_id:
            continue
        try:
            cpts = tuple(Cpt(str(c["name"]), tuple(str(p) for p in c["parents"]),
                             tuple(float(q) for q in c["p_one"])) for c in rec["cpts"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed model record: {exc!r}",
                             path=str(directory / "worlds.jsonl"), line=n) from None
        world = _build(f"cladder-m{model_id}", cpts, "comonotone")
        if world != World.from_json(rec["world"]):
            raise IntegrityError(f"{directory / 'worlds.jsonl'}:{n}: world does not encode "
                                 "its CPTs")
        states = {c.name: ("0", "1") for c in cpts}
        return Imported(world.world_id, cpts, states, None, world, rec)
    raise InputError(f"no model {model_id} in this CLadder import", path=str(directory),
                     field="model")


def load_any(directory: Path, model_id: int | None) -> Imported:
    """A BIF import directory, or model ``model_id`` of a CLadder import directory."""
    from rungbench.evidence.sealed import read_seal

    kind = read_seal(directory).get("kind")
    if kind == IMPORT_KIND:
        if model_id is not None:
            raise InputError("a CLadder model id applies to CLadder imports only",
                             field="cladder_model")
        return load_import(directory)
    if model_id is None:
        raise InputError("a CLadder import holds many worlds: name one with --model",
                         path=str(directory), field="model")
    return load_cladder_model(directory, model_id)
