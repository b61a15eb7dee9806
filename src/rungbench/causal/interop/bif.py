"""All-binary BIF networks (``rungbench causal import bif``; docs/CONTRACTS.md §14).

Reads the Bayesian Interchange Format as bnlearn and pgmpy write it:
``variable NAME { type discrete [ 2 ] { s0, s1 }; }`` blocks and
``probability ( NAME | P1, P2 ) { (a, b) p0, p1; ... }`` or ``{ table p0, p1; }`` blocks,
with ``default`` rows and ``property`` lines allowed. Numbers are parsed with
``float()`` on the literal text (full double precision; pyAgrum's own parser loses
about 3e-8). Value 0 of a rungbench variable is the FIRST listed state, value 1 the
second; the state names are kept so answers can be read back.

Fail closed: a non-binary variable, a missing or repeated parent row, a row that does
not sum to 1 within :data:`ROW_TOLERANCE`, an unknown name or a cycle is an InputError
naming the file, line and variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rungbench.causal.scm.cpts import Cpt
from rungbench.errors import InputError

ROW_TOLERANCE = 1e-9
"""Each CPT row's two probabilities must sum to 1 within this."""

_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|[{}()\[\];,|]|[^\s{}()\[\];,|]+", re.S)


@dataclass(frozen=True)
class BifNetwork:
    """A parsed all-binary BIF network."""

    name: str
    """The network name (``network NAME``)."""
    states: Mapping[str, tuple[str, str]]
    """Per variable its two state names: value 0 = first, value 1 = second."""
    cpts: tuple[Cpt, ...]
    """P(V = second state | parents) per variable, in file order of the probability blocks."""


@dataclass(frozen=True)
class _Tok:
    text: str
    line: int


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith("//") or tok.startswith("/*"):
            continue
        out.append(_Tok(tok, text.count("\n", 0, m.start()) + 1))
    return out


class _Reader:
    def __init__(self, path: str, toks: list[_Tok]) -> None:
        self.path = path
        self.toks = toks
        self.i = 0

    def fail(self, message: str, *, field: str | None = None) -> InputError:
        line = self.toks[min(self.i, len(self.toks) - 1)].line if self.toks else None
        return InputError(message, path=self.path, line=line, field=field)

    def peek(self) -> str | None:
        return self.toks[self.i].text if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.toks):
            raise self.fail(f"unexpected end of file (expected {expected or 'a token'})")
        tok = self.toks[self.i].text
        if expected is not None and tok != expected:
            raise self.fail(f"expected {expected!r}, got {tok!r}")
        self.i += 1
        return tok

    def skip_block(self) -> None:
        depth = 0
        while True:
            tok = self.take()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    return

    def until(self, stop: str) -> list[str]:
        out = []
        while self.peek() != stop:
            out.append(self.take())
        self.take(stop)
        return out


