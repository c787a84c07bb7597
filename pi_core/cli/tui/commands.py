"""The built-in slash commands of interactive mode.

Everything else that starts with ``/`` (plugin commands, prompt templates,
``/skill:name``) goes through ``AgentSession.prompt`` so the session's pipeline
handles it exactly as in the other modes.
"""

from __future__ import annotations

import asyncio
import threading
import time
import webbrowser
from typing import Any

from rich.table import Table
from rich.text import Text

from pi_hookspecs import (
    THINKING_LEVELS,
    AbortController,
    AbortError,
    AssistantMessage,
    BashExecutionMessage,
    UsageEntry,
    UserMessage,
)

from ...ai import supported_thinking_levels
from ...ai.auth import ENV_API_KEYS, AuthFileError
from ...runtime import AgentSession
from ..bootstrap import diagnostics_of
from .base import Builtin, CommandHost
from .completion import CommandInfo
from .dialogs import Option
from .keys import ACTIONS, EDITOR_ACTIONS, PICKER_KEYS, UNSUPPORTED, display
from .model_refresh import refresh_catalogues, refresh_note, refreshes
from .render import content_text, context_usage, human_tokens, one_line
from .sessions_ui import (
    cmd_bug,
    cmd_changelog,
    cmd_clone,
    cmd_copy,
    cmd_export,
    cmd_import,
    cmd_resume,
    cmd_share,
    cmd_trust,
)
from .settings_ui import cmd_scoped_models, cmd_settings

# --------------------------------------------------------------------------- session


async def cmd_new(app: CommandHost, args: str) -> None:
    result = await app.runtime.new_session()
    if result.get("cancelled"):
        app.out.line("New session cancelled by a plugin", "yellow")
        return
    app.out.line(f"New session {app.session.sm.get_session_id()}", "green")


async def cmd_fork(app: CommandHost, args: str) -> None:
    session = app.session
    options: list[Option[str]] = []
    for entry in reversed(session.sm.get_branch()):
        message = getattr(entry, "message", None)
        if entry.type == "message" and isinstance(message, UserMessage):
            options.append(Option(entry.id, one_line(content_text(message.content), 100)))
    if not options:
        app.out.line("Nothing to fork from: this session has no user messages yet", "yellow")
        return
    entry_id = await app.dialogs.choose(
        "Fork from which message?", options, message="The new session ends just before it."
    )
    if entry_id is None:
        return
    result = await app.runtime.fork(entry_id)
    if result.get("cancelled"):
        app.out.line("Fork cancelled by a plugin", "yellow")
        return
    app.out.line(f"Forked into new session {app.session.sm.get_session_id()}", "green")
    if result.get("editor_text"):
        app.set_draft(result["editor_text"])
        app.out.line("The message is back in the input line: edit it and press Enter", "dim")


TREE_FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")
TREE_ACTIONS: tuple[tuple[str, str], ...] = (
    ("app.tree.editLabel", "label"),
    ("app.tree.foldOrUp", "fold"),
    ("app.tree.unfoldOrDown", "unfold"),
    ("app.tree.filter.default", "filter:default"),
    ("app.tree.filter.noTools", "filter:no-tools"),
    ("app.tree.filter.userOnly", "filter:user-only"),
    ("app.tree.filter.labeledOnly", "filter:labeled-only"),
    ("app.tree.filter.all", "filter:all"),
    ("app.tree.filter.cycleForward", "filter:next"),
    ("app.tree.filter.cycleBackward", "filter:previous"),
)


