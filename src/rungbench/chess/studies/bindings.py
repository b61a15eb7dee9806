"""Bindings: a registered design bound to one frozen study manifest (seed 000, seed 001).

A binding is a content-addressed object, frozen before any provider call, naming the
design preset's digest, the manifest digest, the seed, the bound positions in order and
the realized orders:

* **A105** binds the development and held-out positions (training excluded): the
  balanced Latin schedule of (position, condition, panel order, model) with each
  cell's execution ordinal (:meth:`~rungbench.design.presets.FactorialDesign.schedule`);
* **E023** binds held-out then development positions up to its registered count, with
  the two-period cyclic counterbalance of every arm
  (:func:`~rungbench.design.orders.cyclic_counterbalance`, the preset's construction seed),
  and its ``endpoint_validity`` block: the WDL regret profile recomputed from the bound
  positions' pass A expectations (label-stage data, outcome-blind) and the warnings of
  :func:`~rungbench.design.endpoint_validity.endpoint_validity` on those orders;
* **E020/E021** (and the E022 falsifier arms) bind every registered partition, with the
  seeded presentation order of every (position, arm) candidate list.

Stored as ``<study>/bindings/<hex>.json`` (canonical JSON, named by its digest); reading
one re-hashes it. A binding of another manifest than the study's current one refuses
(``binding_stale``). Cells are rendered from a binding by :mod:`rungbench.chess.studies.
ladder` and :mod:`rungbench.chess.studies.panels` as a pure function of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.agents.models_file import ModelsFile
from rungbench.agents.spec import AgentSpec
from rungbench.chess.studies.manifest import FrozenManifest
from rungbench.chess.studies.study_presets import study_preset
from rungbench.design.endpoint_validity import endpoint_validity
from rungbench.design.orders import OrderArray, cyclic_counterbalance
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import RegisteredDesign, require
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.store import write_atomic

BINDING_SCHEMA = "rungbench.chess.study-binding/1"
"""Schema name and version of a binding."""
GATE = "chess study binding"
"""Gate name of binding refusals."""
E023_PARTITIONS = ("held_out", "development")
"""Partitions E023 draws its registered count from, in this order (training excluded)."""


def design_kind(reg: RegisteredDesign) -> str:
    """Return the preset's ``design.kind``."""
    return str(require(reg.section("design"), "kind", str, source=reg.source, prefix="design"))


def _refuse(code: str, detail: str, subject: str, **data: Any) -> Refusal:
    return Refusal([Reason(code, detail, subject=subject, data=data)], gate=GATE)


def _take(manifest: FrozenManifest, partitions: tuple[str, ...],
          counts: dict[str, int] | None, subject: str) -> list[dict[str, Any]]:
    """Positions of ``partitions`` in that order; with ``counts`` exactly that many of each."""
    chosen: list[dict[str, Any]] = []
    for part in partitions:
        rows = manifest.positions((part,))
        want = None if counts is None else counts[part]
        if want is not None and len(rows) != want:
            raise _refuse("binding_size_mismatch", f"{subject} registers {want} {part} "
                          f"positions, the manifest holds {len(rows)}", part,
                          registered=want, manifest=len(rows))
        chosen.extend(rows)
    return chosen


def a105_realized(reg: RegisteredDesign, manifest: FrozenManifest) -> dict[str, Any]:
    """The A105 binding body: dev + held-out positions and the Latin cell schedule."""
    d = factorial_design(reg)
    splits = dict(d.splits)
    rows = _take(manifest, tuple(splits), splits, d.id)
    cells = [[c.unit, c.split, c.condition, c.level("panel_order"), c.level("model"),
              c.block, c.ordinal] for c in d.schedule()]
    return {"positions": [r["key"] for r in rows], "models": list(d.models),
            "cell_fields": ["unit", "split", "condition", "panel_order", "model", "block",
                            "ordinal"], "cells": cells}


def e023_realized(reg: RegisteredDesign, manifest: FrozenManifest) -> dict[str, Any]:
    """The E023 binding body: registered positions and every arm's cyclic A/B orders."""
    d = arms_design(reg)
    rows = _take(manifest, E023_PARTITIONS, None, d.id)[:d.positions]
    if len(rows) != d.positions:
        raise _refuse("binding_size_mismatch", f"{d.id} registers {d.positions} positions, the "
                      f"manifest holds {len(rows)} outside training", "positions",
                      registered=d.positions, manifest=len(rows))
    orders: dict[str, list[list[list[int]]]] = {}
    slots: dict[str, tuple[OrderArray, OrderArray]] = {}
    for i, arm in enumerate(d.arms):
        a, b = cyclic_counterbalance(d.positions, d.width, rotation=d.rotation,
                                     rng=d.construction_seed + i)
        slots[arm.name] = (a, b)
        orders[arm.name] = [[[arm.ranks[s] for s in a[p]], [arm.ranks[s] for s in b[p]]]
                            for p in range(d.positions)]
    models = require(reg.section("schedule"), "models", list, source=reg.source,
                     prefix="schedule") if "models" in reg.section("schedule") else []
    keys = [str(r["key"]) for r in rows]
    validity = endpoint_validity(d, pass_a_expectations(manifest, keys), orders=slots)
    return {"positions": keys, "models": list(models),
            "arms": [a.name for a in d.arms], "presentations": ["A", "B"],
            "ranks_by_slot": orders,
            "endpoint_validity": {"profile": validity.profile.to_json(),
                                  "warnings": [w.to_json() for w in validity.warnings]}}


