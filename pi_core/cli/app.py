"""The typer application behind ``pi``."""

from __future__ import annotations

import typer

from .. import __version__
from .extensions_cmd import extensions_app

app = typer.Typer(
    name="pi",
    help="pi: a pluggable coding agent.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
app.add_typer(extensions_app, name="extensions")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pi {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", "-v", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """pi: a pluggable coding agent."""


def run(args: list[str]) -> None:
    app(args=args, prog_name="pi")
