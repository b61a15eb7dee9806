"""DESIGN.md's layer rules as tests: imports point down only, and the checkers stand apart.

Every import in the package is read from the source (module level, inside functions and
under ``TYPE_CHECKING`` alike), so a lazy import cannot hide a violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "rungbench"

LAYERS = ("errors", "evidence", "stats", "design", "agents", "execute", "domain", "jobs",
          "report", "demo", "cli")
"""Bottom to top (DESIGN.md "Layers"); ``chess`` and ``causal`` share the domain layer."""

SUBSYSTEMS_MAY_NOT_IMPORT = {
    "chess.transcripts": ("chess.labels", "chess.studies"),
    "chess.labels": ("chess.transcripts", "chess.studies"),
    "chess.studies": ("chess.transcripts",),
    "causal.scm": ("causal.bench", "causal.checks", "causal.instrument"),
    "causal.bench": ("causal.checks", "causal.instrument"),
}
"""Within a domain: which seed systems a system may not reach into."""

INDEPENDENT = ("causal.checks.mc_check", "causal.checks.mc_world", "causal.checks.second_scorer")
"""Checkers written from the contracts alone: they import nothing from scm or bench."""

OWN_READERS = {"causal.checks.mc_check": ("causal.checks.mc_world",)}
"""The one import an independent checker may make besides errors: its own JSON reader."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _imports(path: Path) -> Iterator[str]:
    """Every ``rungbench.*`` module that ``path`` imports, relative to the package."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("rungbench."):
                yield name.removeprefix("rungbench.")


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): set(_imports(p)) for p in PACKAGE.rglob("*.py")}


def _layer(module: str) -> int:
    top = module.split(".")[0]
    if top in ("chess", "causal"):
        return LAYERS.index("domain")
    if top in ("", "__init__", "__version__", "py"):  # the package root: its version only
        return LAYERS.index("errors")
    return LAYERS.index(top)


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


GRAPH = _graph()


def test_the_graph_is_read_from_every_module() -> None:
    """The parsed graph covers the package and finds known edges (the test can fail)."""
    assert len(GRAPH) > 100
    assert "causal.scm.world" in GRAPH["causal.scm.oracle"]
    assert "chess.labels.config" in GRAPH["chess.labels.publish"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down_only(module: str) -> None:
    """No module imports a higher layer (cli > demo > jobs > domains > execute > … > errors)."""
    if module in ("", "__init__"):
        return
    upward = [t for t in GRAPH[module] if t and _layer(t) > _layer(module)]
    assert not upward, f"{module} imports a higher layer: {sorted(upward)}"


def test_chess_and_causal_never_import_each_other() -> None:
    """The two domains share no code: neither imports the other, even lazily."""
    crossing = sorted(
        f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
        if (_is(m, "chess") and _is(t, "causal")) or (_is(m, "causal") and _is(t, "chess"))
    )
    assert not crossing


@pytest.mark.parametrize("system", sorted(SUBSYSTEMS_MAY_NOT_IMPORT))
def test_seed_systems_keep_to_their_folder(system: str) -> None:
    """A seed system does not reach into a sibling system it must stay apart from."""
    forbidden = SUBSYSTEMS_MAY_NOT_IMPORT[system]
    found = sorted(
        f"{m} -> {t}" for m, targets in GRAPH.items() if _is(m, system)
        for t in targets if any(_is(t, f) for f in forbidden)
    )
    assert not found


@pytest.mark.parametrize("checker", INDEPENDENT)
def test_independent_checkers_import_neither_oracle_nor_bench(checker: str) -> None:
    """The Monte Carlo checker and the second scorer import nothing from scm or bench."""
    leaked = sorted(t for t in GRAPH[checker]
                    if _is(t, "causal.scm") or _is(t, "causal.bench"))
    assert not leaked
    own = {name for name in GRAPH[checker]
           if any(_is(name, reader) for reader in OWN_READERS.get(checker, ()))}
    assert GRAPH[checker] - own <= {"errors", "errors.InputError", "errors.IntegrityError"}


def test_no_import_circle_between_label_and_publish() -> None:
    """The label runner and publication do not import each other (their config is apart)."""
    assert not any(_is(t, "chess.labels.label") for t in GRAPH["chess.labels.publish"])


def test_cli_modules_are_thin() -> None:
    """No CLI module is longer than 300 lines: the library does the work."""
    long = {p.name: n for p in (PACKAGE / "cli").glob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300}
    assert not long


def test_every_sub_package_states_its_seed_and_imports() -> None:
    """Each domain sub-package's docstring names its seed and what it may import."""
    for init in list((PACKAGE / "chess").glob("*/__init__.py")) + list(
            (PACKAGE / "causal").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "seed" in doc.lower(), init
        assert "import" in doc.lower(), init


@pytest.mark.parametrize("layer", ["execute", "jobs"])
def test_the_runner_and_jobs_name_no_domain(layer: str) -> None:
    """The runner and ``jobs`` reach the domains only through the task registry
    (docs/ARCHITECTURE.md, "The task seam"): no import of chess or causal, even lazily."""
    found = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if _is(m, layer)
                   for t in targets if _is(t, "chess") or _is(t, "causal"))
    assert found == []
    assert "execute.tasks" in GRAPH["jobs.runs"]  # the dispatch is through the registry


def test_one_place_builds_a_provider() -> None:
    """``OpenAIProvider(`` is called in one module of the package (agents/providers.py), and
    no module but it and the demo's fault showcase starts a loopback server."""
    calls: dict[str, int] = {}
    servers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "OpenAIProvider":
                    calls[_module_name(path)] = calls.get(_module_name(path), 0) + 1
                if node.func.id == "LoopbackServer":
                    servers.add(_module_name(path))
    assert calls == {"agents.providers": 1}
    assert servers == {"agents.providers", "demo.runner"}


def test_domains_register_their_tasks_through_entry_points() -> None:
    """Each domain's tasks are in the registry, loaded from the package's entry points."""
    from rungbench.execute.tasks import registered

    assert set(registered()) == {"chess.move_choice/1", "causal.public_case/1",
                                 "causal.ablation_case/1", "causal.episode/2"}