def pass_a_expectations(manifest: FrozenManifest, keys: list[str],
                        ) -> dict[str, list[float]] | None:
    """Pass A's WDL expectation of ranks 1-10 of each bound position (label-stage data,
    known before any model call), or None when the manifest carries no candidate lists (an
    in-memory manifest of positions only: the registered profile stands)."""
    lists = {k: manifest.lists.get(k) for k in keys}
    if all(lst is None for lst in lists.values()):
        return None
    missing = [k for k, lst in lists.items() if lst is None]
    if missing:
        raise IntegrityError(f"the manifest binds no pass A candidate list for position "
                             f"{missing[0]!r} ({len(missing)} of {len(keys)} missing)")
    return {k: [c.expectation for c in sorted(lst.candidates, key=lambda c: c.rank)]
            for k, lst in lists.items() if lst is not None}


def ladder_arms(reg: RegisteredDesign) -> list[dict[str, Any]]:
    """The preset's ``[[arms]]`` (move-choice) tables, checked."""
    arms = reg.table_list("arms")
    for i, arm in enumerate(arms):
        kind = require(arm, "kind", str, source=reg.source, prefix=f"arms[{i}]")
        require(arm, "name", str, source=reg.source, prefix=f"arms[{i}]")
        if kind != "unaided":
            width = require(arm, "width", int, source=reg.source, prefix=f"arms[{i}]")
            if not 1 <= width <= 10:
                raise InputError(f"arm width must be in 1..10, got {width}", path=reg.source,
                                 field=f"arms[{i}].width")
    return arms


def ladder_slot_orders(seed: int, arms: list[dict[str, Any]], positions: int,
                       ) -> dict[str, list[list[int]]]:
    """Each arm's slot permutation per position: ``default_rng([seed, position, width])``."""
    orders: dict[str, list[list[int]]] = {}
    for arm in arms:
        width = int(arm.get("width", 0))
        orders[str(arm["name"])] = [
            [int(x) for x in np.random.default_rng([seed, p, width]).permutation(width)]
            for p in range(positions)]
    return orders


def ladder_realized(reg: RegisteredDesign, manifest: FrozenManifest) -> dict[str, Any]:
    """The E020/E021 (or E022) binding body: positions and each (position, arm) order.

    The order of a list of width w is a permutation of its w slots drawn from
    ``numpy.random.default_rng([order_seed, position index, w])``: arms of one width
    (top-10 and best-omitted; E022's control and falsifiers) share one order.
    """
    sched = reg.section("schedule")
    parts = tuple(require(sched, "partitions", list, source=reg.source, prefix="schedule"))
    seed = require(sched, "order_seed", int, source=reg.source, prefix="schedule")
    models = require(sched, "models", list, source=reg.source, prefix="schedule")
    rows = _take(manifest, parts, None, str(reg.section("design").get("id", reg.name)))
    arms = ladder_arms(reg)
    orders = ladder_slot_orders(seed, arms, len(rows))
    probes = [str(t["name"]) for t in reg.document.get("probes", [])]
    return {"positions": [r["key"] for r in rows], "models": list(models),
            "arms": [str(a["name"]) for a in arms], "probes": probes, "slot_orders": orders}


REALIZERS = {"factorial_2x2": a105_realized, "counterbalanced_arms": e023_realized,
             "intervention_ladder": ladder_realized, "falsifier_arms": ladder_realized}
"""Binding body builder per registered design kind."""


