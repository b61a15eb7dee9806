"""The JSON contract for auditing a user's own ``causal()``, and the harness parser.

**Request** — ``POST`` to the user's URL (loopback only unless ``--allow-remote``),
``Content-Type: application/json``, body::

    {"contract": "rungbench.causal.query/1",
     "store": "/abs/path/C1.sqlite",        # typed graph store to answer from
     "query": "does disk full cause oom kill?"}

``store`` is a SQLite file in the :mod:`graph_store` schema; the tool must answer from
that file only (each control condition is its own file). ``query`` is one of
``does X cause Y?``, ``what does X cause?``, ``what causes Y?``.

**Response** — status 200, body::

    {"status": "found" | "none" | "error",
     "paths": [{"edges": [{"cause": "A", "effect": "B", "polarity": "+" | "-",
                           "condition": null | "when C", "relation_kind": "causal_claim"}]}],
     "error": null | {"code": "empty_query" | "malformed_query" | "missing_node",
                      "message": "..."},
     "notes": ["..."]}

``found`` needs at least one path, ``none`` and ``error`` none; ``error`` needs an error
object. Each path is a chain from the query's cause toward its effect. Anything else —
another HTTP status, bad JSON, a missing or mistyped field — is *unparseable*, its own
outcome class in the control matrix (never scored as a miss).

:func:`parse_response` is the one harness parser: in-process tools' returns go through
the same bytes (:func:`raw_bytes`) so the parser is byte-identical for every tool and
every row. :func:`serve_tool` wraps any tool in a stdlib ``ThreadingHTTPServer`` on
127.0.0.1 (used by the tests and by ``--query`` users who want a template).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rungbench.causal.instrument.query import (
    ERROR_CODES,
    STATUSES,
    CausalTool,
    ResponseEdge,
    ToolRequest,
    ToolResponse,
)

CONTRACT = "rungbench.causal.query/1"
POLARITIES = ("+", "-")


class Unparseable(Exception):
    """The tool's output does not follow the response contract."""


def encode_request(request: ToolRequest) -> bytes:
    """The request body (canonical JSON, UTF-8)."""
    return json.dumps({"contract": CONTRACT, "store": request.store, "query": request.query},
                      sort_keys=True).encode()


def decode_request(body: bytes) -> ToolRequest:
    """Read a request body; :class:`Unparseable` when it breaks the contract."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unparseable(f"request is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("contract") != CONTRACT:
        raise Unparseable(f"request does not name contract {CONTRACT}")
    store, query = doc.get("store"), doc.get("query")
    if not isinstance(store, str) or not isinstance(query, str):
        raise Unparseable("request needs string fields store and query")
    return ToolRequest(store, query)


def raw_bytes(raw: object) -> bytes:
    """Any tool return as response bytes: ToolResponse, mapping, str or bytes."""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode()
    if isinstance(raw, ToolResponse):
        return json.dumps(raw.to_json(), sort_keys=True).encode()
    if isinstance(raw, dict):
        return json.dumps(raw, sort_keys=True).encode()
    if is_dataclass(raw) and not isinstance(raw, type):
        return json.dumps(asdict(raw), sort_keys=True).encode()
    raise Unparseable(f"tool returned a {type(raw).__name__}, not a response")


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Unparseable(f"{where} must be a string")
    return value


def parse_response(body: bytes) -> ToolResponse:
    """The harness parse stage: response bytes → :class:`ToolResponse`, or Unparseable."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unparseable(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise Unparseable("response is not a JSON object")
    status = doc.get("status")
    if status not in STATUSES:
        raise Unparseable(f"status {status!r} is not one of {STATUSES}")
    raw_paths = doc.get("paths", [])
    if not isinstance(raw_paths, list):
        raise Unparseable("paths must be a list")
    paths: list[tuple[ResponseEdge, ...]] = []
    for i, path in enumerate(raw_paths):
        edges = path.get("edges") if isinstance(path, dict) else None
        if not isinstance(edges, list) or not edges:
            raise Unparseable(f"paths[{i}].edges must be a non-empty list")
        out = []
        for j, e in enumerate(edges):
            where = f"paths[{i}].edges[{j}]"
            if not isinstance(e, dict):
                raise Unparseable(f"{where} must be an object")
            polarity = e.get("polarity", "+")
            if polarity not in POLARITIES:
                raise Unparseable(f"{where}.polarity must be + or -")
            out.append(ResponseEdge(
                str(_text(e.get("cause"), f"{where}.cause")),
                str(_text(e.get("effect"), f"{where}.effect")), str(polarity),
                _text(e.get("condition"), f"{where}.condition", optional=True),
                str(_text(e.get("relation_kind", "causal_claim"), f"{where}.relation_kind"))))
        paths.append(tuple(out))
    error = doc.get("error")
    code: str | None = None
    message = ""
    if status == "error":
        if not isinstance(error, dict) or error.get("code") not in ERROR_CODES:
            raise Unparseable(f"an error response needs error.code in {ERROR_CODES}")
        code, message = str(error["code"]), str(error.get("message", ""))
    if (status == "found") != bool(paths):
        raise Unparseable("status found needs paths; none and error carry none")
    notes = doc.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise Unparseable("notes must be a list of strings")
    return ToolResponse(str(status), tuple(paths), code, message, tuple(notes))


def _handler(tool: CausalTool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            try:
                request = decode_request(self.rfile.read(length))
            except Unparseable as exc:
                self._send(400, json.dumps({"error": str(exc)}).encode())
                return
            self._send(200, raw_bytes(tool(request)))

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def serve_tool(tool: CausalTool, port: int = 0) -> Iterator[str]:
    """Serve ``tool`` under the contract on 127.0.0.1; yield its URL; stop on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(tool))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/causal"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
