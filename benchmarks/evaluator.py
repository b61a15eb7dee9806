"""The different-family evaluator (seed 002): model fit, registration and full-size figures.

Subcommands (``.venv/bin/python benchmarks/evaluator.py SUB ...``):

* ``targets --out T.json`` — Stockfish's own WDL expectation (label contract: 50,000
  nodes, one thread, cleared hash, ``UCI_ShowWDL``) of the fit positions: bundled-data
  pool positions (:func:`rungbench.chess.labels.pool.build_pool`) and a seeded sample of
  their successors;
* ``fit --evaluator E --targets T.json`` — the evaluator's cp at its registered depth on
  the same positions, the logistic fit, and the model file
  ``chess/data/wdl_<E>.json`` (model + fit report) plus its registry entry (name,
  reference signature, model digest) in ``chess/data/evaluators.json``;
* ``bench [--positions N]`` — on N labelled positions from the bundled data: the fit
  report, Spearman correlation between Ethereal regret and Stockfish regret over every
  pass-A candidate move, best-move agreement, and successor evaluations per second of
  the stage against a bare UCI session doing the same searches (target ≤ 1.10×).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from typing import Any

import chess.engine
import numpy as np

import chess
from rungbench.chess.labels.pool import PoolConfig, PoolSource, build_pool, bundled_data_dir
from rungbench.chess.position import normalized_key
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.wdl_model import (
    FitPoint,
    board_phase,
    fit_model,
    load_model,
    model_file,
)
from rungbench.evidence.canonical import canonical_bytes, digest

SEED = 20260212
"""Seed of the successor sample."""
SUCCESSORS_PER_POSITION = 8
"""Successors sampled per fit position (plus the position itself)."""


def fit_fens(n_positions: int) -> list[dict[str, str]]:
    """Return the fit positions: pool positions (real FEN) and a seeded successor sample."""
    data = bundled_data_dir()
    sources = [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv", 80),
               PoolSource("pgn_jsonl", data / "kaggle_chess_positions"
                          / "filtered_chess_positions.jsonl", 80)]
    pool = build_pool(sources, PoolConfig(reserve=0))["positions"]
    rng = np.random.default_rng(SEED)
    out: list[dict[str, str]] = []
    for position in pool[:n_positions]:
        board = chess.Board(position["fen"])
        out.append({"fen": board.fen(), "engine_fen": normalized_key(board) + " 0 1"})
        moves = sorted(m.uci() for m in board.legal_moves)
        for i in rng.choice(len(moves), min(SUCCESSORS_PER_POSITION, len(moves)), replace=False):
            child = board.copy(stack=False)
            child.push_uci(moves[int(i)])
            if child.is_game_over(claim_draw=False):
                continue
            root = chess.Board(normalized_key(board) + " 0 1")
            root.push_uci(moves[int(i)])
            out.append({"fen": child.fen(), "engine_fen": root.fen()})
    return out


def targets(out: pathlib.Path, n_positions: int) -> None:
    """Write Stockfish's WDL expectation of every fit FEN."""
    fens = fit_fens(n_positions)
    engine = chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish", timeout=30)
    engine.configure({"Threads": 1, "Hash": 16, "UCI_ShowWDL": True})
    rows = []
    for row in fens:
        board = chess.Board(row["fen"])
        info = engine.analyse(board, chess.engine.Limit(nodes=50_000), game=object())
        wdl = info["wdl"].pov(board.turn)
        if info["score"].relative.mate() is not None:
            continue
        rows.append({**row, "wdl": [wdl.wins, wdl.draws, wdl.losses]})
    engine.quit()
    out.write_text(json.dumps({"engine": "Stockfish 15.1", "nodes": 50_000, "seed": SEED,
                               "positions": n_positions, "rows": rows}))
    print(f"{len(rows)} targets written to {out}")


