"""What a report is made of, read and verified before anything is rendered (fail closed).

Two layouts are read:

* a **demo directory** (``rungbench demo --out DIR``): ``DIR/report-inputs.json`` (schema
  ``rungbench.report-inputs/1``) names, by digest, the documents the demo's stages
  produced (A104 censuses, causal benchmark reports, the C0–C5 audit) in the
  content-addressed store ``DIR/objects`` (every read re-hashes the object), and the
  relative paths of the demo's chess study and label stage;
* a **scored causal benchmark run** (``rungbench causal eval|score --out DIR``): its seal
  and every file verified, the run report (accuracy per rung, identification table) rebuilt;
* a **study directory** (``rungbench chess study …``): its frozen manifest (sealed), its
  bindings (the file name is the digest of the bytes), its published evaluations (sealed,
  every file digest re-checked) and every sealed analysis directory under it; the label
  stage when given (sealed, stage record verified).

Any object that does not verify raises (:class:`~rungbench.errors.IntegrityError` or a
refusal) and no page is written. An input that is simply not there is absent: its section
says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungbench.causal.bench.report import build_report
from rungbench.causal.bench.verified import open_run
from rungbench.chess.labels.stage_records import verify_stage_dir
from rungbench.chess.studies.analysis_report import ANALYSIS_KIND
from rungbench.chess.studies.evaluation import verify_evaluation
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.study import ANALYSIS_KIND as STUDY_ANALYSIS_KIND
from rungbench.chess.transcripts.corpus import MANIFEST_SCHEMA
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.sealed import verify_sealed
from rungbench.evidence.store import ObjectStore
from rungbench.execute.runner import MANIFEST, load_run

CAUSAL_RUN_MANIFEST = "run_manifest.json"
"""The manifest file of a scored causal benchmark run (``rungbench causal eval|score``)."""
INDEX = "report-inputs.json"
"""The demo's index of report inputs."""
INDEX_SCHEMA = "rungbench.report-inputs/1"
"""Schema name and version of the index."""
OBJECTS = "objects"
"""The demo's content-addressed store of report inputs."""
KINDS = ("census", "causal", "instrument", "ablations", "analysis")
ANALYSIS_KINDS = (ANALYSIS_KIND, STUDY_ANALYSIS_KIND)
"""Seal kinds of analysis directories (``chess analyze --out`` and ``chess study analyze``)."""
"""Key prefixes of indexed objects (``census:<corpus>``, ``causal:<agent>``, …)."""


@dataclass(frozen=True)
class Source:
    """One verified input object."""

    key: str
    """What it is (``census:corpus``, ``analysis:demo_a105``, ``evaluation:<run id>``)."""
    digest: str
    """Digest of the object's bytes as verified."""
    path: str
    """Where it was read from, relative to the report's root when inside it."""
    verified: str
    """How it was verified."""
    document: Any
    """The parsed document."""


@dataclass
class Inputs:
    """Every verified input of one report."""

    root: Path
    """The directory the report is of."""
    index: Source | None = None
    """The demo index, when the root is a demo directory."""
    census: list[Source] = field(default_factory=list)
    """A104 census documents."""
    causal: list[Source] = field(default_factory=list)
    """Causal benchmark run reports (one per agent)."""
    instrument: Source | None = None
    """The C0–C5 instrument audit document."""
    ablations: Source | None = None
    """The causal ablation matrix report (rungbench.causal.ablations.analysis)."""
    analyses: list[Source] = field(default_factory=list)
    """Chess analysis documents (A105, E020/E021, E023)."""
    manifest: Source | None = None
    """The study's frozen manifest."""
    bindings: list[Source] = field(default_factory=list)
    """The study's bindings."""
    evaluations: list[Source] = field(default_factory=list)
    """Published evaluations (``document``: the summary, with the record under ``record``)."""
    flow: Source | None = None
    """The label stage's flow report."""
    runs: list[Source] = field(default_factory=list)
    """The study's run manifests (each anchored by its log's first record): who answered."""
    study: Path | None = None
    """The study directory, when there is one."""

    def all(self) -> list[Source]:
        """Every source, in inventory order."""
        singles = [s for s in (self.index, self.instrument, self.ablations, self.manifest,
                               self.flow) if s]
        return [*singles, *self.census, *self.causal, *self.analyses, *self.bindings,
                *self.evaluations, *self.runs]


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def collect(root: Path, *, stage: Path | None = None) -> Inputs:
    """Read and verify every input under ``root`` (a demo or a study directory)."""
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    inputs = Inputs(root=root)
    study: Path | None = root
    if (root / INDEX).is_file():
        study, indexed_stage = _demo(inputs)
        stage = stage or indexed_stage
    if study is not None and (study / "manifest").exists():
        inputs.study = study
        _study(inputs, study)
    elif inputs.index is None and (root / CAUSAL_RUN_MANIFEST).is_file():
        inputs.causal.append(_causal_run(root))
    elif inputs.index is None and _is_corpus(root):
        inputs.census.append(_census(root))
    if stage is not None and stage.exists():
        inputs.flow = _flow(stage, root)
    return inputs