def _entry_label(entry: Any) -> tuple[str, str] | None:
    """``(kind, one-line description)`` of a tree entry; kind is ``user``, ``assistant``,
    ``tool`` (a tool result), ``other`` (shown by the default filter) or ``meta``
    (bookkeeping: model and thinking changes, labels, names; shown by ``all``)."""
    kind = entry.type
    if kind == "message":
        message = entry.message
        role = getattr(message, "role", "?")
        if isinstance(message, UserMessage):
            return "user", "user: " + one_line(content_text(message.content), 80)
        if isinstance(message, AssistantMessage):
            text = message.text().strip()
            calls = ", ".join(c.name for c in message.tool_calls())
            body = one_line(text, 70) if text else ""
            if calls:
                body = f"{body} [{calls}]".strip()
            return "assistant", "assistant: " + (body or f"({message.stop_reason})")
        if isinstance(message, BashExecutionMessage):
            return "other", "bash: " + one_line(message.command, 70)
        if role == "toolResult":
            mark = "✖ " if getattr(message, "is_error", False) else ""
            name = getattr(message, "tool_name", "tool")
            return "tool", f"  {mark}{name} → " + one_line(content_text(getattr(message, "content", "")), 60)
        return ("meta", role) if role == "system" else ("other", f"{role}")
    if kind == "compaction":
        return "other", "compaction: " + one_line(entry.summary, 70)
    if kind == "branch_summary":
        return "other", "branch summary: " + one_line(entry.summary, 70)
    if kind == "custom_message":
        return "other", f"[{entry.custom_type}] " + one_line(content_text(entry.content), 70)
    if kind == "model_change":
        return "meta", f"model: {getattr(entry, 'provider', '')}/{getattr(entry, 'model_id', '')}"
    if kind == "thinking_level_change":
        return "meta", f"thinking: {getattr(entry, 'thinking_level', '')}"
    if kind == "label":
        return "meta", f"label: {getattr(entry, 'label', None) or '(cleared)'}"
    if kind == "session_info":
        return "meta", f"name: {getattr(entry, 'name', None) or '(cleared)'}"
    return "meta", kind


def _shown(kind: str, labelled: bool, mode: str) -> bool:
    if mode == "all":
        return True
    if mode == "user-only":
        return kind == "user"
    if mode == "labeled-only":
        return labelled
    if mode == "no-tools":
        return kind in ("user", "assistant", "other")
    return kind != "meta"


def tree_options(
    app: CommandHost, mode: str = "default", folded: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Option[str]], int]:
    """The entries of the session tree that filter ``mode`` shows, indented where the
    tree branches; the descendants of ``folded`` entries are left out."""
    sm = app.session.sm
    leaf = sm.get_leaf_id()
    active = {e.id for e in sm.get_branch()}
    options: list[Option[str]] = []
    default = 0
    stack: list[tuple[Any, int]] = [(node, 0) for node in reversed(sm.get_tree())]
    while stack:
        node, depth = stack.pop()
        described = _entry_label(node.entry)
        children = node.children
        is_folded = node.entry.id in folded and bool(children)
        if described is not None and _shown(described[0], bool(node.label), mode):
            marker = "● " if node.entry.id in active else "○ "
            fold = "▸ " if is_folded else ""
            tag = f" [{node.label}]" if node.label else ""
            detail = "← current" if node.entry.id == leaf else ""
            options.append(Option(node.entry.id, "  " * depth + fold + marker + described[1] + tag, detail))
        if node.entry.id == leaf:
            default = max(0, len(options) - 1)
        if is_folded:
            continue
        branching = len(children) > 1
        for child in reversed(children):
            stack.append((child, depth + (1 if branching else 0)))
    return options, default


def _tree_filter(app: CommandHost) -> str:
    value = app.session.settings.get("treeFilterMode")
    return value if value in TREE_FILTERS else "default"


