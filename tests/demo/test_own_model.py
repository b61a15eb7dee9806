"""Evaluating one's own model, as a user types it: every study kind on one endpoint.

A models file names one agent, ``my-model``, at a real HTTP server on loopback (the real
``openai`` client, the key in an environment variable). From the demo's label stage and
the bundled data, the commands of docs/ONBOARDING.md ("Evaluate your own model") run in
order: the models check, the causal benchmark, the C0–C5 controls with the model as the
``causal()`` query, one ablation arm, the A104 census (play, then census), and A105,
E020/E021 and E023 from presets copied for ``my-model``; then the report. The endpoint's
request log shows the endpoint model id, the registered parameters and a bearer on every
request; the key is in no file any command wrote; the label (not the endpoint model id)
names the model in every table, and the id, URL and parameters are in the provenance.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import chess
from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.chess.reference_agents import fen_metadata
from rungbench.cli import app
from rungbench.demo import StageResult
from rungbench.demo.labels import workspace

ROOT = Path(__file__).resolve().parents[2]
ONBOARDING = ROOT / "docs" / "ONBOARDING.md"
KEY = "sk-own-model-9f3c2e71d4a8b605"
ENDPOINT_MODEL = "vendor/own-model-7b"
KEY_VARIABLE = "MY_ENDPOINT_KEY"
PARAMS = {"temperature": 0, "max_tokens": 256, "seed": 7}
_UCI_LIST = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?(,[a-h][1-8][a-h][1-8][qrbn]?)*")
_EDGE = re.compile(r"^(?P<cause>.+?) -> (?P<effect>.+?) \| (?P<polarity>[+-]) \| "
                   r"(?P<condition>.+?) \| (?P<kind>\S+)$", re.M)


def _pick(request: Request, options: list[str]) -> str:
    """A deterministic choice among ``options`` (by the payload's digest)."""
    return options[int(request.payload_digest()[7:15], 16) % len(options)]


class OwnModel:
    """The model behind the endpoint: it sees only the wire payload, as a real endpoint
    does, and answers each kind of request the studies send."""

    name = "own-model"

    def respond(self, request: Request) -> Response:
        """Answer by the tool the request offers (or, without tools, the game dialogue)."""
        tools = [t["function"]["name"] for t in request.tools]
        text = request.messages[-1].content
        if not tools:  # LLM Chess: ask for the legal moves, then play one of them
            last = text.strip()
            return Response(text=f"make_move {_pick(request, last.split(','))}"
                            if _UCI_LIST.fullmatch(last) else "get_legal_moves")
        if "submit_move" in tools or "submit_shortlist" in tools:
            return self._chess(request, tools, text)
        if "answer_query" in tools:
            return self._call("answer_query", self._query(text))
        if "submit_word" in tools:  # rungbench models check
            return self._call("submit_word", {"word": "ready"})
        return self._call("submit_answer", {"status": "answer", "value": 0.5,
                                            "confidence": 0.5})

    def _chess(self, request: Request, tools: list[str], text: str) -> Response:
        fen = fen_metadata(request.payload())["fen"]
        legal = sorted(m.uci() for m in chess.Board(fen).legal_moves)
        if "submit_shortlist" in tools:
            k = int(re.search(r"List the (\d+) moves", text).group(1))  # type: ignore[union-attr]
            start = int(request.payload_digest()[7:15], 16) % len(legal)
            return self._call("submit_shortlist",
                              {"moves": [legal[(start + i) % len(legal)] for i in range(k)]})
        return self._call("submit_move", {"move": _pick(request, legal)})

    @staticmethod
    def _query(text: str) -> dict[str, Any]:
        """A direct-edge lookup: 'does X cause Y?' is found when the graph lists X -> Y."""
        edges = [m.groupdict() for m in _EDGE.finditer(text)]
        asked = re.search(r"Query: does (.+?) cause (.+?)\?", text)
        for e in edges if asked else []:
            if (e["cause"], e["effect"]) == asked.groups():  # type: ignore[union-attr]
                condition = None if e["condition"] == "always" else e["condition"]
                edge = {"cause": e["cause"], "effect": e["effect"], "polarity": e["polarity"],
                        "condition": condition, "relation_kind": e["kind"]}
                return {"status": "found", "paths": [{"edges": [edge]}], "error": None}
        return {"status": "none", "paths": [], "error": None}

    @staticmethod
    def _call(name: str, arguments: dict[str, Any]) -> Response:
        return Response(text=None, tool_calls=(ToolCall(name, json.dumps(arguments)),))


def onboarding_commands() -> list[str]:
    """The ``rungbench`` command lines of ONBOARDING's "Evaluate your own model" section,
    in order (the user's recipe; this test runs exactly these)."""
    text = ONBOARDING.read_text(encoding="utf-8")
    section = text.split("## Evaluate your own model", 1)[1].split("\n## ", 1)[0]
    commands, fenced = [], False
    for line in section.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("rungbench "):
            commands.append(line.strip())
    return commands


def _models_toml(base_url: str) -> str:
    return (f'[models.my-model]\nmodel = "{ENDPOINT_MODEL}"\nbase_url = "{base_url}"\n'
            f'api_key_env = "{KEY_VARIABLE}"\nusd_per_mtok_in = 0.2\nusd_per_mtok_out = 0.6\n\n'
            "[models.my-model.params]\ntemperature = 0\nmax_tokens = 256\nseed = 7\n")


class User:
    """Types the recipe's commands in one folder, filling the placeholders each command's
    output names (run ids, binding and authorization digests)."""

    def __init__(self, home: Path, env: dict[str, str], values: dict[str, str]) -> None:
        self.home, self.env, self.values = home, env, values

    def type(self, line: str) -> dict[str, Any]:
        filled = line
        for name, value in sorted(self.values.items(), key=lambda kv: -len(kv[0])):
            filled = filled.replace(name, value)
        assert not re.search(r"\b[A-Z][A-Z0-9_]{3,}\b", filled.replace("MY_ENDPOINT_KEY", "")), \
            f"unfilled placeholder in {filled!r}"
        args = [*shlex.split(filled)[1:], "--json"]
        result = CliRunner().invoke(app, args, env=self.env, catch_exceptions=False)
        assert result.exit_code == 0, (filled, result.output[-3000:])
        return dict(json.loads(result.stdout))


@pytest.fixture(scope="module")
def endpoint() -> Any:
    """The user's endpoint: a loopback OpenAI-compatible server serving only the endpoint
    model id, keeping a log of every request."""
    with LoopbackServer(OwnModel(), api_key=KEY, serves={ENDPOINT_MODEL}, keep_log=True,
                        metadata_fn=fen_metadata) as server:
        yield server


def test_the_recipe_runs_every_study_kind_on_ones_own_model(
        labelled: tuple[Path, StageResult], endpoint: LoopbackServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command of the recipe exits 0 on the user's endpoint; the report names the
    agent by its label and shows its endpoint model id, URL and parameters; every request
    carried the endpoint model id, the parameters and a bearer; the key is in no file."""
    workdir, _ = labelled
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models.toml").write_text(_models_toml(endpoint.base_url), encoding="utf-8")
    stage = workspace(workdir).stage
    # smaller than the recipe where only time differs: 2 worlds, and the evaluator at depth 2
    # on a host the rest of the suite keeps busy (the registered depth is what the recipe runs)
    evaluate = "evaluate --study my-study --stage $S"
    user = User(tmp_path, {KEY_VARIABLE: KEY, "COLUMNS": "200"},
                {"$S": str(stage), "--worlds 8": "--worlds 2",
                 evaluate: f"{evaluate} --depth 2 --max-load 64"})
    commands = onboarding_commands()
    assert len(commands) >= 20
    outputs: dict[str, dict[str, Any]] = {}
    for line in commands:
        out = user.type(line)
        outputs[line] = out
        _learn(user.values, line, out)
    _check_outputs(outputs)
    requests = [r for r in endpoint.log if r.get("model") is not None]
    assert len(requests) > 500
    assert {r["model"] for r in requests} == {ENDPOINT_MODEL}
    assert all({k: r.get(k) for k in PARAMS} == PARAMS for r in requests)
    assert {r["authorization"] for r in requests} == {"Bearer"}
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 100
    assert not [p for p in written if KEY.encode() in p.read_bytes()]
    _check_report(tmp_path / "my-study" / "report" / "index.html", endpoint.base_url)


def _learn(values: dict[str, str], line: str, out: dict[str, Any]) -> None:
    """Remember what a command printed that a later one names."""
    if line.startswith("rungbench run "):
        values["RUN_ID"] = str(out["run_id"])
    if " study bind " in line:
        design = str(out["design"]).replace("E020_E021", "E020")
        values[f"{design}_BINDING"] = str(out["binding"])[7:19]
    if " study authorize " in line:
        values["AUTHORIZATION"] = str(out["authorization"])[7:19]
    if " study run " in line and "--probe" in line:
        values["PROBE_RUN_ID"] = str(out["run_id"])


def _check_outputs(outputs: dict[str, dict[str, Any]]) -> None:
    """What each kind of command reported."""
    for line, out in outputs.items():
        if line.startswith("rungbench models check"):
            assert out["ok"] and out["agents"][0]["model"] == ENDPOINT_MODEL
        elif line.startswith("rungbench run "):
            assert out["complete"] and out["agent_responses"]["responses"] > 0
        elif line.startswith("rungbench causal score"):
            assert out["agent"] == "my-model"
        elif line.startswith("rungbench causal controls"):
            assert out["table"][0]["query"] == "model"
        elif line.startswith("rungbench causal ablate"):
            assert set(out["runs"]) == {"A0"}
        elif line.startswith("rungbench chess census"):
            assert out["counts"]["eligible_attempts"] > 0
        elif " study run " in line:
            assert out["complete"] and out["model"] == "my-model", out
        elif " study analyze" in line:
            for doc in out["analyses"]:
                assert "models_not_run" not in doc
                cells = (Path(doc["out"]) / "cells.jsonl").read_text().splitlines()[1:]
                assert {json.loads(c)["model"] for c in cells} == {"my-model"}


def _check_report(page: Path, base_url: str) -> None:
    """The report names the model by its label and shows what the label stood for."""
    html = page.read_text(encoding="utf-8")
    agents = html.split('<table id="agents">', 1)[1].split("</table>", 1)[0]
    assert "my-model" in agents and ENDPOINT_MODEL in agents and base_url in agents
    assert "temperature=0" in agents and "max_tokens=256" in agents
    assert KEY_VARIABLE in agents and "model at an endpoint" in agents
    assert html.count(ENDPOINT_MODEL) == agents.count(ENDPOINT_MODEL)  # only there
    assert "Models measured here: my-model" in html
    assert "planted mechanism" not in html.split('<section id="agents">', 1)[0]


def test_the_recipe_in_onboarding_is_the_one_this_test_runs() -> None:
    """ONBOARDING's recipe holds every study kind's commands (so the test above, which
    runs exactly those lines, covers each)."""
    joined = "\n".join(onboarding_commands())
    for needed in ("rungbench models check", "rungbench causal build", "rungbench run ",
                   "rungbench causal score", "rungbench causal controls --query model",
                   "rungbench causal ablate", "rungbench chess play", "rungbench chess census",
                   "rungbench design new demo_a105", "rungbench design new demo_e020_e021",
                   "rungbench design new demo_e023", "rungbench chess study bind",
                   "rungbench chess study authorize", "--probe", "--shortlist-from",
                   "rungbench chess study evaluate", "rungbench chess study analyze",
                   "rungbench report my-study"):
        assert needed in joined, needed
