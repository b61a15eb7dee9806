"""BIF networks (``rungbench causal import bif``; docs/CONTRACTS.md §14).

Reads the Bayesian Interchange Format as bnlearn and pgmpy write it:
``variable NAME { type discrete [ k ] { s0, ..., s(k-1) }; }`` blocks and
``probability ( NAME | P1, P2 ) { (a, b) p0, ..., p(k-1); ... }`` or ``{ table ...; }``
blocks, with ``default`` rows and ``property`` lines allowed. Numbers are parsed with
``float()`` on the literal text (full double precision; pyAgrum's own parser loses
about 3e-8). Value i of a rungbench variable is its (i+1)-th listed state; the state names
are kept so queries may name them and answers can be read back. Any token without
whitespace or BIF punctuation is a state name (child.bif's ``Asy/Patch``, which pyAgrum's
parser rejects, included).

An all-binary network gives binary CPTs without state names (its world is a
`rungbench.world/1` one, as before); a network with a variable of more than two states
gives every CPT its state names (a `rungbench.world/2` world).

Fail closed: a variable of fewer than 2 or more than 64 states, a missing or repeated
parent row, a row that does not sum to 1 within :data:`ROW_TOLERANCE`, an unknown name or
a cycle is an InputError naming the file, line, variable and row.
"""

from __future__ import annotations

import graphlib
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rungbench.causal.scm.cpts import Cpt
from rungbench.causal.scm.world import MAX_STATES
from rungbench.errors import InputError

ROW_TOLERANCE = 1e-6
"""Each CPT row's probabilities must sum to 1 within this."""

_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|[{}()\[\];,|]|[^\s{}()\[\];,|]+", re.S)


@dataclass(frozen=True)
class BifNetwork:
    """A parsed BIF network."""

    name: str
    """The network name (``network NAME``)."""
    states: Mapping[str, tuple[str, ...]]
    """Per variable its state names: value i = the (i+1)-th listed."""
    cpts: tuple[Cpt, ...]
    """Per variable, in file order of the probability blocks: P(V = second state | parents)
    for a binary variable, P(V = s | parents) for every state s otherwise."""

    @property
    def is_binary(self) -> bool:
        """True when every variable has two states."""
        return all(len(s) == 2 for s in self.states.values())


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


def _row(reader: _Reader, values: list[str], var: str, k: int, where: str
         ) -> tuple[float, ...]:
    nums = tuple(_number(reader, v, var) for v in values if v != ",")
    if len(nums) != k:
        raise reader.fail(f"{where} of {var!r} needs {k} probabilities, got {len(nums)}",
                          field=var)
    _check_sum(reader, nums, var, where)
    return nums


def _check_sum(reader: _Reader, nums: tuple[float, ...], var: str, where: str) -> None:
    total = math.fsum(nums)
    if abs(total - 1.0) > ROW_TOLERANCE:
        raise reader.fail(f"{where} of {var!r} sums to {total!r}, not 1", field=var)


def _variable(reader: _Reader, states: dict[str, tuple[str, ...]]) -> None:
    name = reader.take()
    if name in states:
        raise reader.fail(f"variable {name!r} declared twice", field=name)
    reader.take("{")
    found: tuple[str, ...] | None = None
    while reader.peek() != "}":
        word = reader.take()
        if word == "type":
            body = reader.until(";")
            if body[:2] != ["discrete", "["] or "]" not in body or "{" not in body:
                raise reader.fail("only discrete variables are supported", field=name)
            card = body[2]
            names = [t for t in body[body.index("{") + 1: body.index("}")] if t != ","]
            found = _states(reader, name, card, names)
        else:
            reader.until(";")  # property lines
    reader.take("}")
    if found is None:
        raise reader.fail(f"variable {name!r} has no type", field=name)
    states[name] = found


def _states(reader: _Reader, name: str, card: str, names: list[str]) -> tuple[str, ...]:
    """The declared states of ``name``: as many as ``[card]`` says, 2..MAX_STATES, distinct."""
    if not card.isdigit() or int(card) != len(names):
        raise reader.fail(f"variable {name!r} declares [{card}] states but lists {len(names)}",
                          field=name)
    if not 2 <= len(names) <= MAX_STATES:
        raise reader.fail(f"variable {name!r} has {len(names)} states; a variable has 2.."
                          f"{MAX_STATES}", field=name)
    if len(set(names)) != len(names):
        raise reader.fail(f"variable {name!r} lists a state twice: {names!r}", field=name)
    return tuple(names)


def _strides(cards: Sequence[int]) -> list[int]:
    out, step = [], 1
    for k in cards:
        out.append(step)
        step *= k
    return out