async def cmd_tree(app: CommandHost, args: str) -> None:
    session = app.session
    mode = _tree_filter(app)
    folded: set[str] = set()
    query = ""
    index: int | None = None
    notes = ""
    while True:
        options, default = tree_options(app, mode, folded)
        if not session.sm.get_entries():
            app.out.line("The session tree is empty", "yellow")
            return
        picked = await app.dialogs.pick(
            f"Go to which entry? (filter: {mode})",
            options,
            actions=app.keymap.picker_actions(TREE_ACTIONS),
            default=default if index is None else index,
            query=query,
            message=notes
            or "● active branch. A user message goes back to before it (its text returns to the input line).",
        )
        notes = ""
        if picked is None:
            return
        query, index = picked.query, picked.index
        action, target = picked.action, picked.value
        if action.startswith("filter:"):
            wanted = action.split(":", 1)[1]
            step = {"next": 1, "previous": -1}.get(wanted)
            mode = TREE_FILTERS[(TREE_FILTERS.index(mode) + step) % len(TREE_FILTERS)] if step else wanted
            index = None
            continue
        if target is None:
            continue
        if action == "fold":  # fold the branch, or move up to the parent, as pi does
            if target not in folded and session.sm.get_children(target):
                folded.add(target)
            else:
                parent = getattr(session.sm.get_entry(target), "parent_id", None)
                visible = [o.value for o in options]
                while parent is not None and parent not in visible:
                    parent = getattr(session.sm.get_entry(parent), "parent_id", None)
                if parent is not None and not query:
                    index = visible.index(parent)
            continue
        if action == "unfold":  # unfold, or move down
            if target in folded:
                folded.discard(target)
            else:
                index = picked.index + 1
            continue
        if action == "label":
            current = session.sm.get_label(target) or ""
            label = await app.dialogs.text("Label (empty clears it)", default=current, record=False)
            if label is not None and label.strip() != current:
                session.sm.set_label(target, label.strip() or None)
                notes = f"Label {'set: ' + label.strip() if label.strip() else 'cleared'}"
            continue
        break
    if target == session.sm.get_leaf_id():
        return
    if session.settings.branch_summary_settings().skip_prompt:
        summarize: str | None = "no"
    else:
        summarize = await app.dialogs.choose(
            "Summarise the branch you leave?",
            [
                Option("no", "No", key="n"),
                Option("yes", "Yes", key="y"),
                Option("custom", "Yes, with instructions…", key="i"),
            ],
            filterable=False,
        )
    if summarize is None:
        return
    instructions = None
    if summarize == "custom":
        instructions = await app.dialogs.text("Instructions for the summary")
        if instructions is None:
            return

    async def navigate() -> None:
        result = await app.session.navigate_tree(target, summarize=summarize != "no", custom_instructions=instructions)
        if result.get("cancelled"):
            app.out.line("Navigation cancelled by a plugin", "yellow")
            return
        app.out.line(f"Moved to {target[:8]}", "green")
        if result.get("editor_text"):
            app.set_draft(result["editor_text"])

    if summarize == "no":
        await navigate()
    else:
        app.start_job(navigate(), kind="command", status="Summarising the branch")


async def cmd_compact(app: CommandHost, args: str) -> None:
    try:
        await app.session.compact(args.strip() or None)
    except Exception:
        pass  # reported by the compaction_end event


async def cmd_reload(app: CommandHost, args: str) -> None:
    started = time.monotonic()
    await app.runtime.reload()
    session = app.session
    resources = session.services.resources
    plugins = len(session.plugins.loaded)
    app.out.line(
        f"Reloaded in {time.monotonic() - started:.1f}s: {plugins} plugins, "
        f"{len(session.tools.active_names)} of {len(session.tools.all_definitions())} tools active, "
        f"{len(resources.skills)} skills, {len(resources.prompt_templates)} prompt templates, "
        f"{len(resources.context_files)} context files",
        "green",
    )
    for line in diagnostics_of(app.runtime):
        app.out.line(line, "yellow")


# --------------------------------------------------------------------------- model


