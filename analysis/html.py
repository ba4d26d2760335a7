"""The self-contained HTML report: one file, figures embedded as base64 PNG, no scripts, no
external resources; links to pcaps are relative to the report folder."""
from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1250px; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: left; }
th { background: #eef; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.warn { background: #fff3cd; border: 1px solid #e0c060; padding: .6em 1em; }
.ok { background: #e6f4ea; border: 1px solid #8c8; padding: .6em 1em; }
.ns { color: #777; } .sig { font-weight: bold; } .bad { color: #b00; }
img { max-width: 100%; border: 1px solid #ddd; margin: .5em 0; }
code, pre { background: #f6f6f6; } pre { padding: .5em; overflow-x: auto; font-size: .8em; }
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def cell(value: Any) -> str:
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, float):
        text = "" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.4g}")
        return f'<td class="num">{text}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value}</td>'
    return f"<td>{esc(value)}</td>"


def table(headers: list[str], rows: Iterable[Iterable[Any]], raw: bool = False) -> str:
    """A table; with raw=True cells are HTML already (each a whole <td>)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        body.append("<tr>" + "".join(c if raw else cell(c) for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def key_values(data: dict[str, Any]) -> str:
    rows = []
    for key, value in data.items():
        text = value if isinstance(value, (str, int, float, bool)) or value is None \
            else json.dumps(value)
        rows.append([key, text])
    return table(["key", "value"], rows)


def image(png: Path, alt: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def page(title: str, sections: list[tuple[str, str]]) -> str:
    toc = "".join(f'<li><a href="#s{i}">{esc(name)}</a></li>'
                  for i, (name, _) in enumerate(sections))
    body = "".join(f'<h2 id="s{i}">{esc(name)}</h2>\n{content}\n'
                   for i, (name, content) in enumerate(sections))
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>{esc(title)}</h1><ul>{toc}</ul>\n{body}</body></html>\n")
