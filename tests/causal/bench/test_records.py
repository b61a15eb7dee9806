"""Tests for rungbench.causal.bench.records (versioned records and their JSON Schemas)."""

from __future__ import annotations

import json
import pathlib

import jsonschema  # type: ignore[import-untyped]
import pytest
from pydantic import ValidationError

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.records import (
    RECORDS_VERSION,
    SCHEMA_MODELS,
    AgentResponse,
    EpisodeCase,
    episode_json_schemas,
    json_schemas,
    write_schemas,
)


def test_every_record_has_a_versioned_schema(tmp_path: pathlib.Path) -> None:
    """write_schemas writes one schema per record, each tagged with the records version."""
    paths = write_schemas(tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{n}.schema.json" for n in SCHEMA_MODELS)
    for p in paths:
        doc = json.loads(p.read_text())
        assert doc["$id"].startswith(RECORDS_VERSION + "/")
        assert "version" in doc["properties"] or p.name == "verdict.schema.json"


def test_public_case_schema_has_no_oracle_fields() -> None:
    """The public_case schema carries none of the private oracle's answer fields."""
    props = set(json_schemas()["public_case"]["properties"])
    assert not props & {"value", "identifiable", "confusions", "seed", "scm_hash", "cpdag"}


def test_episode_records_keep_their_published_names() -> None:
    """records/2 schemas and validation errors name each model as benches have published it."""
    schemas = episode_json_schemas()
    titles = {name: doc["title"] for name, doc in schemas.items()}
    assert titles == {"public_case": "PublicCase2", "private_oracle": "PrivateOracle2",
                      "agent_response": "AgentResponse", "verdict": "Verdict2"}
    case = schemas["public_case"]
    assert set(case["$defs"]) == {"Evidence2", "Intervention"}
    assert case["properties"]["evidence"] == {"$ref": "#/$defs/Evidence2"}
    assert case["$defs"]["Evidence2"]["title"] == "Evidence2"
    with pytest.raises(ValidationError, match="for PublicCase2"):
        EpisodeCase.model_validate({"case_id": "c"})


def test_agent_response_rejects_unknown_status_and_extra_fields() -> None:
    """An unknown status or an unexpected field is a validation error, never ignored."""
    base = {"case_id": "c", "arm": "a", "status": "answer", "value": 0.3}
    assert AgentResponse.model_validate(base).value == 0.3
    with pytest.raises(ValidationError):
        AgentResponse.model_validate({**base, "status": "maybe"})
    with pytest.raises(ValidationError):
        AgentResponse.model_validate({**base, "secret": 1})


def test_exported_schemas_describe_the_written_records(tmp_path: pathlib.Path) -> None:
    """Each written record carries every required schema field, no other, and the version."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    build_split("dev", 3, 4, bench)
    evaluate(bench, "reference:oracle", run)
    schemas = json_schemas()
    exported = {p.name: json.loads(p.read_text()) for p in (bench / "public" / "schemas").iterdir()}
    assert exported == {f"{n}.schema.json": s for n, s in schemas.items()}
    written = {
        "public_case": (bench / "public" / "cases.jsonl").read_text().splitlines(),
        "private_oracle": (bench / "private" / "oracle.jsonl").read_text().splitlines(),
        "agent_response": (run / "responses.jsonl").read_text().splitlines(),
        "run_manifest": [(run / "run_manifest.json").read_text()],
    }
    for name, lines in written.items():
        schema = schemas[name]
        assert schema["properties"]["version"]["default"] == RECORDS_VERSION
        assert lines
        for text in lines:
            record = json.loads(text)
            assert set(schema.get("required", [])) <= set(record) <= set(schema["properties"])
            assert record["version"] == RECORDS_VERSION
    assert schemas["tool_event"]["properties"]["version"]["default"] == RECORDS_VERSION


def test_a_paraphrase_bench_publishes_a_schema_its_oracle_records_satisfy(
        tmp_path: pathlib.Path) -> None:
    """A bench built with paraphrases exports ``json_schemas(mutations=True)``: every public
    case and every oracle line, mutation records included, validates against the exported
    schemas; the schema of a bench without them refuses a mutation record."""
    bench = tmp_path / "bench"
    build_split("dev", 2, 4, bench, paraphrases=2)
    exported = {p.name: json.loads(p.read_text()) for p in (bench / "public" / "schemas").iterdir()}
    assert exported == {f"{n}.schema.json": s for n, s in json_schemas(mutations=True).items()}
    oracle_schema = exported["private_oracle.schema.json"]
    lines = [json.loads(t) for t in (bench / "private" / "oracle.jsonl").read_text().splitlines()]
    mutated = [o for o in lines if "mutation" in o]
    assert len(mutated) == 2 * len(lines) // 4
    for record in lines:
        jsonschema.validate(record, oracle_schema)
    for text in (bench / "public" / "cases.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(text), exported["public_case.schema.json"])
    with pytest.raises(jsonschema.ValidationError, match="mutation"):
        jsonschema.validate(mutated[0], json_schemas()["private_oracle"])