async def cmd_model(app: CommandHost, args: str) -> None:
    session = app.session
    models = session.models
    pattern = args.strip()
    level = None
    model = None
    if pattern:
        try:
            selection = models.resolve(pattern)
            model, level = selection.model, selection.thinking_level
        except Exception:
            words = pattern.lower().split()

            def matching() -> list[Any]:
                offered = models.available(session.model)
                return [m for m in offered if all(w in f"{m.ref} {m.name}".lower() for w in words)]

            matches = matching()
            if not matches and refreshes(session):
                # as pi 1.6.0: a model the cached catalogues lack may be new - look again
                app.out.line("Refreshing model catalogs…", "dim")
                errors, timed_out = await refresh_catalogues(session)
                if timed_out:
                    app.out.line("Model refresh timed out; searching cached models.", "yellow")
                elif errors:
                    app.out.line(f"Could not refresh {', '.join(errors)}; searching cached models.", "yellow")
                matches = matching()
            if len(matches) == 1:
                model = matches[0]
            elif not matches:
                app.out.line(f"✖ No model matches {pattern!r} (see /model for the list)", "red")
                return
            else:
                model = await _pick_model(app, matches)
    else:
        model = await _pick_model(app, models.available(session.model), refresh=refreshes(session))
    if model is None:
        return
    if not await session.set_model(model):
        app.out.line(f"✖ No API key for provider {model.provider!r}", "red")
        return
    if level:
        await session.set_thinking_level(level)
    app.out.line(f"Model: {model.ref} (thinking {session.thinking_level})", "green")


def _model_options(candidates: list[Any]) -> list[Option[Any]]:
    return [
        Option(m, m.ref, f"{m.name} · {human_tokens(m.context_window)} ctx" + (" · reasoning" if m.reasoning else ""))
        for m in candidates
    ]


async def _pick_model(app: CommandHost, candidates: list[Any], *, refresh: bool = False) -> Any:
    """The model picker. With ``refresh`` it opens on the cached list and refreshes the
    dynamic catalogues meanwhile (as pi 1.6.0's ``/model``): the list is replaced when
    they answer, with a line saying how it went; closing the picker stops waiting."""
    if not candidates and not refresh:
        app.out.line("✖ No model is available: configure a provider key first (/login)", "red")
        return None
    session = app.session
    current = session.model
    default = next((i for i, m in enumerate(candidates) if current is not None and m.same_model(current)), 0)
    if not refresh:
        return await app.dialogs.choose("Which model?", _model_options(candidates), default=default)

    async def live(chooser: Any) -> None:
        note = refresh_note(*await refresh_catalogues(session))
        chooser.update(_model_options(session.models.available(session.model)), message=note)

    return await app.dialogs.choose(
        "Which model?",
        _model_options(candidates),
        default=default,
        message="Refreshing model catalogs…",
        filterable=True,
        live=live,
    )


async def cmd_thinking(app: CommandHost, args: str) -> None:
    session = app.session
    levels = supported_thinking_levels(session.model) if session.model is not None else ["off"]
    level: str | None = args.strip().lower()
    if not level:
        current = session.thinking_level
        default = levels.index(current) if current in levels else 0
        level = await app.dialogs.choose("Thinking level?", [Option(lv, lv) for lv in levels], default=default)
        if level is None:
            return

    if level not in THINKING_LEVELS:
        app.out.line(f"✖ Unknown thinking level {level!r}: one of {', '.join(THINKING_LEVELS)}", "red")
        return
    previous = session.thinking_level
    applied = await session.set_thinking_level(level)
    if applied == previous:
        note = f" ({level} is not supported by {session.model.ref})" if session.model and applied != level else ""
        app.out.line(f"Thinking level: {applied}{note}", "dim")


# --------------------------------------------------------------------------- information


async def cmd_tools(app: CommandHost, args: str) -> None:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column in ("", "tool", "from", "exposure", "description"):
        table.add_column(column, overflow="ellipsis", no_wrap=True, max_width=60 if column == "description" else None)
    rows = app.session.tools.describe()
    for row in rows:
        source = row["plugin"] or row["source"]
        description = (row["description"] or "").strip().splitlines()
        table.add_row(
            Text("✓", style="green") if row["active"] else Text("·", style="dim"),
            Text(row["name"]),
            Text(str(source)),
            Text(row["exposure"]),
            Text(description[0] if description else ""),
        )
    app.out.print(table)
    active = sum(1 for r in rows if r["active"])
    app.out.line(f"{active} of {len(rows)} tools active", "dim")


