"""The typer application behind ``pi``'s subcommands."""

from __future__ import annotations

import typer

from .auth_cmd import auth_app
from .config_cmd import config_command
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
app.add_typer(auth_app, name="auth")
app.command("config")(config_command)


@app.command("models")
def models_command(
    search: str = typer.Argument("", help="Fuzzy search over provider and model id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    all_models: bool = typer.Option(False, "--all", help="Also the models whose provider has no credential."),
) -> None:
    """List the models you have credentials for (as `pi --list-models`)."""
    # listing imports the session and model layers: only for the commands that list
    # (every subcommand loads this module)
    from .listing import print_models

    raise typer.Exit(print_models(search, as_json=as_json, all_models=all_models))


@app.command("sessions")
def sessions_command(
    all_dirs: bool = typer.Option(False, "--all", help="Sessions of every folder."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    session_dir: str | None = typer.Option(None, "--session-dir", help="Where sessions are stored."),
) -> None:
    """List saved sessions, newest first."""
    from .listing import print_sessions  # as in models_command

    raise typer.Exit(print_sessions(all_dirs=all_dirs, as_json=as_json, session_dir=session_dir))


def run(args: list[str]) -> None:
    app(args=args, prog_name="pi")
