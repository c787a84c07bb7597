"""Interactive mode: a line-oriented transcript printed with rich above a
prompt_toolkit input line. Entry point: :func:`pi_core.cli.interactive.run_interactive`.

Modules:

* :mod:`.output` — the transcript: every line printed goes through it, above the prompt;
* :mod:`.dialogs` — pickers, confirm/input/editor dialogs, the plugins' ``ctx.ui``;
* :mod:`.render` — session events to transcript lines and the live status area;
* :mod:`.completion` — slash commands, their arguments and ``@path``;
* :mod:`.commands` — the built-in slash commands;
* :mod:`.app` — the input loop, key bindings, runs and user shell commands.
"""
