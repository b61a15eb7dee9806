"""The decisive probes gate the run with a refusal naming the defect."""

from __future__ import annotations

import pytest

from rungbench.causal.instrument.cases import build_world
from rungbench.causal.instrument.probes import gate, run_probes
from rungbench.causal.instrument.query import ToolRequest, ToolResponse, fixed, naive
from rungbench.causal.instrument.scorers import lenient, strict
from rungbench.errors import Refusal


def test_fixed_and_naive_pass_probe_c3_strict_passes_c6() -> None:
    """Both queries return an intact direct edge; fixed × strict passes the gate."""
    results = run_probes({"naive": naive, "fixed": fixed}, {"strict": strict},
                         build_world().cases)
    gate(results)


def test_lenient_scorer_is_refused() -> None:
    """The lenient scorer fails C.6 (accepts a reversal): refusal code scorer_defect."""
    with pytest.raises(Refusal) as exc:
        gate(run_probes({"fixed": fixed}, {"lenient": lenient}, build_world().cases))
    assert exc.value.codes == ("scorer_defect",)


def test_query_that_loses_intact_edges_is_refused() -> None:
    """A causal() answering 'none' to everything fails C.3: query_misses_intact_edge."""
    def empty(request: ToolRequest) -> ToolResponse:
        return ToolResponse("none")

    with pytest.raises(Refusal) as exc:
        gate(run_probes({"empty": empty}, {"strict": strict}, build_world().cases))
    assert exc.value.codes == ("query_misses_intact_edge",)