async def cmd_name(app: CommandHost, args: str) -> None:
    name = args.strip()
    if not name:
        current = app.session.sm.get_session_name()
        app.out.line(
            f"Session name: {current}" if current else "This session has no name (/name <name> sets one)", "dim"
        )
        return
    await app.session.set_session_name(name)


def session_stats(session: AgentSession) -> dict[str, Any]:
    counts = {"user": 0, "assistant": 0, "toolResult": 0, "bashExecution": 0, "custom": 0}
    tokens = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    cost = 0.0
    for entry in session.sm.get_entries():
        message = getattr(entry, "message", None)
        if entry.type == "message" and message is not None:
            role = getattr(message, "role", "")
            if role in counts:
                counts[role] += 1
            if isinstance(message, AssistantMessage):
                usage = message.usage
                for key in tokens:
                    tokens[key] += getattr(usage, key)
                cost += usage.cost.total
        elif entry.type == "custom_message":
            counts["custom"] += 1
        elif isinstance(entry, UsageEntry):
            for key in tokens:
                tokens[key] += getattr(entry.usage, key)
            cost += entry.usage.cost.total
    return {"counts": counts, "tokens": tokens, "cost": cost}


def cost_breakdown(entries: Any) -> list[tuple[str, float, int]]:
    """``(provider/model, cost, tokens)`` of every model that answered, most expensive
    first; usage no model answered for (tool results, summaries) under
    ``Tools/summaries``."""
    totals: dict[str, list[float]] = {}
    for entry in entries:
        key = usage = None
        kind = getattr(entry, "type", None)
        message = getattr(entry, "message", None) if kind == "message" else None
        if message is not None and message.role == "assistant":
            key, usage = f"{message.provider}/{message.response_model or message.model}", message.usage
        elif kind == "usage":
            key, usage = f"{entry.provider}/{entry.model}", entry.usage
        elif message is not None and message.role == "toolResult" and getattr(message, "usage", None) is not None:
            key, usage = "Tools/summaries", message.usage
        elif kind in ("branch_summary", "compaction") and getattr(entry, "usage", None) is not None:
            key, usage = "Tools/summaries", entry.usage
        if key is None or usage is None:
            continue
        sums = totals.setdefault(key, [0.0, 0])
        sums[0] += usage.cost.total
        sums[1] += usage.input + usage.output + usage.cache_read + usage.cache_write
    rows = [(key, cost, int(used)) for key, (cost, used) in totals.items() if cost > 0 or used > 0]
    return sorted(rows, key=lambda row: -row[1])


async def cmd_session(app: CommandHost, args: str) -> None:
    session = app.session
    sm = session.sm
    stats = session_stats(session)
    counts, tokens = stats["counts"], stats["tokens"]
    context = context_usage(session)
    file = session.session_file or "(in memory: --no-session)"
    rows = [
        ("file", file + ("" if not session.session_file or sm.is_flushed else " (written at the first answer)")),
        ("id", sm.get_session_id()),
        ("name", sm.get_session_name() or "-"),
        ("folder", session.cwd),
        ("model", f"{session.model.ref if session.model else '-'} · thinking {session.thinking_level}"),
        (
            "messages",
            f"{counts['user']} user · {counts['assistant']} assistant · {counts['toolResult']} tool results"
            + (f" · {counts['bashExecution']} bash" if counts["bashExecution"] else "")
            + (f" · {counts['custom']} custom" if counts["custom"] else ""),
        ),
        (
            "tokens",
            f"↑{human_tokens(tokens['input'])} ↓{human_tokens(tokens['output'])} "
            f"R{human_tokens(tokens['cache_read'])} W{human_tokens(tokens['cache_write'])}",
        ),
        ("cost", f"${stats['cost']:.4f}"),
    ]
    # As pi 1.6.0: the cost per model that answered (a virtual selection's physical
    # models, a router's response model), unless one entry would repeat the total
    breakdown = cost_breakdown(sm.get_entries())
    selected = session.model.ref if session.model is not None else None
    if len(breakdown) > 1 or (breakdown and breakdown[0][0] != selected):
        for key, cost, used in breakdown:
            rows.append((f"  {key}", f"${cost:.4f} ({human_tokens(used)} tokens)"))
    if context is not None:
        used, window = context
        rows.append(("context", f"{human_tokens(used)} of {human_tokens(window)} ({used / window * 100:.0f}%)"))
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    app.out.print(table)


