"""What the terminal shows: a live bar with counts while the run goes (plain lines when
stderr is not a terminal), a summary table at the end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .results import Result


class Progress:
    """Done, failed, running and cost so far. On a terminal a rich live bar on stderr;
    otherwise one line per finished task."""

    def __init__(self, *, total: int, done: int = 0) -> None:
        self.total = total
        self.done = done
        self.failed = 0
        self.running = 0
        self.cost = 0.0
        self.live: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.live = RichProgress(
                TextColumn("[bold]pi fleet"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.bar = self.live.add_task("tasks", total=total, completed=done, counts=self._counts())
            self.live.start()

    def _counts(self) -> str:
        return f"ok {self.done - self.failed}  failed {self.failed}  running {self.running}  ${self.cost:.4f}"

    def update(self, *, running: int) -> None:
        if running == self.running:
            return
        self.running = running
        if self.live is not None:
            self.live.update(self.bar, counts=self._counts())

    def finished(self, result: Result, *, running: int) -> None:
        self.done += 1
        self.failed += result.status != "ok"
        self.running = running
        self.cost += result.cost
        if self.live is not None:
            self.live.update(self.bar, completed=self.done, counts=self._counts())
            if result.status != "ok":
                self.live.console.print(f"[red]{result.id}[/red]: {result.status}: {result.error}")
            return
        note = f": {result.error}" if result.error and result.status != "ok" else ""
        print(
            f"pi fleet: [{self.done}/{self.total}] {result.id} {result.status} {result.duration_s:.1f}s "
            f"${result.cost:.4f} (failed {self.failed}, running {self.running}, cost so far ${self.cost:.4f}){note}",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def patch_size(out: Path, result: Result) -> int | None:
    if result.patch is None:
        return None
    try:
        return (out / result.patch).stat().st_size
    except OSError:
        return None


def print_summary(results: list[Result], out: Path) -> None:
    """The table of every task (stdout), then where the report is."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"pi fleet: {len(results)} task(s)")
    for name, justify in (
        ("id", "left"),
        ("status", "left"),
        ("duration", "right"),
        ("tokens", "right"),
        ("cost", "right"),
        ("patch", "right"),
        ("error", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    colour = {"ok": "green", "error": "red", "cancelled": "yellow"}
    for result in results:
        size = patch_size(out, result)
        table.add_row(
            result.id,
            f"[{colour.get(result.status, 'white')}]{result.status}[/]",
            f"{result.duration_s:.1f}s",
            str(result.tokens),
            f"${result.cost:.4f}",
            "-" if size is None else f"{size} B",
            result.error or "",
        )
    total_cost = sum(r.cost for r in results)
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "error", "cancelled")}
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(table)
    console.print(
        f"ok {counts['ok']}, error {counts['error']}, cancelled {counts['cancelled']}; "
        f"tokens {sum(r.tokens for r in results)}, cost ${total_cost:.4f}; report: {out / 'report.html'}",
        highlight=False,
        soft_wrap=True,
    )