def _demo(inputs: Inputs) -> tuple[Path | None, Path | None]:
    root = inputs.root
    path = root / INDEX
    data = path.read_bytes()
    index = loads_canonical(data.rstrip(b"\n"), path=str(path))
    if not isinstance(index, dict) or index.get("schema") != INDEX_SCHEMA:
        raise InputError(f"not a {INDEX_SCHEMA} document", path=str(path), field="schema")
    inputs.index = Source("index", bytes_digest(data.rstrip(b"\n")), INDEX,
                          "canonical JSON (the root of this report)", index)
    store = ObjectStore(root / OBJECTS)
    for key, digest in sorted(index.get("objects", {}).items()):
        kind = key.split(":", 1)[0]
        if kind not in KINDS:
            raise InputError(f"unknown report input kind {kind!r}", path=str(path), field=key)
        doc = store.get_json(digest)  # re-hashed on read; a changed object raises
        source = Source(key, digest, _rel(store.path_for(digest), root),
                        "content-addressed store (re-hashed on read)", doc)
        if kind == "instrument":
            inputs.instrument = source
        elif kind == "ablations":
            inputs.ablations = source
        else:
            getattr(inputs, {"census": "census", "causal": "causal",
                             "analysis": "analyses"}[kind]).append(source)
    study = root / index["study"] if index.get("study") else None
    stage = root / index["stage"] if index.get("stage") else None
    return study, stage


def _study(inputs: Inputs, study: Path) -> None:
    root = inputs.root
    manifest = load_manifest(study / "manifest")
    inputs.manifest = Source("manifest", manifest.digest, _rel(study / "manifest", root),
                             "sealed directory and self digest", manifest.document)
    for path in sorted((study / "bindings").glob("*.json")):
        data = path.read_bytes()
        if bytes_digest(data) != f"sha256:{path.stem}":
            raise IntegrityError(f"{path}: bytes do not hash to the file's name")
        inputs.bindings.append(Source(f"binding:{path.stem[:12]}", f"sha256:{path.stem}",
                                      _rel(path, root), "file name = digest of its bytes",
                                      loads_canonical(data, path=str(path))))
    for out in sorted(p for p in (study / "evaluations").glob("*")
                      if p.is_dir() and not p.name.startswith(".")):
        record = verify_evaluation(out)
        summary = loads_canonical((out / "summary.json").read_bytes(),
                                  path=str(out / "summary.json"))
        inputs.evaluations.append(Source(
            f"evaluation:{out.name}", bytes_digest((out / "evaluation.json").read_bytes()),
            _rel(out, root), "sealed directory, every file digest re-checked",
            {"summary": summary, "record": record}))
    for run_dir in sorted(p for p in (study / "runs").glob("*")
                          if p.is_dir() and not p.name.startswith(".")):
        manifest_doc, _ = load_run(run_dir)  # the manifest must hash to its log's anchor
        data = (run_dir / MANIFEST).read_bytes()
        inputs.runs.append(Source(f"run:{run_dir.name}", bytes_digest(data),
                                  _rel(run_dir / MANIFEST, root),
                                  "run manifest, anchored by its log's first record",
                                  manifest_doc))
    known = {canonical_digest(s.document) for s in inputs.analyses}
    for doc_path in sorted(study.rglob("analysis.json")):
        if verify_sealed(doc_path.parent).get("kind") not in ANALYSIS_KINDS:
            raise IntegrityError(f"{doc_path.parent}: sealed as another kind than an analysis")
        data = doc_path.read_bytes().rstrip(b"\n")
        doc = loads_canonical(data, path=str(doc_path))
        if canonical_digest(doc) in known:
            continue
        inputs.analyses.append(Source(f"analysis:{doc.get('design')} "
                                      f"({doc_path.parent.name})", bytes_digest(data),
                                      _rel(doc_path, root), "sealed directory", doc))


def _causal_run(run: Path) -> Source:
    sealed = open_run(run)  # the seal and every file verified
    report = build_report(run)
    report["run"] = run.name
    manifest = json.loads(sealed.read(CAUSAL_RUN_MANIFEST))
    agent = str(manifest.get("model") or run.name)  # the agent's label, not the folder's
    return Source(f"causal:{agent}", bytes_digest(sealed.read(CAUSAL_RUN_MANIFEST)),
                  CAUSAL_RUN_MANIFEST, "sealed scored run (seal and every file verified)",
                  report)


CORPUS_FILES = ("manifest.json", "corpus_manifest.json")
"""What marks a transcript corpus folder: a native corpus (``rungbench chess play``) or a
frozen folder of LLM Chess runs (``rungbench chess census --freeze``)."""


def _is_corpus(root: Path) -> bool:
    """Whether ``root`` holds a frozen corpus, or a native corpus manifest (a run's own
    ``manifest.json`` is another schema)."""
    if (root / CORPUS_FILES[1]).is_file():
        return True
    try:
        head = json.loads((root / CORPUS_FILES[0]).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(head, dict) and head.get("schema") == MANIFEST_SCHEMA


def _census(root: Path) -> Source:
    """The A104 census of a transcript corpus folder (every file verified, the games
    replayed; an excluded game is counted, as ``rungbench chess census`` counts it)."""
    from rungbench.chess.transcripts.census import census_path

    doc = census_path(root)
    marker = next(name for name in CORPUS_FILES if (root / name).is_file())
    return Source(f"census:{root.resolve().name}", canonical_digest(doc), marker,
                  "corpus files verified by sha256, every game replayed", doc)


def canonical_digest(doc: Any) -> str:
    """Digest of a document's canonical JSON."""
    return bytes_digest(canonical_bytes(doc))


def _flow(stage: Path, root: Path) -> Source:
    verify_stage_dir(stage)
    path = stage / "flow_report.json"
    data = path.read_bytes()
    return Source("label_flow", bytes_digest(data), _rel(path, root),
                  "sealed label stage, stage record verified", loads_canonical(
                      data.rstrip(b"\n"), path=str(path)))