async def cmd_help(app: CommandHost, args: str) -> None:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for info in app.command_infos():
        hint = (
            f" {BUILTINS[info.name].argument_hint}"
            if info.name in BUILTINS and BUILTINS[info.name].argument_hint
            else ""
        )
        source = "" if info.source == "built-in" else f"  ({info.source})"
        table.add_row(Text(f"/{info.name}{hint}"), Text(f"{info.description}{source}"))
    app.out.print(table)
    app.out.print(Text(KEYS_HELP, style="dim"))


KEYS_HELP = """\
Enter send · Shift+Enter or Ctrl+J new line · Tab complete · ↑↓ history · /hotkeys lists every key
While pi works: Enter steers · Alt+Enter queues a follow-up · Alt+Up takes them back · Esc or Ctrl+C aborts
!cmd runs a shell command (output goes to the model) · !!cmd keeps the output out of the context
@path completes a file name · Ctrl+C clears the line, twice exits · Ctrl+D exits"""


async def cmd_hotkeys(app: CommandHost, args: str) -> None:
    keymap = app.keymap
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("key", style="bold cyan", no_wrap=True)
    table.add_column("action")
    table.add_column("id", style="dim")
    for action in ACTIONS:
        table.add_row(Text(keymap.describe(action.id)), Text(action.description), Text(action.id))
    for shortcut in app.plugin_shortcuts():
        description = shortcut.definition.description or "(no description)"
        taken = f"; not bound: the key is pi's {shortcut.taken_by}" if shortcut.taken_by else ""
        table.add_row(
            Text(display(shortcut.keys[0])), Text(f"{description}  (plugin {shortcut.plugin}{taken})"), Text("")
        )
    app.out.print(table)
    for title, actions in PICKER_KEYS:
        app.out.line(title, "bold")
        for action in actions:
            app.out.print(Text.assemble(("  " + keymap.describe(action.id), "cyan"), ("  " + action.description, "")))
    app.out.print(
        Text.assemble(("  ↑↓ Enter Esc", "cyan"), ("  in every picker: move, pick, cancel; typing filters", ""))
    )
    app.out.line("Input line editing (a key remapped here is added to the Emacs-style keys)", "bold")
    for action, _command in EDITOR_ACTIONS:
        app.out.print(
            Text.assemble(
                ("  " + keymap.describe(action.id), "cyan"), (f"  {action.description}  ", ""), (action.id, "dim")
            )
        )
    inert = sorted(UNSUPPORTED)
    app.out.line(f"Accepted in keybindings.json with no effect here: {', '.join(inert)}", "dim")
    app.out.line(f"Remap keys in {keymap.path} (pi 1.6.0's keybindings.json format; /reload applies it)", "dim")


async def cmd_quit(app: CommandHost, args: str) -> None:
    app.request_exit()


# --------------------------------------------------------------------------- login / logout


