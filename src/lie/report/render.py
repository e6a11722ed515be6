"""Table rendering: GitHub Markdown, HTML, LaTeX (booktabs) and CSV, from one small table model.

A :class:`Table` has column groups (a benchmark with its ``ours | paper | Δ`` columns, or a
single column) so that LaTeX and HTML can put the group name over its columns; Markdown flattens
them into one header row. Cells are already formatted strings; ``MISSING`` marks a gap. The HTML
is a page of its own (``snakemake --report`` shows it in the page, in a frame): the table with its
title and caption, the notes under it, every text escaped.
"""

from __future__ import annotations

import csv
import html as htmlmod
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MISSING = "—"


@dataclass
class Group:
    title: str
    columns: list[str]  # sub-column headers ("" for a single column named by the title)
    align: str = "r"


@dataclass
class Table:
    groups: list[Group]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def width(self) -> int:
        return sum(len(g.columns) for g in self.groups)

    def add(self, cells: Sequence[str]) -> None:
        if len(cells) != self.width:
            raise ValueError(f"a row of {len(cells)} cells in a table of {self.width} columns")
        self.rows.append(list(cells))


def fmt(value: float | None, digits: int = 1, sign: bool = False) -> str:
    """A number for a table cell; ``MISSING`` for ``None``."""
    if value is None:
        return MISSING
    if round(value, digits) == 0:
        value = 0.0  # -0.04 prints 0.0 (+0.0 with a sign), never -0.0
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(table: Table, title: str | None = None) -> str:
    headers = []
    aligns = []
    for group in table.groups:
        for column in group.columns:
            headers.append(f"{group.title} {column}".strip() if column else group.title)
            aligns.append("---:" if group.align == "r" else ":---")
    lines = [f"## {title}", ""] if title else []
    if table.caption:
        lines += [table.caption, ""]
    lines.append("| " + " | ".join(_md_escape(h) for h in headers) + " |")
    lines.append("|" + "|".join(aligns) + "|")
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in table.rows]
    if table.notes:
        lines += [""] + [f"- {note}" for note in table.notes]
    return "\n".join(lines) + "\n"


_STYLE = (
    "body{font-family:system-ui,sans-serif;font-size:14px;margin:1em;color:#111}"
    "table{border-collapse:collapse}caption{text-align:left;padding-bottom:.6em;max-width:60em}"
    "caption strong{display:block;font-size:1.15em;margin-bottom:.3em}"
    "th,td{padding:.2em .6em;border-bottom:1px solid #ddd;white-space:nowrap}"
    "thead th{border-bottom:2px solid #444}th.c{text-align:center}td.r,th.r{text-align:right}td.l,th.l{text-align:left}"
    "ul.notes{max-width:60em;padding-left:1.2em}code{font-size:.95em}"
)


def _html_text(text: str) -> str:
    """Escaped text; `code` spans (as in the Markdown) become <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", htmlmod.escape(text, quote=True))


def _header(group: Group, column: str) -> str:
    """A column's header as Markdown writes it: the group's title, then the column's own name."""
    return f"{group.title} {column}".strip() if column else group.title


def html(table: Table, title: str | None = None) -> str:
    """A standalone HTML page: one ``<table>`` with its title and caption in ``<caption>``, the column
    groups over their columns (as in LaTeX), then the notes as a list."""
    grouped = any(len(g.columns) > 1 for g in table.groups)
    head = []
    if grouped:
        top = []
        for g in table.groups:
            if len(g.columns) > 1:
                top.append(f'<th colspan="{len(g.columns)}" class="c">{_html_text(g.title)}</th>')
            else:
                top.append(f'<th rowspan="2" class="{g.align}">{_html_text(_header(g, g.columns[0]))}</th>')
        sub = [
            f'<th class="{g.align}">{_html_text(c)}</th>'
            for g in table.groups
            if len(g.columns) > 1
            for c in g.columns
        ]
        head += ["<tr>" + "".join(top) + "</tr>", "<tr>" + "".join(sub) + "</tr>"]
    else:
        head.append(
            "<tr>"
            + "".join(
                f'<th class="{g.align}">{_html_text(c or g.title)}</th>'
                for g in table.groups
                for c in g.columns
            )
            + "</tr>"
        )
    aligns = [g.align for g in table.groups for _ in g.columns]
    body = [
        "<tr>" + "".join(f'<td class="{a}">{_html_text(c)}</td>' for a, c in zip(aligns, row)) + "</tr>"
        for row in table.rows
    ]
    caption = ""
    if title or table.caption:
        parts = [f"<strong>{_html_text(title)}</strong>"] if title else []
        parts += [_html_text(line) for line in table.caption.splitlines() if line.strip()]
        caption = "<caption>" + "<br>".join(parts) + "</caption>"
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{htmlmod.escape(title or 'table')}</title><style>{_STYLE}</style></head><body>",
        "<!-- Generated by `lie report`; do not edit by hand. -->",
        "<table>" + caption,
        "<thead>",
        *head,
        "</thead><tbody>",
        *body,
        "</tbody></table>",
    ]
    if table.notes:
        lines += ['<ul class="notes">', *(f"<li>{_html_text(note)}</li>" for note in table.notes), "</ul>"]
    lines.append("</body></html>")
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        MISSING: "--", "Δ": r"$\Delta$", "→": r"$\to$", "±": r"$\pm$", "−": r"$-$", "√": r"$\surd$",
        "·": r"$\cdot$"}  # fmt: skip


def tex_escape(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def latex(table: Table, source: str = "") -> str:
    """A booktabs ``tabular`` to ``\\input`` (needs ``\\usepackage{booktabs}``)."""
    spec = "".join(g.align * len(g.columns) for g in table.groups)
    lines = [f"% Generated by `lie report`{' from ' + source if source else ''}; do not edit by hand."]
    if table.caption:
        lines += [f"% {line}" for line in table.caption.splitlines()]
    lines += [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    grouped = any(len(g.columns) > 1 for g in table.groups)
    if grouped:
        top, rules, col = [], [], 1
        for g in table.groups:
            span = len(g.columns)
            if span > 1:
                top.append(f"\\multicolumn{{{span}}}{{c}}{{{tex_escape(g.title)}}}")
                rules.append(f"\\cmidrule(lr){{{col}-{col + span - 1}}}")
            else:
                top.append("")
            col += span
        lines.append(" & ".join(top) + r" \\")
        lines.append(" ".join(rules))
    sub = []
    for g in table.groups:
        for column in g.columns:
            sub.append(tex_escape(column if (grouped and len(g.columns) > 1) else (column or g.title)))
    lines += [" & ".join(sub) + r" \\", "\\midrule"]
    lines += [" & ".join(tex_escape(c) for c in row) + r" \\" for row in table.rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [f"% {note}" for note in table.notes]
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows as CSV with a header (``columns``, else every key in order of appearance); ``None`` is empty."""
    if columns is None:
        if not rows:
            return ""
        columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buffer.getvalue()
