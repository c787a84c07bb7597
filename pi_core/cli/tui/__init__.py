"""Interactive mode: a line-oriented transcript printed with rich above a
prompt_toolkit input line. Entry point: :func:`pi_core.cli.interactive.run_interactive`.

Modules:

* :mod:`.output` — the transcript: every line printed goes through it, above the prompt;
* :mod:`.fullscreen` — fullscreen mode: the transcript in a pane pi scrolls and searches,
  on the alternate screen;
* :mod:`.images` — inline images (kitty, iTerm2) or their line of text;
* :mod:`.dialogs` — pickers, confirm/input/editor dialogs, the plugins' ``ctx.ui``;
* :mod:`.render` — session events to transcript lines, the live status area, the
  plugins' message, entry and tool renderers;
* :mod:`.completion` — slash commands, their arguments and ``@path``;
* :mod:`.base` — what the built-in commands share (the app as they see it, replay);
* :mod:`.commands` — the built-in slash commands and their table;
* :mod:`.sessions_ui` — the session picker and the session commands (export, share …);
* :mod:`.settings_ui` — ``/settings`` and ``/scoped-models``;
* :mod:`.keys` — the keymap: actions, their keys and ``keybindings.json``;
* :mod:`.bindings` — what the keys of the input line do, the plugins' shortcuts;
* :mod:`.theme` — colour themes in pi 1.6.0's JSON format;
* :mod:`.system` — the clipboard and the external editor;
* :mod:`.input_line` — the input line, the draft, pasted images, the external editor;
* :mod:`.jobs` — the background job (a run, a shell command …), in-line commands;
* :mod:`.startup` — the session to open and the startup header;
* :mod:`.app` — the input loop: dispatching messages, commands and user shell commands.
"""