def _number(reader: _Reader, text: str, var: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise reader.fail(f"not a number: {text!r}", field=var) from None
    if not 0.0 <= value <= 1.0:
        raise reader.fail(f"probability outside [0, 1]: {text!r}", field=var)
    return value


def _row(reader: _Reader, values: list[str], var: str) -> float:
    nums = [_number(reader, v, var) for v in values if v != ","]
    if len(nums) != 2:
        raise reader.fail(f"a binary row needs 2 probabilities, got {len(nums)}", field=var)
    if abs(nums[0] + nums[1] - 1.0) > ROW_TOLERANCE:
        raise reader.fail(f"row sums to {nums[0] + nums[1]!r}, not 1", field=var)
    return nums[1]


def _variable(reader: _Reader, states: dict[str, tuple[str, str]]) -> None:
    name = reader.take()
    if name in states:
        raise reader.fail(f"variable {name!r} declared twice", field=name)
    reader.take("{")
    found: tuple[str, str] | None = None
    while reader.peek() != "}":
        word = reader.take()
        if word == "type":
            body = reader.until(";")
            if body[:2] != ["discrete", "["] or "]" not in body:
                raise reader.fail("only discrete variables are supported", field=name)
            card = body[2]
            names = [t for t in body[body.index("{") + 1: body.index("}")] if t != ","]
            if card != "2" or len(names) != 2:
                raise reader.fail(f"variable {name!r} has {card} states; only binary networks "
                                  "can be imported", field=name)
            found = (names[0], names[1])
        else:
            reader.until(";")  # property lines
    reader.take("}")
    if found is None:
        raise reader.fail(f"variable {name!r} has no type", field=name)
    states[name] = found


def _probability(reader: _Reader, states: Mapping[str, tuple[str, str]]) -> Cpt:
    reader.take("(")
    head = [t for t in reader.until(")") if t != ","]
    if not head:
        raise reader.fail("empty probability head")
    var, parents = head[0], tuple(head[2:]) if len(head) > 1 else ()
    if len(head) > 1 and head[1] != "|":
        raise reader.fail(f"expected '|' after {var!r}", field=var)
    for name in (var, *parents):
        if name not in states:
            raise reader.fail(f"probability block names undeclared variable {name!r}", field=name)
    reader.take("{")
    k = len(parents)
    rows: dict[int, float] = {}
    default: float | None = None
    while reader.peek() != "}":
        tok = reader.take()
        if tok == "table":
            values = [v for v in reader.until(";") if v != ","]
            if len(values) != 2 * 2**k:
                raise reader.fail(f"table of {var!r} needs {2 * 2**k} numbers", field=var)
            nums = [_number(reader, v, var) for v in values]
            # BIF table order: the child's state varies slowest, the LAST parent fastest.
            for row in range(2**k):
                bits = [(row >> i) & 1 for i in range(k)]
                col = 0
                for b in bits:
                    col = col * 2 + b
                p0, p1 = nums[col], nums[2**k + col]
                if abs(p0 + p1 - 1.0) > ROW_TOLERANCE:
                    raise reader.fail(f"table row sums to {p0 + p1!r}, not 1", field=var)
                rows[row] = p1
        elif tok == "default":
            default = _row(reader, reader.until(";"), var)
        elif tok == "(":
            labels = [t for t in reader.until(")") if t != ","]
            if len(labels) != k:
                raise reader.fail(f"row of {var!r} names {len(labels)} parent states, needs {k}",
                                  field=var)
            row = 0
            for i, (parent, label) in enumerate(zip(parents, labels, strict=True)):
                if label not in states[parent]:
                    raise reader.fail(f"{label!r} is not a state of {parent!r}", field=var)
                row |= states[parent].index(label) << i
            if row in rows:
                raise reader.fail(f"row {labels!r} of {var!r} given twice", field=var)
            rows[row] = _row(reader, reader.until(";"), var)
        else:
            raise reader.fail(f"unexpected {tok!r} in probability block of {var!r}", field=var)
    reader.take("}")
    for row in range(2**k):
        if row not in rows:
            if default is None:
                raise reader.fail(f"CPT of {var!r} misses parent row {row}", field=var)
            rows[row] = default
    return Cpt(var, parents, tuple(rows[r] for r in range(2**k)))


def parse_bif(text: str, *, path: str = "<bif>") -> BifNetwork:
    """Parse BIF text into binary CPTs; InputError names the line and variable."""
    reader = _Reader(path, _tokens(text))
    name = "unknown"
    states: dict[str, tuple[str, str]] = {}
    cpts: dict[str, Cpt] = {}
    while reader.peek() is not None:
        word = reader.take()
        if word == "network":
            name = reader.take()
            reader.skip_block()
        elif word == "variable":
            _variable(reader, states)
        elif word == "probability":
            cpt = _probability(reader, states)
            if cpt.name in cpts:
                raise reader.fail(f"two probability blocks for {cpt.name!r}", field=cpt.name)
            cpts[cpt.name] = cpt
        else:
            raise reader.fail(f"unexpected {word!r} at top level")
    missing = sorted(set(states) - set(cpts))
    if missing:
        raise InputError(f"no probability block for {missing!r}", path=path)
    if not states:
        raise InputError("the file declares no variables", path=path)
    return BifNetwork(name, states, tuple(cpts.values()))


def read_bif(path: Path) -> BifNetwork:
    """Read and parse a BIF file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("BIF file not found", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", path=str(path)) from None
    return parse_bif(text, path=str(path))
