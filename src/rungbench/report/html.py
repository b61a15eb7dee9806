"""HTML building blocks of the static report: escaping, tables, digest references, the page.

Everything that reaches the page from a document passes :func:`esc` (text and attribute
values alike), so a variable name, a model label or a claim sentence cannot inject markup.
A digest is shown in short form and links to its entry in the page's object inventory
(``#obj-<hex>``), where the full digest, the file it came from and how it was verified
are listed. No script, no network, no external stylesheet: the page is one file.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

Cell = str
"""Already-escaped HTML of one table cell."""

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;
background:#fafbfc}
main{max-width:1100px;margin:0 auto;padding:1.5em 2em 4em}
h1{font-size:1.7em;margin:.4em 0}h2{margin-top:2em;border-bottom:2px solid #d0d7de;
padding-bottom:.2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.92em;background:#fff}
th,td{border:1px solid #d0d7de;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#eef1f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
a.d,span.d{font-family:ui-monospace,monospace;font-size:.85em;color:#0969da;
text-decoration:none}
.absent{color:#6e7781;font-style:italic;border-left:4px solid #d0d7de;padding-left:.8em}
.claim{border-left:4px solid #1a7f37;padding:.3em .8em;background:#f0fff4}
.blocked{border-left:4px solid #cf222e;padding:.3em .8em;background:#fff5f5}
.null{border-left:4px solid #9a6700;padding:.3em .8em;background:#fffbeb}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
nav ol{columns:2}code{font-size:.9em;word-break:break-all}
.note{color:#57606a;font-size:.92em}
.warning{border-left:3px solid #bf8700;padding-left:.6em}
svg{background:#fff;border:1px solid #d0d7de}
"""
"""The page's only stylesheet (inline)."""


def esc(value: Any) -> str:
    """``value`` as escaped HTML text (quotes included, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def hex_of(digest: str) -> str:
    """The hex part of a ``sha256:`` digest."""
    return digest.removeprefix("sha256:")


def ref(digest: str | None) -> Cell:
    """A short digest linking to its inventory entry (``—`` when absent)."""
    if not digest:
        return "—"
    h = hex_of(digest)
    return (f'<a class="d" href="#obj-{esc(h)}" title="{esc(digest)}">'
            f"{esc(h[:12])}</a>")


def sub(digest: str | None, parent: str | None) -> Cell:
    """A row-subset digest (shown in full on hover) that links to the object holding it."""
    if not digest:
        return "—"
    target = f' href="#obj-{esc(hex_of(parent))}"' if parent else ""
    return (f'<a class="d"{target} title="{esc(digest)} (digest of the rows this number '
            f'was computed from)">{esc(hex_of(digest)[:12])}</a>')


def num(value: Any, fmt: str = ".3f") -> Cell:
    """A number formatted (``—`` for None); ints print as they are."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return esc(value)
    if isinstance(value, int):
        return esc(f"{value:,}")
    if isinstance(value, float):
        return esc(format(value, fmt))
    return esc(value)


def interval(pair: Sequence[Any] | None, fmt: str = ".3f") -> Cell:
    """``[low, high]`` (``—`` when absent)."""
    if not pair or pair[0] is None or pair[1] is None:
        return "—"
    return f"[{num(float(pair[0]), fmt)}, {num(float(pair[1]), fmt)}]"


def verdict(passed: bool) -> Cell:
    """A pass/fail mark."""
    return '<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>'


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], *,
          caption: str | None = None, numeric: Sequence[int] = (),
          table_id: str | None = None) -> str:
    """An HTML table; ``headers`` are escaped here, cells must already be HTML."""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    out = [f"<table{ident}>"]
    if caption:
        out.append(f"<caption>{caption}</caption>")
    out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        cells = [f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                 for i, c in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def absent(what: str) -> str:
    """The paragraph a section shows when its inputs are absent."""
    return f'<p class="absent">Not in this study: {esc(what)}</p>'


def paragraph(text: str) -> str:
    """An escaped paragraph."""
    return f"<p>{esc(text)}</p>"


def page(title: str, body: str) -> str:
    """The whole page (one file, inline style, no script)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">\n"
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
            f"{body}\n</main>\n</body>\n</html>\n")