def fit(key: str, targets_path: pathlib.Path) -> None:
    """Fit the evaluator's model, write its data file and registry entry."""
    spec = ev.EVALUATORS[key]
    config = ev.EvaluatorConfig(evaluator=key)
    rows = json.loads(targets_path.read_text())["rows"]
    engine = ev.start_engine(config)
    name = str(engine.id["name"])
    points = []
    t0 = time.perf_counter()
    for row in rows:
        board = chess.Board(row["engine_fen"])
        info = ev.search(engine, board, spec.depth, name=name, timeout_s=120)
        score = info["score"].pov(board.turn)
        if score.mate() is not None:
            continue
        w, d, _ = row["wdl"]
        points.append(FitPoint(int(score.score()), board_phase(board), (2 * w + d) / 2000))
    signature = ev.measure_signature(engine, config, name)
    ev.close_engine(engine)
    model, report = fit_model(points, name=f"{key}-{name.split()[-1]}-logistic", version=1,
                              engine=name, depth=spec.depth)
    report["targets"] = {"engine": "Stockfish 15.1", "nodes": 50_000, "seed": SEED,
                         "file_digest": digest(json.loads(targets_path.read_text())),
                         "fit_points": len(points), "seconds": round(time.perf_counter() - t0, 1)}
    filename = f"wdl_{key}.json"
    model_file(filename).write_bytes(canonical_bytes({"model": model.to_json(), "fit": report}))
    reg_path = model_file(ev.REGISTRY_FILE)
    registry = (json.loads(reg_path.read_text()) if reg_path.is_file()
                else {"schema": "rungbench.chess.evaluators/1", "evaluators": {}})
    registry["evaluators"][key] = {"name": name, "family": spec.family,
                                   "signature_depth": ev.SIGNATURE_DEPTH, "signature": signature,
                                   "model": {"file": filename, "digest": model.digest}}
    reg_path.write_bytes(canonical_bytes(registry))
    print(json.dumps({"model": model.to_json(), "digest": model.digest, "fit": report}, indent=1))


def print_fit_report(key: str) -> dict[str, Any]:
    """Print the registered model's fit report."""
    model, report = load_model(model_file(f"wdl_{key}.json"))
    print(f"conversion model {model.name} v{model.version} ({model.digest})")
    print(f"  k0={model.k0} k1={model.k1}; n={report['n']} log-loss={report['log_loss']} "
          f"(floor {report['log_loss_floor']}, constant-0.5 {report['log_loss_constant_half']})")
    for row in report["calibration_by_decile"]:
        print(f"  decile {row['decile']:>2}: n={row['n']:>4} predicted {row['mean_predicted']:.4f}"
              f"  target {row['mean_target']:.4f}")
    for phase in (1.0, 0.5):
        print(f"  E(0)-E(-300cp) at phase {phase}: "
              f"{0.5 - model.expectation(-300, phase):.4f}; pawn "
              f"{0.5 - model.expectation(-100, phase):.4f}; rook "
              f"{0.5 - model.expectation(-500, phase):.4f}")
    return report


