"""No test builds a third-party SDK's exception by hand: provider failures in tests come from
the real client against the loopback server (a socket that stalls, closes or answers a status).

An SDK's exception constructors are internals: openai 3.60 stopped accepting
``APITimeoutError(request=None)`` and a test that built it broke on a fresh install. Every
test module is parsed; a call of an exception class imported from one of these SDKs fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SDKS = ("openai", "httpx", "httpx2", "aiohttp", "ray", "psycopg", "inspect_ai")
EXCEPTION_NAME = re.compile(r"(Error|Exception|Timeout|Disconnected|Failure)$")


def _sdk(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in SDKS


def sdk_exception_calls(source: str) -> list[tuple[int, str]]:
    """(line, spelling) of every call of an exception class from :data:`SDKS` in ``source``."""
    tree = ast.parse(source)
    modules: set[str] = set()  # local names bound to an SDK module
    classes: set[str] = set()  # local names bound to a class imported from an SDK
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names if _sdk(a.name)}
        elif isinstance(node, ast.ImportFrom) and _sdk(node.module):
            for alias in node.names:
                (classes if EXCEPTION_NAME.search(alias.name) else modules).add(
                    alias.asname or alias.name)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in classes:
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute) and EXCEPTION_NAME.search(func.attr):
            root = func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules:
                found.append((node.lineno, ast.unparse(func)))
    return found


def test_the_check_finds_each_spelling() -> None:
    """The parser finds a module-qualified, a from-imported and a submodule exception call
    (the suite-wide check below can fail), and not an ``isinstance`` test of one."""
    source = ("import openai\nimport aiohttp.client_exceptions as ce\n"
              "from httpx import ReadTimeout\nfrom ray import exceptions\n"
              "openai.APITimeoutError(request=None)\nReadTimeout('x')\n"
              "ce.ServerDisconnectedError()\nexceptions.RayTaskError()\n"
              "isinstance(e, openai.APITimeoutError)\nopenai.AsyncOpenAI()\n")
    assert [line for line, _ in sdk_exception_calls(source)] == [5, 6, 7, 8]


def test_no_test_builds_an_sdk_exception() -> None:
    """Every test module is free of calls that construct an SDK exception class."""
    found = {str(path.relative_to(TESTS)): calls for path in sorted(TESTS.rglob("*.py"))
             if path.name != Path(__file__).name
             and (calls := sdk_exception_calls(path.read_text(encoding="utf-8")))}
    assert found == {}
