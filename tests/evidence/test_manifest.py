"""Run manifests: required fields, aware datetimes, git commit, schema export, clear read errors."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rungbench import __version__
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import canonical_bytes, digest
from rungbench.evidence.manifest import (
    MANIFEST_SCHEMA,
    Exclusion,
    RunManifest,
    build_manifest,
    git_commit,
    make_run_id,
    manifest_json_schema,
    read_manifest,
    write_manifest,
)

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
D1 = digest({"design": "a105"})
D2 = digest({"input": 1})


def _values(**override: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "run_id": "r1",
        "package_version": "0.1.0",
        "git_commit": None,
        "design_digest": D1,
        "inputs": {"pool": D2},
        "exclusions": [{"subject": "pos-17", "reason": "unstable_top_move"}],
        "started_at": START.isoformat(),
        "ended_at": (START + timedelta(minutes=3)).isoformat(),
    }
    values.update(override)
    return values


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    """A written manifest reads back equal: canonical JSON plus its own digest as a check."""
    manifest = RunManifest.model_validate(_values())
    path = tmp_path / "manifest.json"
    found = write_manifest(path, manifest)
    written = json.loads(path.read_bytes())
    recorded = written.pop("manifest_digest")
    assert path.read_bytes() == canonical_bytes({**manifest.to_json(), "manifest_digest": found})
    assert read_manifest(path) == manifest
    assert found == manifest.digest == digest(written) == recorded
    assert json.loads(path.read_bytes())["schema"] == MANIFEST_SCHEMA


def test_naive_datetimes_rejected() -> None:
    """Start and end must carry a timezone."""
    with pytest.raises(ValidationError, match="timezone"):
        RunManifest.model_validate(_values(started_at="2026-03-01T12:00:00"))
    with pytest.raises(InputError, match="naive"):
        make_run_id(datetime(2026, 3, 1), D1, {})


def test_end_before_start_rejected() -> None:
    """A run cannot end before it started."""
    with pytest.raises(ValidationError, match="before started_at"):
        RunManifest.model_validate(_values(ended_at=(START - timedelta(seconds=1)).isoformat()))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("design_digest", "sha256:xyz"),
        ("git_commit", "HEAD"),
        ("run_id", "../escape"),
        ("inputs", {"pool": "md5:00"}),
    ],
)
def test_malformed_fields_rejected(field: str, value: Any) -> None:
    """Digests, commit hashes and run ids must have their registered form."""
    with pytest.raises(ValidationError):
        RunManifest.model_validate(_values(**{field: value}))


def test_unknown_field_rejected() -> None:
    """A manifest with an extra field is refused rather than silently dropped."""
    with pytest.raises(ValidationError, match="extra"):
        RunManifest.model_validate(_values(surprise=1))


def test_read_not_json_names_path(tmp_path: Path) -> None:
    """A manifest file that is not JSON gives an InputError naming the path."""
    path = tmp_path / "m.json"
    path.write_text("{ this is not json")
    with pytest.raises(InputError, match=r"m\.json: not valid JSON"):
        read_manifest(path)


def test_read_missing_field_names_field(tmp_path: Path) -> None:
    """A manifest missing a field gives an InputError naming path and field."""
    values = _values()
    del values["design_digest"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(values))
    with pytest.raises(InputError, match=r"m\.json: .*\(field 'design_digest'\)"):
        read_manifest(path)


def test_read_bad_value_names_field_and_value(tmp_path: Path) -> None:
    """A wrong value is reported with its field and the offending value."""
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_values(inputs={"pool": "sha256:short"})))
    with pytest.raises(InputError, match=r"'sha256:short'.*\(field 'inputs\.pool'\)"):
        read_manifest(path)


def test_read_array_and_missing_file(tmp_path: Path) -> None:
    """A JSON array or an absent file are InputErrors naming the path."""
    path = tmp_path / "m.json"
    path.write_text("[]")
    with pytest.raises(InputError, match="JSON object"):
        read_manifest(path)
    with pytest.raises(InputError, match=r"absent\.json"):
        read_manifest(tmp_path / "absent.json")


def test_write_never_overwrites(tmp_path: Path) -> None:
    """Writing over an existing manifest is refused unless overwrite is set."""
    path = tmp_path / "m.json"
    path.write_text("keep")
    with pytest.raises(InputError, match="refusing to overwrite"):
        write_manifest(path, RunManifest.model_validate(_values()))
    assert path.read_text() == "keep"


def test_git_commit_matches_git(tmp_path: Path) -> None:
    """git_commit equals `git rev-parse HEAD` in a checkout and is None outside one."""
    repo = Path(__file__).resolve().parent
    expected = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_commit(repo) == expected
    assert git_commit(tmp_path) is None


def test_build_manifest_fills_version_and_run_id() -> None:
    """build_manifest records the package version and a deterministic run id."""
    manifest = build_manifest(
        design_digest=D1,
        inputs={"pool": D2},
        started_at=START,
        ended_at=START,
        exclusions=[Exclusion(subject="p", reason="r")],
    )
    assert manifest.package_version == __version__
    assert manifest.run_id == make_run_id(START, D1, {"pool": D2})
    assert manifest.run_id.startswith("20260301T120000Z-")
    assert manifest.exclusions[0].reason == "r"


def test_json_schema_export() -> None:
    """The JSON Schema names every required field and the versioned schema tag."""
    schema = manifest_json_schema()
    assert set(schema["required"]) >= {
        "run_id",
        "package_version",
        "design_digest",
        "inputs",
        "started_at",
        "ended_at",
    }
    assert schema["properties"]["schema"]["const"] == MANIFEST_SCHEMA
    assert schema["properties"]["started_at"]["format"] == "date-time"


def test_edited_value_is_an_integrity_error_naming_the_file(tmp_path: Path) -> None:
    """A manifest whose field was edited into another valid value raises naming the file."""
    path = tmp_path / "m.json"
    write_manifest(path, RunManifest.model_validate(_values()))
    path.write_bytes(path.read_bytes().replace(b'"r1"', b'"r2"'))
    with pytest.raises(IntegrityError, match=r"m\.json: manifest hashes to"):
        read_manifest(path)


def test_manifest_without_its_digest_is_an_integrity_error(tmp_path: Path) -> None:
    """A valid manifest body without its manifest_digest self-check raises naming the file."""
    path = tmp_path / "m.json"
    path.write_bytes(canonical_bytes(RunManifest.model_validate(_values()).to_json()))
    with pytest.raises(IntegrityError, match=r"m\.json: no manifest_digest"):
        read_manifest(path)
