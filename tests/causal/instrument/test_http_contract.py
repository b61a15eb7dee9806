"""A user tool behind the HTTP contract on loopback gives the in-process table."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.instrument.cases import build_world
from rungbench.causal.instrument.controls import (
    condition_graphs,
    run_tool,
    summarize,
    write_conditions,
)
from rungbench.causal.instrument.http_contract import Unparseable, parse_response, serve_tool
from rungbench.causal.instrument.query import HttpTool, naive
from rungbench.causal.instrument.scorers import lenient, strict


def test_http_wrapped_naive_gives_the_same_table(tmp_path: Path) -> None:
    """Every row, tag and outcome of naive over HTTP equals the in-process run."""
    world = build_world()
    graphs = condition_graphs(world)
    stores = write_conditions(graphs, tmp_path)
    scorers = {"lenient": lenient, "strict": strict}
    local = run_tool("naive", naive, world, graphs, stores, scorers)
    with serve_tool(naive) as url:
        remote = run_tool(url, HttpTool(url), world, graphs, stores, scorers)
    for s in scorers:
        a, b = summarize(local, s, 40), summarize(remote, s, 40)
        del a["query"], b["query"]
        assert a == b
    assert [r.raw for r in local.runs] == [r.raw for r in remote.runs]


@pytest.mark.parametrize("body", [b"", b"[]", b'{"status": "maybe"}',
                                  b'{"status": "found", "paths": []}',
                                  b'{"status": "error", "error": {"code": "oops"}}',
                                  b'{"status": "found", "paths": [{"edges": [{"cause": 1}]}]}'])
def test_parser_refuses_responses_outside_the_contract(body: bytes) -> None:
    """Bad JSON, unknown status, found without paths, unknown error code: unparseable."""
    with pytest.raises(Unparseable):
        parse_response(body)
