"""What the export page shows, worked out from a session's raw entries (no markup here).

The entries are the JSON objects of the session file (camelCase, as written), so an
export shows exactly what the file holds, including fields and entry types this version
of pi does not know. The tree, the active path, the pairing of tool calls with their
results, the system prompt checkpoints and the totals are computed here; the template
lays them out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]

SETTINGS_TYPES = frozenset(
    {"label", "custom", "context_edit", "model_change", "thinking_level_change", "session_info", "usage"}
)
"""Entry types the tree lists only under "All" (pi's default tree filter hides them)."""

TREE_FILTERS = ("default", "no-tools", "user", "labeled", "all")
"""The tree's filters, as pi's ``/tree`` has them: Default (no settings entries), No-tools
(nor tool results), User (user messages), Labeled (labelled entries), All."""

_SKILL_BLOCK = re.compile(r'^<skill name="([^"]+)" location="([^"]+)">\n([\s\S]*?)\n</skill>(?:\n\n([\s\S]+))?$')


# ---------------------------------------------------------------------------- small helpers


def as_dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def blocks(content: Any) -> list[Json]:
    """The content blocks of a message: a string is one text block; junk is dropped."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def text_of(content: Any, sep: str = "\n") -> str:
    """The text blocks of a message content joined (images and the rest left out)."""
    return sep.join(str(b.get("text", "")) for b in blocks(content) if b.get("type") == "text" and b.get("text"))


def images_of(content: Any) -> list[Json]:
    return [b for b in blocks(content) if b.get("type") == "image" and isinstance(b.get("data"), str)]


_MIME = re.compile(r"^image/[a-z0-9.+-]+$")


def image_src(block: Json) -> str:
    """The ``data:`` URI of an image block (an odd MIME type is shown as PNG)."""
    mime = str(block.get("mimeType") or "")
    mime = mime.lower() if _MIME.match(mime.lower()) else "image/png"
    return f"data:{mime};base64,{block.get('data') or ''}"


def one_line(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def short_path(path: Any) -> str:
    """``/home/ann/x`` as ``~/x`` (as pi shows paths)."""
    if not isinstance(path, str):
        return ""
    for root in ("/home/", "/Users/"):
        if path.startswith(root):
            parts = path.split("/")
            if len(parts) > 2:
                return "~" + path[len(root) + len(parts[2]) :]
    return path


def format_time(value: Any) -> str:
    """An ISO string or a millisecond timestamp as ``YYYY-MM-DD HH:MM:SS`` UTC ('' if none)."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value / 1000, UTC)
        elif isinstance(value, str) and value:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is not None:
                moment = moment.astimezone(UTC)
        else:
            return ""
    except (ValueError, OverflowError, OSError):
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def format_tokens(count: Any) -> str:
    """``1234`` as ``1.2k`` (as pi shows token counts); a value that is no number as 0."""
    if not isinstance(count, (int, float)) or isinstance(count, bool) or count != count:
        count = 0
    if count < 1000:
        return str(int(count))
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def skill_block(text: str) -> Json | None:
    """A ``/skill:`` invocation (the skill's text wrapped in ``<skill …>``), split up."""
    match = _SKILL_BLOCK.match(text)
    if match is None:
        return None
    user = (match.group(4) or "").strip()
    return {"name": match.group(1), "location": match.group(2), "content": match.group(3), "user": user}


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """The lines of an edit's diff with their kind: added, removed or context."""
    out = []
    for line in diff.split("\n"):
        kind = "added" if line.startswith("+") else "removed" if line.startswith("-") else "context"
        out.append((kind, line))
    return out


def read_range(args: Json) -> str:
    """``:10-29`` for a read of lines 10 to 29 ('' for the whole file)."""

    def number(value: Any) -> int | None:
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    offset, limit = args.get("offset"), args.get("limit")
    if offset is None and limit is None:
        return ""
    start = 1 if offset is None else number(offset)
    if start is None:
        return ""
    if limit is None:
        return f":{start}"
    count = number(limit)
    return "" if count is None else f":{start}-{start + count - 1}"


def tool_call_summary(name: str, args: Json) -> str:
    """One line for a tool call, as in pi's tree: ``[bash: ls -la]``."""
    path = short_path(args.get("path") or args.get("file_path") or "")
    if name == "read":
        return f"[read: {path}{read_range(args)}]"
    if name in ("write", "edit"):
        return f"[{name}: {path}]"
    if name == "bash":
        command = str(args.get("command") or "")
        return f"[bash: {one_line(command, 50)}]"
    if name in ("grep", "find"):
        pattern = args.get("pattern") or ""
        where = short_path(args.get("path") or ".")
        return f"[grep: /{pattern}/ in {where}]" if name == "grep" else f"[find: {pattern} in {where}]"
    if name == "ls":
        return f"[ls: {short_path(args.get('path') or '.')}]"
    return f"[{name}: {one_line(json.dumps(args, ensure_ascii=False, default=str), 40)}]"


# ---------------------------------------------------------------------------- system messages


def system_text(message: Json) -> str:
    """The full prompt of a leading system message: its content, then its sections."""
    parts = [text_of(message.get("content"))]
    for value in as_dict(message.get("sections")).values():
        if isinstance(value, str):
            parts.append(value)
    return "\n\n".join(part for part in parts if part)


def system_update_text(message: Json) -> str:
    """What a later system message changes, as text."""
    parts = []
    text = text_of(message.get("content"))
    if text:
        parts.append(text)
    for name, value in as_dict(message.get("sections")).items():
        if value is None:
            parts.append(f'Removed system prompt section "{name}".')
        else:
            parts.append(f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(parts)


def system_update_summary(message: Json) -> str:
    parts = []
    if text_of(message.get("content")):
        parts.append("instructions")
    for name, value in as_dict(message.get("sections")).items():
        parts.append(f"-{name}" if value is None else str(name))
    changes = [f"+{t.get('name')}" for t in _tools(message.get("toolsAdded"))]
    changes += [f"-{t.get('name')}" for t in _tools(message.get("toolsRemoved"))]
    if changes:
        parts.append("tools " + " ".join(changes))
    return ", ".join(parts)


def _tools(value: Any) -> list[Json]:
    return (
        [t for t in value if isinstance(t, dict) and isinstance(t.get("name"), str)] if isinstance(value, list) else []
    )


@dataclass(slots=True)
class ToolParam:
    name: str
    type: str
    required: bool
    description: str


@dataclass(slots=True)
class ToolInfo:
    """A tool as declared to the model."""

    name: str
    description: str
    params: list[ToolParam]
    schema: Any


def tool_infos(tools: Iterable[Any]) -> list[ToolInfo]:
    infos = []
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("parameters")
        props = as_dict(as_dict(schema).get("properties"))
        required = as_dict(schema).get("required")
        required_names = set(required) if isinstance(required, list) else set()
        params = []
        for name, prop in props.items():
            prop = as_dict(prop)
            kind = prop.get("type")
            kind_text = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind or "any")
            params.append(ToolParam(str(name), kind_text, name in required_names, str(prop.get("description") or "")))
        infos.append(ToolInfo(tool["name"], str(tool.get("description") or ""), params, schema))
    return infos


# ---------------------------------------------------------------------------- the page


@dataclass(slots=True)
class EntryView:
    """One entry of the session and how it stands in the page."""

    id: str
    parent_id: str | None
    type: str
    raw: Json
    index: int
    label: str | None = None
    on_path: bool = False
    is_leaf: bool = False
    role: str | None = None
    message: Json = field(default_factory=dict)
    #: toolResult entries answering each tool call of this assistant message, by call id
    results: dict[str, list[EntryView]] = field(default_factory=dict)
    #: a toolResult entry's tool call (from the assistant message that made it), if found
    call: Json | None = None
    #: a system message that starts the prompt on its branch (else an update)
    leading_system: bool = False

    @property
    def dom_id(self) -> str:
        return f"entry-{self.id}"


@dataclass(slots=True)
class TreeRow:
    """One line of the session tree in the sidebar."""

    entry: EntryView
    kind: str
    text: str
    #: what the filters look at: "settings", "user", "tool-result", "labeled" and
    #: "tool-only" (an assistant message of tool calls alone, which no filter lists: its
    #: results are listed, each with its call)
    traits: frozenset[str]
    #: listed by the Default filter (the page opens with it)
    shown: bool = True
    #: the box-drawing prefix in the Default view ('' for a row it does not list)
    prefix: str = ""
    depth: int = 0

    @property
    def trait_classes(self) -> str:
        return " ".join(f"is-{trait}" for trait in sorted(self.traits))


@dataclass(slots=True)
class Stats:
    user: int = 0
    assistant: int = 0
    tool_results: int = 0
    tool_calls: int = 0
    custom: int = 0
    compactions: int = 0
    branch_summaries: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    models: list[str] = field(default_factory=list)

    def messages_text(self) -> str:
        parts = [
            (self.user, "user"),
            (self.assistant, "assistant"),
            (self.tool_results, "tool results"),
            (self.custom, "custom"),
            (self.compactions, "compactions"),
            (self.branch_summaries, "branch summaries"),
        ]
        return ", ".join(f"{n} {what}" for n, what in parts if n) or "0"

    def tokens_text(self) -> str:
        parts = [("↑", self.input), ("↓", self.output), ("R", self.cache_read), ("W", self.cache_write)]
        return " ".join(f"{mark}{format_tokens(n)}" for mark, n in parts if n) or "0"


@dataclass(slots=True)
class SessionPage:
    header: Json
    name: str | None
    entries: list[EntryView]
    tree: list[TreeRow]
    leaf_id: str | None
    stats: Stats
    parents: dict[str, str | None]
    #: shown at the top when no entry of the session records the prompt
    fallback_system_prompt: str | None
    fallback_tools: list[ToolInfo]


def build_page(
    header: Mapping[str, Any] | None,
    entries: Sequence[Mapping[str, Any]],
    leaf_id: str | None,
    *,
    system_prompt: str | None = None,
    tools: Sequence[Any] | None = None,
) -> SessionPage:
    views: list[EntryView] = []
    by_id: dict[str, EntryView] = {}
    for index, raw in enumerate(entries):
        entry = dict(raw)
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or entry_id in by_id:
            continue  # no id, or a repeated one: the session manager keeps the first too
        parent = entry.get("parentId")
        view = EntryView(
            id=entry_id,
            parent_id=parent if isinstance(parent, str) and parent != entry_id else None,
            type=str(entry.get("type") or "unknown"),
            raw=entry,
            index=index,
        )
        if view.type == "message":
            view.message = as_dict(entry.get("message"))
            role = view.message.get("role")
            view.role = role if isinstance(role, str) else "unknown"
        views.append(view)
        by_id[entry_id] = view
    for view in views:
        if view.parent_id is not None and view.parent_id not in by_id:
            view.parent_id = None  # a missing parent makes a root, as when pi opens the file

    _apply_labels(views, by_id)
    if leaf_id not in by_id:
        leaf_id = views[-1].id if views else None
    _mark_path(by_id, leaf_id)
    _pair_tool_results(views, by_id)
    _mark_leading_system(views, by_id)
    has_system = any(v.role == "system" for v in views)
    name = None
    for view in views:
        if view.type == "session_info":
            value = view.raw.get("name")
            name = value.strip() if isinstance(value, str) and value.strip() else None
    return SessionPage(
        header=dict(header or {}),
        name=name,
        entries=views,
        tree=_tree_rows(views, by_id),
        leaf_id=leaf_id,
        stats=_stats(views),
        parents={v.id: v.parent_id for v in views},
        fallback_system_prompt=None if has_system else system_prompt,
        fallback_tools=[] if has_system else tool_infos(tools or ()),
    )


def _apply_labels(views: list[EntryView], by_id: dict[str, EntryView]) -> None:
    for view in views:
        if view.type == "label":
            target = by_id.get(str(view.raw.get("targetId")))
            if target is not None:
                label = view.raw.get("label")
                target.label = label if isinstance(label, str) and label else None


def _mark_path(by_id: dict[str, EntryView], leaf_id: str | None) -> None:
    current = by_id.get(leaf_id) if leaf_id else None
    if current is not None:
        current.is_leaf = True
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        current.on_path = True
        current = by_id.get(current.parent_id) if current.parent_id else None


def _pair_tool_results(views: list[EntryView], by_id: dict[str, EntryView]) -> None:
    """Each tool result goes to the nearest earlier assistant message on its branch that
    made the call (call ids repeat across branches and sessions, so never by id alone)."""
    for view in views:
        if view.role != "toolResult":
            continue
        call_id = view.message.get("toolCallId")
        if not isinstance(call_id, str):
            continue
        current = by_id.get(view.parent_id) if view.parent_id else None
        steps = 0
        while current is not None and steps < 10_000:
            call = _call(current.message, call_id) if current.role == "assistant" else None
            if call is not None:
                current.results.setdefault(call_id, []).append(view)
                view.call = call
                break
            current = by_id.get(current.parent_id) if current.parent_id else None
            steps += 1


def _call(message: Json, call_id: str) -> Json | None:
    for block in blocks(message.get("content")):
        if block.get("type") == "toolCall" and block.get("id") == call_id:
            return block
    return None


def _carries_system(view: EntryView) -> bool:
    return view.role == "system" or (view.type == "compaction" and isinstance(view.raw.get("systemMessage"), dict))


def _mark_leading_system(views: list[EntryView], by_id: dict[str, EntryView]) -> None:
    for view in views:
        if view.role != "system":
            continue
        current = by_id.get(view.parent_id) if view.parent_id else None
        leading = True
        seen: set[str] = set()
        while current is not None and current.id not in seen:
            seen.add(current.id)
            if _carries_system(current):
                leading = False
                break
            current = by_id.get(current.parent_id) if current.parent_id else None
        view.leading_system = leading


def _stats(views: list[EntryView]) -> Stats:
    """The header's totals over every entry of the file (all branches), counted as pi
    1.6.0 counts them: tokens and cost are those of the assistant messages only - the
    calls that wrote compaction and branch summaries and the cache warm-ups of ``usage``
    entries are not added (they are listed as entries of their own)."""
    stats = Stats()
    models: dict[str, None] = {}

    def add_usage(usage: Any) -> None:
        usage = as_dict(usage)
        for key, attr in (
            ("input", "input"),
            ("output", "output"),
            ("cacheRead", "cache_read"),
            ("cacheWrite", "cache_write"),
        ):
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(stats, attr, getattr(stats, attr) + int(value))
        cost = as_dict(usage.get("cost"))
        total = cost.get("total")
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            stats.cost += float(total)
        else:  # a session from before the total was recorded: the sum of the parts
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                value = cost.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    stats.cost += float(value)

    for view in views:
        if view.type == "message":
            message = view.message
            if view.role == "user":
                stats.user += 1
            elif view.role == "assistant":
                stats.assistant += 1
                model = message.get("model")
                if isinstance(model, str) and model:
                    provider = message.get("provider")
                    models[f"{provider}/{model}" if provider else model] = None
                add_usage(message.get("usage"))
                stats.tool_calls += sum(1 for b in blocks(message.get("content")) if b.get("type") == "toolCall")
            elif view.role == "toolResult":
                stats.tool_results += 1
        elif view.type == "compaction":
            stats.compactions += 1
        elif view.type == "branch_summary":
            stats.branch_summaries += 1
        elif view.type == "custom_message":
            stats.custom += 1
    stats.models = list(models)
    return stats


# ---------------------------------------------------------------------------- the tree


def tree_text(view: EntryView) -> tuple[str, str]:
    """(kind, one line) naming an entry in the tree."""
    raw, message = view.raw, view.message
    if view.type == "message":
        role = view.role or "unknown"
        if role == "user":
            text = text_of(message.get("content"))
            skill = skill_block(text)
            if skill is not None:
                return "skill", f"skill: {skill['name']}" + (
                    f" · user: {one_line(skill['user'])}" if skill["user"] else ""
                )
            images = len(images_of(message.get("content")))
            return "user", "user: " + (one_line(text) or (f"[{images} image(s)]" if images else ""))
        if role == "assistant":
            text = one_line(text_of(message.get("content"), ""))
            if text:
                return "assistant", f"assistant: {text}"
            if message.get("stopReason") == "aborted":
                return "assistant", "assistant: (aborted)"
            if message.get("errorMessage"):
                return "error", f"assistant: {one_line(str(message['errorMessage']))}"
            calls = [b for b in blocks(message.get("content")) if b.get("type") == "toolCall"]
            if calls:
                return "assistant", "assistant: " + " ".join(
                    tool_call_summary(str(c.get("name")), as_dict(c.get("arguments"))) for c in calls
                )
            return "assistant", "assistant: (no text)"
        if role == "toolResult":
            call = view.call
            if call is not None:
                return "tool", tool_call_summary(str(call.get("name")), as_dict(call.get("arguments")))
            return "tool", f"[{message.get('toolName') or 'tool'}]"
        if role == "bashExecution":
            return "tool", f"[bash]: {one_line(str(message.get('command') or ''))}"
        if role == "system":
            if view.leading_system:
                return "muted", "[system prompt]"
            changes = system_update_summary(message)
            return "muted", f"[system update: {one_line(changes)}]" if changes else "[system update]"
        if role == "custom":
            return "custom", f"[{message.get('customType')}]: {one_line(text_of(message.get('content')))}"
        if role in ("branchSummary", "compactionSummary"):
            return "summary", f"[{role}]: {one_line(str(message.get('summary') or ''))}"
        return "muted", f"[{role}]"
    if view.type == "compaction":
        tokens = raw.get("tokensBefore")
        size = f"{round(tokens / 1000)}k tokens" if isinstance(tokens, (int, float)) else "?"
        return "compaction", f"[compaction: {size}]"
    if view.type == "branch_summary":
        return "summary", f"[branch summary]: {one_line(str(raw.get('summary') or ''))}"
    if view.type == "custom_message":
        content = raw.get("content")
        text = content if isinstance(content, str) else text_of(content)
        return "custom", f"[{raw.get('customType')}]: {one_line(text)}"
    if view.type == "model_change":
        return "muted", f"[model: {raw.get('provider')}/{raw.get('modelId')}]"
    if view.type == "thinking_level_change":
        return "muted", f"[thinking: {raw.get('thinkingLevel')}]"
    if view.type == "context_edit":
        what = "omit" if raw.get("replacement") is None else "replace"
        return "muted", f"[context {what}: {raw.get('targetId')}]"
    if view.type == "label":
        return "muted", f"[label {raw.get('targetId')}: {raw.get('label') or '(cleared)'}]"
    if view.type == "session_info":
        return "muted", f"[name: {raw.get('name') or '(cleared)'}]"
    if view.type == "usage":
        return "muted", f"[usage: {raw.get('kind')}]"
    if view.type == "custom":
        return "muted", f"[custom: {raw.get('customType')}]"
    return "muted", f"[{view.type}]"


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(b.get("type") == "text" and str(b.get("text") or "").strip() for b in blocks(content))


def tree_traits(view: EntryView) -> frozenset[str]:
    """What the tree's filters look at in an entry (see :attr:`TreeRow.traits`)."""
    traits = set()
    if view.type in SETTINGS_TYPES:
        traits.add("settings")
    if view.role == "user":
        traits.add("user")
    elif view.role == "toolResult":
        traits.add("tool-result")
    elif view.role == "assistant" and not _has_text(view.message.get("content")):
        if view.message.get("stopReason") in (None, "stop", "toolUse"):  # an error or an abort is listed
            traits.add("tool-only")
    if view.label:
        traits.add("labeled")
    return frozenset(traits)


def filter_shows(row: TreeRow, mode: str, leaf_id: str | None) -> bool:
    """Whether the tree lists ``row`` under filter ``mode`` while ``leaf_id`` is the leaf
    of the branch on view (always listed). session.js applies the same rules."""
    if row.entry.id == leaf_id:
        return True
    traits = row.traits
    if "tool-only" in traits:
        return False
    if mode == "no-tools":
        return "settings" not in traits and "tool-result" not in traits
    if mode == "user":
        return "user" in traits
    if mode == "labeled":
        return "labeled" in traits
    if mode == "all":
        return True
    return "settings" not in traits


def _tree_rows(views: list[EntryView], by_id: dict[str, EntryView]) -> list[TreeRow]:
    """Every entry as a row of the tree, depth first with the branch holding the active
    leaf first; the rows the Default filter lists get their box-drawing prefixes."""
    children: dict[str | None, list[EntryView]] = {}
    for view in views:
        children.setdefault(view.parent_id, []).append(view)
    contains_active: dict[str, bool] = {}
    for view in reversed(views):  # children always come after their parent in a file
        contains_active[view.id] = view.on_path or any(
            contains_active.get(c.id, False) for c in children.get(view.id, ())
        )

    def ordered(nodes: list[EntryView]) -> list[EntryView]:
        return sorted(nodes, key=lambda n: not contains_active.get(n.id, False))

    rows: list[TreeRow] = []
    stack = list(reversed(ordered(children.get(None, []))))
    while stack:
        node = stack.pop()
        kind, text = tree_text(node)
        rows.append(TreeRow(entry=node, kind=kind, text=text, traits=tree_traits(node)))
        stack.extend(reversed(ordered(children.get(node.id, []))))
    leaf_id = next((row.entry.id for row in rows if row.entry.is_leaf), None)
    for row in rows:
        row.shown = filter_shows(row, "default", leaf_id)
    layout_tree(rows)
    return rows


def layout_tree(rows: list[TreeRow]) -> None:
    """Set the prefix and depth of the rows that are ``shown``, as a tree of its own: a
    row hangs under its nearest shown ancestor; a chain of single children stays flat, a
    branch point indents its children. ``rows`` are in depth-first order."""
    shown = {row.entry.id for row in rows if row.shown}
    # the nearest shown ancestor of every row (depth-first order: parents come first)
    anchor: dict[str, str | None] = {}
    children: dict[str | None, list[TreeRow]] = {}
    for row in rows:
        parent = row.entry.parent_id
        anchor[row.entry.id] = parent if parent is None or parent in shown else anchor.get(parent)
        if row.shown:
            children.setdefault(anchor[row.entry.id], []).append(row)
        else:
            row.prefix, row.depth = "", 0
    roots = children.get(None, [])
    multiple_roots = len(roots) > 1
    # stack items: row, indent, just_branched, show_connector, is_last, gutters, virtual root child
    Item = tuple[TreeRow, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]
    stack: list[Item] = []
    for i in range(len(roots) - 1, -1, -1):
        stack.append(
            (
                roots[i],
                1 if multiple_roots else 0,
                multiple_roots,
                multiple_roots,
                i == len(roots) - 1,
                (),
                multiple_roots,
            )
        )
    while stack:
        row, indent, just_branched, show_connector, is_last, gutters, virtual = stack.pop()
        row.prefix = _prefix(indent, show_connector and not virtual, is_last, gutters, multiple_roots)
        row.depth = indent
        kids = children.get(row.entry.id, [])
        many = len(kids) > 1
        child_indent = indent + 1 if many or (just_branched and indent > 0) else indent
        display_indent = max(0, indent - 1) if multiple_roots else indent
        child_gutters = gutters
        if show_connector and not virtual:
            child_gutters = (*gutters, (max(0, display_indent - 1), not is_last))
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], child_indent, many, many, i == len(kids) - 1, child_gutters, False))


def _prefix(indent: int, connector: bool, is_last: bool, gutters: tuple[tuple[int, bool], ...], multi: bool) -> str:
    display_indent = max(0, indent - 1) if multi else indent
    connector_at = display_indent - 1 if connector else -1
    gutter_at = dict(gutters)
    chars = []
    for level in range(display_indent):
        if level in gutter_at:
            chars.append("│  " if gutter_at[level] else "   ")
        elif level == connector_at:
            chars.append("└─ " if is_last else "├─ ")
        else:
            chars.append("   ")
    return "".join(chars)
