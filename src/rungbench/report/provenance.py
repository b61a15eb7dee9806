"""Who answered: the report's account of every agent of a study (its provenance block).

Each agent is named by its label, as every table of the page names it, beside what the
label stood for: an endpoint (the model id sent, the base URL, the request parameters,
the key variable's name and the prices) or a planted mechanism or reference agent served
on loopback. Read from the run manifests (who each run sent to) and the bindings (the
specs a models file pinned), both verified before anything is rendered.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rungbench.report.html import absent, esc, num, paragraph, ref, table
from rungbench.report.inputs import Inputs, Source

PLANTED = "planted mechanism, served on loopback"
REFERENCE = "reference agent, served on loopback"
ENDPOINT = "model at an endpoint"


def _inner(agent: dict[str, Any]) -> dict[str, Any]:
    """The sending agent's description inside a study run's (``kind: study``) record."""
    inner = agent.get("agent")
    return inner if agent.get("kind") == "study" and isinstance(inner, dict) else agent


def kind_of(description: dict[str, Any]) -> str:
    """What a run's agent was: an endpoint, or a planted or reference agent on loopback."""
    served = description.get("served")
    if served is None:
        return ENDPOINT if description.get("kind") == "openai" else REFERENCE
    name = str(served.get("name", "")) if isinstance(served, dict) else ""
    return PLANTED if name.startswith("planted:") else REFERENCE


def agents(inputs: Inputs) -> dict[str, dict[str, Any]]:
    """Per label: its kind, endpoint details, runs and the pinned spec, if any."""
    out: dict[str, dict[str, Any]] = {}
    runs: dict[str, list[Source]] = defaultdict(list)
    for source in inputs.runs:
        agent = source.document.get("agent") or {}
        inner = _inner(agent)
        label = str(agent.get("model") if agent.get("kind") == "study"
                    else inner.get("label") or inner.get("name"))
        runs[label].append(source)
        out.setdefault(label, {"kind": kind_of(inner), "description": inner,
                               "pinned": None, "models_file": None})
    for binding in inputs.bindings:
        for label, spec in (binding.document.get("agents") or {}).items():
            entry = out.setdefault(label, {"kind": _spec_kind(spec), "description": {},
                                           "pinned": None, "models_file": None})
            entry["pinned"] = spec
            entry["models_file"] = binding.document.get("models_file")
            entry["kind"] = _spec_kind(spec)
    for label, found in runs.items():
        out[label]["runs"] = found
    return dict(sorted(out.items()))


def _spec_kind(spec: dict[str, Any]) -> str:
    return {"openai": ENDPOINT, "planted": PLANTED}.get(str(spec.get("kind")), REFERENCE)


def reading_note(inputs: Inputs) -> str:
    """The sentence saying what the agents of this page are (planted mechanisms only for
    planted agents)."""
    found = agents(inputs)
    planted = [k for k, v in found.items() if v["kind"] != ENDPOINT]
    models = [k for k, v in found.items() if v["kind"] == ENDPOINT]
    parts = []
    if models:
        parts.append(f"Models measured here: {', '.join(models)} (their endpoints, model ids "
                     "and request parameters are in the Agents section). A number about them "
                     "holds for that snapshot under this protocol only.")
    if planted:
        parts.append(f"{', '.join(planted)} {'is a' if len(planted) == 1 else 'are'} planted "
                     "mechanism or reference agent: controlled inputs that validate the "
                     "instrument; their numbers are not claims about any model.")
    if not found:
        parts.append("No study run is in this directory; the sections below say which "
                     "inputs are there.")
    parts.append("A section that has no input in this directory says so rather than "
                 "disappearing.")
    return paragraph(" ".join(parts))


def _params(description: dict[str, Any], pinned: dict[str, Any] | None) -> str:
    params = description.get("params") or (pinned or {}).get("params") or {}
    return esc(", ".join(f"{k}={v}" for k, v in sorted(params.items())) or "—")


def section(inputs: Inputs) -> str:
    """The Agents section: one row per label."""
    found = agents(inputs)
    if not found:
        return absent("no run manifest or pinned agent (a study's runs name their agents)")
    rows = []
    for label, entry in found.items():
        d, pinned = entry["description"], entry["pinned"] or {}
        pricing = d.get("pricing") or pinned.get("pricing") or {}
        endpoint = entry["kind"] == ENDPOINT
        runs = entry.get("runs", [])
        rows.append([
            esc(label), esc(entry["kind"]),
            esc(d.get("model") or pinned.get("model")) if endpoint
            else esc((d.get("served") or {}).get("name") or pinned.get("model") or "—"),
            esc(d.get("base_url") or pinned.get("base_url") or "—") if endpoint else "—",
            _params(d, pinned),
            esc(d.get("api_key_env") or ("none (keyless)" if endpoint else "—")),
            f"{num(pricing.get('usd_per_mtok_in', 0.0), '.2f')} / "
            f"{num(pricing.get('usd_per_mtok_out', 0.0), '.2f')}" if endpoint else "—",
            num(len(runs), "d"), " ".join(ref(s.digest) for s in runs[:4])
            + (" …" if len(runs) > 4 else ""),
            ref(entry["models_file"]) if entry["models_file"] else "—"])
    return "\n".join([
        paragraph("Every agent of this page by the label the tables use, and what it stood "
                  "for. An endpoint's key is never recorded: only the name of the variable "
                  "it was read from."),
        table(["label", "kind", "endpoint model / served agent", "base URL", "parameters",
               "key variable", "USD per M tokens in / out", "runs", "run manifests",
               "models file"], rows, numeric=(7,), table_id="agents")])
