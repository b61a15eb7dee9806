"""Package faces (docs/ARCHITECTURE.md, "Layers"): each package's ``__init__`` declares
``__all__``, the names other packages may use, and no package imports another's private name.

A "package" is the directory holding a module. Imports are read from the source of every
module (module level and inside functions alike), so a lazy import cannot hide a violation.
The faces of the layer packages are pinned below, as httpx's ``test_exported_members`` pins
its own: a change to the public surface is a deliberate edit of this file.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "rungbench"

LAYER_FACES: dict[str, list[str]] = {
    "agents": [
        "Agent", "CallFailure", "Classification", "Message", "Outcome", "Request", "Response",
        "ToolCall", "Usage", "classify", "inspect_logs", "loopback", "models_check",
        "models_file", "openai_provider", "outcomes", "protocol", "providers", "spec",
    ],
    "execute": [
        "Cell", "RetryPolicy", "RunSummary", "Schedule", "create_run", "events", "execute_run",
        "executors", "policy", "progress", "run_dir", "runner", "schedule", "tasks", "tools",
        "verify_run",
    ],
    "evidence": [
        "DIGEST_PATTERN", "DIGEST_PREFIX", "DIGEST_SCHEME", "GENESIS", "INVENTORY", "UNSET",
        "BadObject", "BadRow", "Builder", "ChainReport", "Digest", "Event", "Exclusion",
        "Frozen", "FrozenRecord", "Gate", "GateReport", "InventoryReport", "Ledger",
        "MissingObject", "ObjectStore", "Precondition", "RefMove", "Refs", "RunManifest",
        "build_manifest", "bytes_digest", "canonical", "canonical_bytes", "check",
        "check_precondition", "check_reasons", "current_from_files", "database", "digest",
        "event_hash", "file_digest", "freeze", "freeze_files", "frozen_json_schema",
        "git_commit", "inventory", "is_canonical", "is_digest", "json_builder", "ledger",
        "load_record", "loads_canonical", "make_run_id", "manifest_json_schema", "operations",
        "parse_digest", "paths", "read_manifest", "recorded_digests", "require",
        "resolve_builder", "scheme_record", "sealed", "shared_data_dir", "store",
        "verify_chain", "verify_inventory", "write_atomic", "write_manifest",
    ],
    "stats": [
        "BinomialIntervals", "FactorialEstimands", "FactorialIntervals", "McNemarSampleSize",
        "MeanTest", "MinimumDetectableEffect", "PairedDelta", "PairedSummary", "adjust",
        "proportion_interval",
        "benjamini_hochberg", "benjamini_hochberg_adjust", "binomial_intervals", "bonferroni",
        "bonferroni_adjust", "bootstrap", "bootstrap_pvalue", "check_alpha", "check_count",
        "check_positive", "check_power", "clopper_pearson", "cluster_ratio_draws",
        "cluster_tests", "factorial", "factorial_2x2", "factorial_2x2_paired", "holm",
        "holm_adjust", "holm_first_step_alpha", "intervals", "mcnemar_power",
        "mcnemar_sample_size", "mde", "nan_interval", "paired", "paired_cluster_bootstrap",
        "paired_summary", "power", "seeds", "sums", "wilson",
    ],
    "design": ["audit", "factorial", "matching", "orders", "preset_models", "presets", "quotas",
               "registry", "schema"],
    "jobs": ["runs"],
    "report": [
        "PAGE", "REPORT_DIR", "absent", "collect", "default_out", "inputs", "render",
        "render_report",
    ],
}
"""The expected ``__all__`` of each top-level layer package, in any order."""


def _dotted(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _is_package(name: str) -> bool:
    return (SRC / name.replace(".", "/") / "__init__.py").is_file()


def _owner(name: str) -> str:
    """The package that holds ``name`` (a package is its own owner; a module's is its folder)."""
    while not _is_package(name):
        name = name.rsplit(".", 1)[0]
    return name


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


@dataclass(frozen=True)
class Import:
    """One imported ``rungbench`` name, as a module of the package writes it."""

    importer: str
    """The importing module, dotted (``rungbench.cli.stats``)."""
    module: str
    """``M`` of ``from M import name``, or the dotted name of ``import M``."""
    name: str | None
    """``name`` of ``from M import name``; None for ``import M``."""

    @property
    def package(self) -> str:
        """The package of the importing module."""
        return _owner(self.importer)

    @property
    def target(self) -> str:
        """The full dotted name imported."""
        return self.module if self.name is None else f"{self.module}.{self.name}"

    def private_parts(self) -> Iterator[tuple[str, str]]:
        """Each ``_``-prefixed part of the target, with the package it is private to."""
        parts = self.target.split(".")
        for i, part in enumerate(parts):
            if _is_private(part):
                yield part, _owner(".".join(parts[:i]))


def _imports(path: Path) -> Iterator[Import]:
    importer = _dotted(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rungbench."):
                    yield Import(importer, alias.name, None)
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and (node.module == "rungbench" or node.module.startswith("rungbench."))):
            for alias in node.names:
                yield Import(importer, node.module, alias.name)


IMPORTS = [i for p in sorted(PACKAGE.rglob("*.py")) for i in _imports(p)]
PACKAGES = sorted(_dotted(p) for p in PACKAGE.rglob("__init__.py"))


def _declared_all(package: str) -> list[str] | None:
    """The literal ``__all__`` list of ``package``'s ``__init__``, or None when absent."""
    init = SRC / package.replace(".", "/") / "__init__.py"
    found: list[str] | None = None
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        value = (node.value if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets) else None)
        if value is not None:
            assert isinstance(value, ast.List), f"{package}: __all__ is not a literal list"
            assert all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                       for e in value.elts), f"{package}: __all__ holds a non-string"
            found = [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return found


def _face(package: str) -> list[str]:
    declared = _declared_all(package)
    assert declared is not None, f"{package} declares no __all__"
    return declared


def test_imports_are_read_from_every_module() -> None:
    """The parser covers the package and finds known imports, lazy ones included."""
    assert len(PACKAGES) >= 21 and "rungbench.causal.scm" in PACKAGES
    assert len({i.importer for i in IMPORTS}) > 100
    # a lazy import inside a function of the ablations CLI
    assert Import("rungbench.cli.causal_ablations", "rungbench.causal.ablations",
                  "prereg") in IMPORTS
    # a private name shared inside one package is seen, and seen as the package's own
    common = Import("rungbench.cli.stats", "rungbench.cli._common", "run")
    assert common in IMPORTS
    assert list(common.private_parts()) == [("_common", "rungbench.cli")]
    assert common.package == "rungbench.cli"
    outside = Import("rungbench.cli.stats", "rungbench.stats._checks", "check_alpha")
    assert list(outside.private_parts()) == [("_checks", "rungbench.stats")]
    assert _owner("rungbench.errors") == "rungbench"
    assert _owner("rungbench.chess.labels.pool.PoolConfig") == "rungbench.chess.labels"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_declares_a_face_that_exists(package: str) -> None:
    """Each package ``__init__`` declares ``__all__`` as a literal list of distinct strings,
    and each entry is an attribute of the package or one of its submodules."""
    declared = _face(package)
    assert declared and len(declared) == len(set(declared))
    loaded = importlib.import_module(package)
    assert list(loaded.__all__) == declared
    missing = [n for n in declared if not hasattr(loaded, n)
               and importlib.util.find_spec(f"{package}.{n}") is None]
    assert not missing, f"{package}.__all__ names what does not exist: {missing}"


def test_no_package_imports_another_packages_private_name() -> None:
    """A ``_``-prefixed name (or module) is imported only from inside its own package."""
    leaks = sorted(f"{i.importer} imports {i.target} (private to {owner})"
                   for i in IMPORTS for _, owner in i.private_parts() if owner != i.package)
    assert not leaks


def _cli_violation(imp: Import) -> str | None:
    """Why the CLI may not make this import, or None when the target's face allows it."""
    if _is_package(imp.module):
        if imp.name is None:
            return None  # ``import rungbench.P`` binds only the package
        return None if imp.name in _face(imp.module) else f"{imp.name} not in {imp.module}"
    package, module = imp.module.rsplit(".", 1)
    if module not in _face(package):
        return f"module {module} not in {package}.__all__"
    if imp.name is not None and _is_private(imp.name):
        return f"private name {imp.name}"
    return None


CLI_IMPORTS = [i for i in IMPORTS if i.package == "rungbench.cli"
               and _owner(i.module) != "rungbench.cli"]


def test_the_cli_imports_from_library_packages() -> None:
    """The CLI's imports of library packages are read, lazy ones too (the test can fail)."""
    assert len(CLI_IMPORTS) > 100
    assert Import("rungbench.cli.stats", "rungbench.stats", "check_alpha") in CLI_IMPORTS
    assert _cli_violation(Import("rungbench.cli.x", "rungbench.stats", "_checks"))
    assert _cli_violation(Import("rungbench.cli.x", "rungbench.causal.scm.ordering", "f"))
    assert _cli_violation(Import("rungbench.cli.x", "rungbench.causal.scm.world", "_private"))


@pytest.mark.parametrize("imp", CLI_IMPORTS, ids=lambda i: f"{i.importer}:{i.target}")
def test_the_cli_imports_only_through_package_faces(imp: Import) -> None:
    """``from P import N`` needs N in ``P.__all__``; ``from P.M import N`` and
    ``import P.M`` need the module M in ``P.__all__`` and N not private."""
    assert _cli_violation(imp) is None, _cli_violation(imp)


@pytest.mark.parametrize("layer", sorted(LAYER_FACES))
def test_layer_faces_are_pinned(layer: str) -> None:
    """The public surface of each layer package is exactly the pinned list."""
    assert sorted(_face(f"rungbench.{layer}")) == sorted(LAYER_FACES[layer])
