"""The ``--executor local|ray`` and ``--ray-address`` options shared by the stages that fan out.

A usage problem is exit 2 in one line: an unknown executor, ``ray`` without the optional
extra (naming ``pip install 'rungbench[ray]'``), or ``--ray-address`` without ``ray``.
:mod:`rungbench.execute.executors` is imported only once ``ray`` is asked for, so that
loading the CLI does not load the cell runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rungbench.execute.executors import ExecutorKind

KINDS = ("local", "ray")
"""The registered executors (:data:`rungbench.execute.executors.EXECUTOR_KINDS`)."""


def check_executor(value: str) -> str:
    """``--executor`` callback: a registered executor whose extra is installed."""
    if value not in KINDS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(KINDS)}")
    if value == "ray":
        from rungbench.execute.executors import ray_missing

        problem = ray_missing()
        if problem is not None:
            raise typer.BadParameter(problem)
    return value


def executor_kind(executor: str, ray_address: str | None) -> ExecutorKind:
    """The checked executor; ``--ray-address`` without ``--executor ray`` is a usage error."""
    if ray_address is not None and executor != "ray":
        raise typer.BadParameter("--ray-address needs --executor ray", param_hint="--ray-address")
    return "ray" if executor == "ray" else "local"


EXECUTOR_OPTION = typer.Option(
    "local", "--executor", callback=check_executor,
    help="Where the work items run: local (this process) or ray (Ray tasks; needs "
    "rungbench[ray]).")
RAY_ADDRESS_OPTION = typer.Option(
    None, "--ray-address", help="Join the Ray cluster at ADDR (default with --executor ray: "
    "start a local one with as many CPUs as --workers or --concurrency).")