def _label_stage(work: pathlib.Path, puzzles: int, games: int) -> pathlib.Path:
    """Freeze a bundled-data pool, qualify it and run the registered label stage."""
    from rungbench.chess.engine import EngineConfig
    from rungbench.chess.labels.cohort import freeze_cohort
    from rungbench.chess.labels.config import LabelConfig
    from rungbench.chess.labels.idle import IdleGate
    from rungbench.chess.labels.label import run_label_stage
    from rungbench.chess.labels.pool import freeze_pool
    from rungbench.chess.labels.qualify import qualify
    from rungbench.chess.workspace import Workspace

    data = bundled_data_dir()
    ws = Workspace(work / "labels")
    if not ws.stage.exists():
        freeze_pool(ws, [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv",
                                    puzzles),
                         PoolSource("pgn_jsonl", data / "kaggle_chess_positions"
                                    / "filtered_chess_positions.jsonl", games)],
                    PoolConfig(reserve=0))
        llm = data / "llm_chess"
        freeze_cohort(ws, "pilot", sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46")
                                          .glob("2025*.json")), terminal=True)
        freeze_cohort(ws, "replication", [llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
                      terminal=True)
        qualify(ws)
        t0 = time.perf_counter()
        summary = run_label_stage(ws, LabelConfig(engine=EngineConfig(), workers=2),
                                  IdleGate(max_load=1e9))
        print(f"label stage: {summary['labelled']} labelled, {summary['excluded']} excluded "
              f"({time.perf_counter() - t0:.0f} s)")
    return ws.stage


def bench(n_positions: int, work: pathlib.Path) -> None:
    """Print the fit reports and the full-size figures of the evaluator."""
    from scipy.stats import spearmanr

    from rungbench.chess.labels.idle import IdleGate
    from rungbench.chess.labels.stage_records import read_stage
    from rungbench.chess.reference_agents import RandomMover
    from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
    from rungbench.chess.studies.move_choice import fen_schedule
    from rungbench.chess.studies.successor_records import SuccessorKey
    from rungbench.execute.runner import create_run, execute_run

    for key in ("ethereal", "toga2", "stockfish"):
        print_fit_report(key)
    stage = _label_stage(work, 160, 80)
    manifest, lists = read_stage(stage)
    keys = [k for k, _ in manifest.entries][:n_positions]
    print(f"positions evaluated: {len(keys)} labelled (target {n_positions})")
    source = work / "positions.jsonl"
    source.write_text("".join(json.dumps({"fen": lists[k].fen, "id": f"p{i:04d}"}) + "\n"
                              for i, k in enumerate(keys)))
    run_dir = create_run(work / "out", fen_schedule(source), {"name": "reference:random"},
                         run_id=f"bench-{time.time_ns()}")
    execute_run(run_dir, RandomMover())
    config = ev.EvaluatorConfig(evaluator="ethereal")
    out = work / "evaluation"
    t0 = time.perf_counter()
    summary = evaluate_run(run_dir, stage, config,
                           StageOptions(cache=work / f"cache-{time.time_ns()}", out=out),
                           IdleGate(max_load=1e9))
    stage_s = time.perf_counter() - t0
    searches = summary["run"]["searches"]
    positions = {p["key"]: p for p in json.loads((out / "positions.json").read_text())
                 ["positions"]}
    eth, sf, agree = [], [], 0
    for k in keys:
        cands = lists[k].candidates
        best_sf = max(c.expectation for c in cands)
        table = {m["move"]: m["expectation_ppm"] for m in positions[k]["moves"]}
        e_best = positions[k]["e_best_ppm"]
        for c in cands:
            sf.append(best_sf - c.expectation)
            eth.append((e_best - table[c.uci]) / 1e6)
        agree += cands[0].uci in positions[k]["best_moves"]
    rho = spearmanr(eth, sf)
    print(f"Spearman(Ethereal regret, Stockfish regret) over {len(eth)} pass-A candidates: "
          f"rho={rho.statistic:.4f} (p={rho.pvalue:.2g})")
    print(f"best-move agreement (Stockfish rank 1 in Ethereal best set): {agree}/{len(keys)} "
          f"= {agree / len(keys):.3f}")
    print(f"evaluation summary: {json.dumps(summary['summary'], sort_keys=True)[:400]}")
    boards = [SuccessorKey("", "", 0, k, m["move"]).successor for k in keys
              for m in positions[k]["moves"] if m["record"] != "rule"]
    engine = chess.engine.SimpleEngine.popen_uci(str(config.binary))
    engine.configure(config.uci_options())
    t1 = time.perf_counter()
    for board in boards:
        engine.analyse(board, chess.engine.Limit(depth=config.search_depth), game=object())
    bare_s = time.perf_counter() - t1
    engine.quit()
    print(f"stage: {searches} searches in {stage_s:.1f} s = {searches / stage_s:.1f}/s "
          f"(whole stage: inputs, identity, cache, publication)")
    print(f"bare UCI session: {len(boards)} searches in {bare_s:.1f} s = "
          f"{len(boards) / bare_s:.1f}/s; overhead ratio {stage_s / bare_s:.3f}x (target <= 1.10)")


def main(argv: list[str]) -> None:
    """Dispatch the subcommands."""
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("targets")
    t.add_argument("--out", type=pathlib.Path, required=True)
    t.add_argument("--positions", type=int, default=150)
    f = sub.add_parser("fit")
    f.add_argument("--evaluator", required=True, choices=sorted(ev.EVALUATORS))
    f.add_argument("--targets", type=pathlib.Path, required=True)
    b = sub.add_parser("bench")
    b.add_argument("--positions", type=int, default=100)
    b.add_argument("--work", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    if args.cmd == "targets":
        targets(args.out, args.positions)
    elif args.cmd == "fit":
        fit(args.evaluator, args.targets)
    else:
        bench(args.positions, args.work or pathlib.Path(tempfile.mkdtemp()))


if __name__ == "__main__":
    main(sys.argv[1:])