def _probability(reader: _Reader, states: Mapping[str, tuple[str, ...]]
                 ) -> tuple[str, tuple[str, ...], tuple[tuple[float, ...], ...]]:
    """(variable, parents, P(V = s | row) per row) of one probability block."""
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
    k = len(states[var])
    cards = [len(states[p]) for p in parents]
    strides = _strides(cards)
    n_rows = math.prod(cards)
    rows: dict[int, tuple[float, ...]] = {}
    default: tuple[float, ...] | None = None
    while reader.peek() != "}":
        tok = reader.take()
        if tok == "table":
            values = [v for v in reader.until(";") if v != ","]
            if len(values) != k * n_rows:
                raise reader.fail(f"table of {var!r} needs {k * n_rows} numbers", field=var)
            nums = [_number(reader, v, var) for v in values]
            # BIF table order: the child's state varies slowest, the LAST parent fastest.
            for col, digits in enumerate(itertools.product(*(range(c) for c in cards))):
                row = sum(v * st for v, st in zip(digits, strides, strict=True))
                dist = tuple(nums[s * n_rows + col] for s in range(k))
                _check_sum(reader, dist, var, f"table row {_names(states, parents, digits)}")
                rows[row] = dist
        elif tok == "default":
            default = _row(reader, reader.until(";"), var, k, "the default row")
        elif tok == "(":
            labels = [t for t in reader.until(")") if t != ","]
            if len(labels) != len(parents):
                raise reader.fail(f"row of {var!r} names {len(labels)} parent states, needs "
                                  f"{len(parents)}", field=var)
            row = 0
            for parent, label, stride in zip(parents, labels, strides, strict=True):
                if label not in states[parent]:
                    raise reader.fail(f"{label!r} is not a state of {parent!r}", field=var)
                row += states[parent].index(label) * stride
            if row in rows:
                raise reader.fail(f"row {labels!r} of {var!r} given twice", field=var)
            rows[row] = _row(reader, reader.until(";"), var, k, f"row {labels!r}")
        else:
            raise reader.fail(f"unexpected {tok!r} in probability block of {var!r}", field=var)
    reader.take("}")
    for row in range(n_rows):
        if row not in rows:
            if default is None:
                raise reader.fail(f"CPT of {var!r} misses parent row {row}", field=var)
            rows[row] = default
    return var, parents, tuple(rows[r] for r in range(n_rows))


def _names(states: Mapping[str, tuple[str, ...]], parents: Sequence[str],
           labels: Sequence[int]) -> list[str]:
    return [states[p][i] for p, i in zip(parents, labels, strict=True)]


def _cpt(var: str, parents: tuple[str, ...], dist: tuple[tuple[float, ...], ...],
         states: tuple[str, ...], *, named: bool) -> Cpt:
    """A binary CPT keeps P(V = second state | row) as written; a larger one every state."""
    names = states if named else ()
    if len(states) == 2:
        return Cpt(var, parents, tuple(d[1] for d in dist), True, names)
    return Cpt(var, parents, (), True, names, dist)


def parse_bif(text: str, *, path: str = "<bif>") -> BifNetwork:
    """Parse BIF text into CPTs (2-64 named states per variable); InputError names the file,
    the line and the variable, a cyclic parent relation the file and the cycle."""
    reader = _Reader(path, _tokens(text))
    name = "unknown"
    states: dict[str, tuple[str, ...]] = {}
    blocks: dict[str, tuple[tuple[str, ...], tuple[tuple[float, ...], ...]]] = {}
    while reader.peek() is not None:
        word = reader.take()
        if word == "network":
            name = reader.take()
            reader.skip_block()
        elif word == "variable":
            _variable(reader, states)
        elif word == "probability":
            var, parents, dist = _probability(reader, states)
            if var in blocks:
                raise reader.fail(f"two probability blocks for {var!r}", field=var)
            blocks[var] = (parents, dist)
        else:
            raise reader.fail(f"unexpected {word!r} at top level")
    missing = sorted(set(states) - set(blocks))
    if missing:
        raise InputError(f"no probability block for {missing!r}", path=path)
    if not states:
        raise InputError("the file declares no variables", path=path)
    try:
        graphlib.TopologicalSorter({v: ps for v, (ps, _) in blocks.items()}).prepare()
    except graphlib.CycleError as exc:
        raise InputError(f"the parent relation has a cycle through {exc.args[1]!r}",
                         path=path) from None
    named = any(len(s) > 2 for s in states.values())
    return BifNetwork(name, states, tuple(_cpt(v, ps, dist, states[v], named=named)
                                          for v, (ps, dist) in blocks.items()))


def read_bif(path: Path) -> BifNetwork:
    """Read and parse a BIF file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("BIF file not found", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", path=str(path)) from None
    return parse_bif(text, path=str(path))