def binding_document(reg: RegisteredDesign, manifest: FrozenManifest,
                     models: ModelsFile | None = None) -> dict[str, Any]:
    """Return the binding of ``reg`` to ``manifest`` (a pure function of both, and of the
    models file that names the preset's agents when one is given).

    A preset of one's own is marked ``design.origin: file`` (it is checked against no
    bundled preset of the same name; its whole document is in the binding). With
    ``models``, every model label the preset registers must be an agent of the file
    (``model_unknown`` otherwise, naming both); the binding then records each agent's spec
    (``agents``, never a key) and the digest of those specs (``models_file``).
    """
    study_preset(reg)  # every key typed and known, checked counts agree, before any work
    kind = design_kind(reg)
    if kind not in REALIZERS:
        raise InputError(f"design kind {kind!r} cannot be bound; known: {sorted(REALIZERS)}",
                         path=reg.source, field="design.kind")
    body = REALIZERS[kind](reg, manifest)
    design = {"name": reg.name, "id": str(reg.section("design").get("id", reg.name)),
              "kind": kind, "digest": reg.digest, "document": reg.document}
    if not reg.bundled:  # the path is not recorded: a preset moved is the same preset
        design["origin"] = "file"
    document = {"schema": BINDING_SCHEMA, "design": design, "manifest": manifest.digest,
                **body}
    if models is not None:
        document.update(bound_agents(reg, [str(m) for m in body.get("models", [])], models))
    return document


def bound_agents(reg: RegisteredDesign, labels: list[str], models: ModelsFile,
                 ) -> dict[str, Any]:
    """The ``agents`` and ``models_file`` entries of a binding: the preset's labels resolved
    through ``models`` (a label the file lacks is refused naming both files)."""
    missing = [label for label in labels if label not in models.labels]
    if missing:
        raise _refuse("model_unknown", f"preset {reg.source} registers model "
                      f"{missing[0]!r}, which {models.source} does not name (its labels: "
                      f"{', '.join(models.labels)})", missing[0], preset=reg.source,
                      models=models.source, labels=list(models.labels))
    chosen = models.only(labels)
    return {"agents": {s.label: agent_identity(s) for s in chosen},
            "models_file": chosen.digest()}


def agent_identity(spec: AgentSpec) -> dict[str, Any]:
    """What a binding pins of an agent: its spec less the execution setting
    ``client_processes``."""
    out = spec.to_json()
    out.pop("client_processes", None)
    return out


@dataclass(frozen=True)
class Binding:
    """A verified binding."""

    digest: str
    """``sha256:`` of its canonical bytes (its name)."""
    document: dict[str, Any]
    """The binding document."""

    @property
    def design_name(self) -> str:
        """The bound preset's name."""
        return str(self.document["design"]["name"])

    @property
    def kind(self) -> str:
        """The bound design's kind."""
        return str(self.document["design"]["kind"])

    @property
    def bundled(self) -> bool:
        """Whether the bound preset is a bundled one (not a file of the user's)."""
        return "origin" not in self.document["design"]

    def agent(self, label: str) -> dict[str, Any] | None:
        """The spec the binding pinned for ``label`` (None: it pinned no models file)."""
        agents = self.document.get("agents")
        return None if agents is None else agents.get(label)


def bindings_dir(study: Path) -> Path:
    """``<study>/bindings``."""
    return study / "bindings"


def freeze_binding(study: Path, reg: RegisteredDesign, manifest: FrozenManifest,
                   models: ModelsFile | None = None) -> Binding:
    """Write the binding into the study (idempotent: same inputs, same bytes, same name)."""
    document = binding_document(reg, manifest, models)
    data = canonical_bytes(document)
    name = bytes_digest(data)
    path = bindings_dir(study) / f"{name[7:]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if path.read_bytes() != data:
            raise IntegrityError(f"{path} exists with other bytes than its name")
    else:
        write_atomic(path, data)
    return Binding(name, document)


def load_binding(study: Path, name: str, manifest: FrozenManifest) -> Binding:
    """Read binding ``name`` (a digest or its hex prefix), re-hashed and checked fresh.

    Refuses (``binding_stale``) when it names another manifest than ``manifest``.
    """
    hexpart = name.removeprefix("sha256:")
    found = sorted(bindings_dir(study).glob(f"{hexpart}*.json")) if hexpart else []
    if len(found) != 1:
        raise InputError(f"{'no' if not found else 'more than one'} binding matches {name!r}",
                         path=str(bindings_dir(study)), field="binding")
    data = found[0].read_bytes()
    if bytes_digest(data)[7:] != found[0].stem:
        raise IntegrityError(f"{found[0]} does not hash to its name")
    document = loads_canonical(data, path=str(found[0]))
    if document.get("schema") != BINDING_SCHEMA:
        raise InputError(f"not a {BINDING_SCHEMA} document", path=str(found[0]), field="schema")
    binding = Binding(bytes_digest(data), document)
    if document["manifest"] != manifest.digest:
        raise _refuse("binding_stale", f"binding {binding.digest} names manifest "
                      f"{document['manifest']}, the study's manifest is {manifest.digest}",
                      binding.digest, bound=document["manifest"], current=manifest.digest)
    return binding


def list_bindings(study: Path) -> list[Path]:
    """Every binding file of the study, sorted."""
    return sorted(bindings_dir(study).glob("*.json"))