class DialogLogin:
    """:class:`~pi_hookspecs.LoginCallbacks` in the interactive UI (``/login``)."""

    def __init__(self, app: CommandHost) -> None:
        self.app = app
        self.controller = AbortController()
        self.signal = self.controller.signal

    def open_url(self, url: str, instructions: str | None = None) -> None:
        self.app.out.line(f"Open this URL to sign in: {url}", "cyan")
        if instructions:
            self.app.out.line(instructions, "dim")
        _open_browser(url)

    async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
        answer = await self.app.dialogs.text(message, placeholder=placeholder or "", password=secret)
        if answer is None:
            raise AbortError("Login cancelled")
        return answer

    async def select(self, message: str, options: Any) -> str:
        picked = await self.app.dialogs.choose(message, [Option(value, label) for value, label in options])
        if picked is None:
            raise AbortError("Login cancelled")
        return str(picked)

    def progress(self, message: str) -> None:
        self.app.out.line(message, "dim")

    def device_code(self, user_code: str, verification_uri: str, *, expires_in: float | None = None) -> None:
        self.app.out.line(f"Open {verification_uri} and enter code: {user_code}", "cyan")
        _open_browser(verification_uri)
        self.app.out.line("Waiting for authentication... (Ctrl+C cancels)", "dim")


def _open_browser(url: str) -> None:
    def launch() -> None:
        try:
            webbrowser.open(url)
        except Exception:
            pass

    if url.startswith(("http://", "https://")):
        threading.Thread(target=launch, name="pi-browser", daemon=True).start()


def _login_options(app: CommandHost) -> list[Option[str]]:
    models = app.session.models
    methods = models.login_methods()
    options = [
        Option(p, m.name, "enter a key" if getattr(m, "kind", "oauth") == "api_key" else "sign in with your account")
        for p, m in sorted(methods.items())
    ]
    for provider in models.providers():
        if provider not in methods and provider != "faux":
            variables = ", ".join(ENV_API_KEYS.get(provider, ()))
            options.append(Option(provider, models.provider_name(provider), f"API key {variables}".strip()))
    return options


async def cmd_login(app: CommandHost, args: str) -> None:
    models = app.session.models
    provider = args.strip() or await app.dialogs.choose(
        "Log in to which provider?", _login_options(app), filterable=True
    )
    if not provider:
        return
    method = models.login_method(provider)
    name = models.provider_name(provider)
    if method is None and provider not in models.providers():
        app.out.line(f"✖ Unknown provider {provider!r} (see /login for the list)", "red")
        return
    problem = models.auth.check()
    if problem:
        app.out.line(f"✖ {problem} (fix or delete it; it was not changed)", "red")
        return
    if method is not None:
        try:
            credentials = await models.login(provider, DialogLogin(app))
        except Exception as error:
            detail = str(error) or type(error).__name__
            if "cancelled" in detail.lower():
                app.out.line("Login cancelled.", "yellow")
            else:
                app.out.line(f"✖ Failed to log in to {name}: {detail}", "red")
            return
        done = "Saved API key for" if credentials.type == "api_key" else "Logged in to"
        app.out.line(f"✓ {done} {name}. Credentials saved to {models.auth.path}", "green")
        await _adopt_default_model(app)
        return
    key = await app.dialogs.text(f"Enter {name} API key", password=True)
    if not key or not key.strip():
        app.out.line("Login cancelled.", "yellow")
        return
    try:
        await asyncio.to_thread(models.auth.set_api_key, provider, key.strip())
    except AuthFileError as error:
        app.out.line(f"✖ {error}", "red")
        return
    app.out.line(f"✓ Saved API key for {name}. Credentials saved to {models.auth.path}", "green")
    await _adopt_default_model(app)


async def _adopt_default_model(app: CommandHost) -> None:
    """After a login, a session that has no model starts on the default one (as at
    start-up); a session that has one keeps it (/model changes it)."""
    session = app.session
    if session.model is not None:
        return
    model = session.models.default_model()
    if model is not None and await session.set_model(model):
        app.out.line(f"Model: {model.ref} (thinking {session.thinking_level})", "green")


