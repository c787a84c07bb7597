"""Interactive mode: a line-oriented transcript printed with rich above a
prompt_toolkit input line. Entry point: :func:`pi_core.cli.interactive.run_interactive`.

Modules:

* :mod:`.output` — the transcript: every line printed goes through it, above the prompt;
* :mod:`.dialogs` — pickers, confirm/input/editor dialogs, the plugins' ``ctx.ui``;
* :mod:`.render` — session events to transcript lines, the live status area, the
  plugins' message, entry and tool renderers;
* :mod:`.completion` — slash commands, their arguments and ``@path``;
* :mod:`.base` — what the built-in commands share (the app as they see it, replay);
* :mod:`.commands` — the built-in slash commands and their table;
* :mod:`.sessions_ui` — the session picker and the session commands (export, share …);
* :mod:`.settings_ui` — ``/settings`` and ``/scoped-models``;
* :mod:`.keys` — the key bindings and ``keybindings.json``;
* :mod:`.theme` — colour themes in pi 1.6.0's JSON format;
* :mod:`.system` — the clipboard and the external editor;
* :mod:`.app` — the input loop, key handlers, runs and user shell commands.
"""
