"""``DIR/report.html``: one self-contained page (no script, no font, nothing fetched)
with a row per task linking to its session's HTML export and its patch."""

from __future__ import annotations

import html
import os
import time
from pathlib import Path

from .results import Result

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
p.totals { color: #444; margin: 0 0 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35em .7em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.ok td.status { color: #17702d; }
tr.error td.status { color: #b3261e; font-weight: 600; }
tr.cancelled td.status { color: #8a5a00; }
td.error { color: #555; max-width: 40em; overflow-wrap: anywhere; }
.added { color: #17702d; } .removed { color: #b3261e; }
"""


def _diff_lines(path: Path) -> tuple[int, int]:
    added = removed = 0
    try:
        with path.open("rb") as handle:
            for line in handle:
                if line.startswith(b"+") and not line.startswith(b"+++"):
                    added += 1
                elif line.startswith(b"-") and not line.startswith(b"---"):
                    removed += 1
    except OSError:
        pass
    return added, removed


def _link(out: Path, relative: str, text: str) -> str:
    """A link to ``relative`` when that file exists, else the bare text."""
    if not (out / relative).exists():
        return html.escape(text)
    return f'<a href="{html.escape(relative)}">{html.escape(text)}</a>'


def render(out: Path, results: list[Result]) -> str:
    rows = []
    for r in results:
        session_cell = "-"
        if r.session:
            page = str(Path(r.session).with_suffix(".html"))
            session_cell = _link(out, page, "session") if (out / page).exists() else _link(out, r.session, "session")
        if r.patch and (out / r.patch).exists():
            size = (out / r.patch).stat().st_size
            added, removed = _diff_lines(out / r.patch)
            patch_cell = (
                f'<a href="{html.escape(r.patch)}">{size} B</a> '
                f'<span class="added">+{added}</span> <span class="removed">-{removed}</span>'
            )
        else:
            patch_cell = "-"
        rows.append(
            f'<tr class="{html.escape(r.status)}" id="task-{html.escape(r.id)}">'
            f'<td class="id">{html.escape(r.id)}</td>'
            f'<td class="status">{html.escape(r.status)}</td>'
            f'<td class="num duration">{r.duration_s:.1f} s</td>'
            f'<td class="num tokens">{r.tokens}</td>'
            f'<td class="num cost">${r.cost:.4f}</td>'
            f'<td class="patch">{patch_cell}</td>'
            f'<td class="session">{session_cell}</td>'
            f'<td class="error">{html.escape(r.error or "")}</td></tr>'
        )
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "error", "cancelled")}
    totals = (
        f"{len(results)} tasks: {counts['ok']} ok, {counts['error']} error, {counts['cancelled']} cancelled; "
        f"{sum(r.tokens for r in results)} tokens, ${sum(r.cost for r in results):.4f}; "
        f"{sum(r.duration_s for r in results):.1f} s of task time"
    )
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>pi fleet report: {html.escape(out.name)}</title><style>{STYLE}</style></head><body>"
        f'<h1>pi fleet report</h1><p class="totals">{html.escape(totals)} (written {html.escape(stamp)})</p>'
        "<table><thead><tr><th>task</th><th>status</th><th>duration</th><th>tokens</th><th>cost</th>"
        "<th>patch</th><th>session</th><th>error</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )


def write_report(out: Path, results: list[Result]) -> Path:
    path = out / "report.html"
    tmp = path.with_name("report.html.tmp")
    tmp.write_text(render(out, results), encoding="utf-8")
    os.replace(tmp, path)
    return path