async def cmd_logout(app: CommandHost, args: str) -> None:
    models = app.session.models
    stored = models.auth.credentials()
    provider = args.strip()
    if not provider:
        if not stored:
            app.out.line("No stored credentials. Environment variables and models.json are unchanged.", "dim")
            return
        options = [
            Option(p, models.provider_name(p), "login" if e.get("type") == "oauth" else "API key")
            for p, e in sorted(stored.items())
        ]
        provider = await app.dialogs.choose("Log out of which provider?", options) or ""
        if not provider:
            return
    name = models.provider_name(provider)
    if provider not in stored:
        app.out.line(f"No stored credentials for {name}. Environment variables and models.json are unchanged.", "dim")
        return
    try:
        await asyncio.to_thread(models.auth.remove, provider)
    except AuthFileError as error:
        app.out.line(f"✖ {error}", "red")
        return
    what = "Logged out of" if stored[provider].get("type") == "oauth" else "Removed the stored API key of"
    app.out.line(f"✓ {what} {name}.", "green")


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("help", "Show commands and keys", cmd_help, while_busy=True),
        Builtin("settings", "Open settings (written to the user or project file)", cmd_settings),
        Builtin("model", "Select a model", cmd_model, argument_hint="[pattern]"),
        Builtin("thinking", "Set the thinking level", cmd_thinking, argument_hint="[level]"),
        Builtin("scoped-models", "Choose the models Ctrl+P cycles through", cmd_scoped_models),
        Builtin("new", "Start a new session", cmd_new),
        Builtin("resume", "Resume another session (rename, delete, sort, filter)", cmd_resume),
        Builtin("fork", "New session from an earlier user message", cmd_fork),
        Builtin("clone", "Duplicate the session at its current position", cmd_clone),
        Builtin("tree", "Move to another entry of this session's tree", cmd_tree),
        Builtin("compact", "Summarise older context", cmd_compact, job=True, argument_hint="[instructions]"),
        Builtin("import", "Import a JSONL session (keeps its id and folder)", cmd_import, argument_hint="<path.jsonl>"),
        Builtin("copy", "Copy the last answer to the clipboard", cmd_copy, while_busy=True),
        Builtin("export", "Export the session as HTML (or .jsonl)", cmd_export, argument_hint="[file]"),
        Builtin("share", "Share the session as a secret GitHub gist (gh)", cmd_share),
        Builtin("bug", "Write a bug report archive", cmd_bug, argument_hint="[description]"),
        Builtin("trust", "Save a project trust decision for future pi processes", cmd_trust),
        Builtin("reload", "Reload keys, plugins, skills, prompt templates, themes and context files", cmd_reload),
        Builtin("hotkeys", "Show the keyboard shortcuts", cmd_hotkeys, while_busy=True),
        Builtin("changelog", "Show what changed in pi", cmd_changelog, while_busy=True, argument_hint="[all]"),
        Builtin("tools", "List tools (✓ active)", cmd_tools, while_busy=True),
        Builtin("name", "Set or show the session name", cmd_name, while_busy=True, argument_hint="[name]"),
        Builtin("session", "Session file, id, messages, tokens and cost", cmd_session, while_busy=True),
        Builtin("login", "Log in to a provider (account or API key)", cmd_login, job=True, argument_hint="[provider]"),
        Builtin("logout", "Remove a provider's stored credentials", cmd_logout, argument_hint="[provider]"),
        Builtin("quit", "Quit pi", cmd_quit, while_busy=True),
        Builtin("exit", "Quit pi", cmd_quit, while_busy=True),
    )
}


def builtin_infos() -> list[CommandInfo]:
    return [CommandInfo(b.name, b.description) for b in BUILTINS.values()]


def builtin_argument_values(app: CommandHost, name: str, prefix: str) -> list[tuple[str, str]]:
    if name == "model":
        return [(m.ref, m.name) for m in app.session.models.available(app.session.model)]
    if name == "login":
        return [(o.value, o.label) for o in _login_options(app)]
    if name == "logout":
        return [(p, "") for p in app.session.models.auth.credentials()]
    if name == "thinking":
        model = app.session.model
        return [(level, "") for level in (supported_thinking_levels(model) if model else ["off"])]
    return []
