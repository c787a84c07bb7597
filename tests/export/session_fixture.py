"""A session file holding every kind of entry, written by the real SessionManager.

Every entry carries a distinctive text (``TEXTS``) so tests can check that the export
shows it; several carry a ``<script>`` to check the escaping.
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from pi_core.session import SessionManager
from pi_hookspecs import Usage


def png_bytes(width: int = 3, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A tiny valid PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


PNG_B64 = base64.b64encode(png_bytes()).decode()
SCRIPT = "<script>window.__pwned = 1</script>"

TEXTS = {
    "system": "You are the export fixture assistant.",
    "user": "Please list the files",
    "thinking": "The user wants a listing of the folder",
    "assistant": "Here are the files of the folder",
    "bash_output": "alpha.txt\nbeta.txt",
    "read_output": "def greet():\n    return 'hi'",
    "edit_diff": "+2 return 'hello'",
    "write_content": "print('written by the fixture')",
    "orphan": "result of a call that is gone",
    "shell": "echo from-the-user-shell",
    "shell_output": "from-the-user-shell",
    "custom": "Plugin note: the build is green",
    "hidden_custom": "A note the terminal hides",
    "compaction": "Summary of the early conversation about files",
    "branch_summary": "Tried approach A on the other branch",
    "other_branch": "An answer on the abandoned branch",
    "model": "fixture/other-model",
    "label": "checkpoint-one",
    "name": "Fixture session",
    "image_caption": "What is in this picture?",
    "error": "upstream exploded",
}


# the calls that wrote the compaction and the branch summary (the page's totals leave them
# out, as pi 1.6.0's do)
SUMMARY_USAGE = Usage.model_validate(
    {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110, "cost": {"total": 0.002}}
)


@dataclass
class Fixture:
    path: Path
    ids: dict[str, str]
    session_id: str


def write_rich_session(directory: Path) -> Fixture:
    """A session with two branches (the active one is the newest), every entry type, an
    image, tool calls of several tools and their results, and text with <script> in it."""
    sm = SessionManager.create(directory, session_dir=directory)
    ids: dict[str, str] = {}
    ids["system"] = sm.append_message(
        {
            "role": "system",
            "content": "",
            "sections": {"preamble": TEXTS["system"] + " " + SCRIPT, "cwd": str(directory)},
            "toolsAdded": [
                {
                    "name": "bash",
                    "description": "Run a shell command",
                    "parameters": {
                        "type": "object",
                        "properties": {"command": {"type": "string", "description": "the command"}},
                        "required": ["command"],
                    },
                },
                {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                },
            ],
        }
    )
    ids["user"] = sm.append_message({"role": "user", "content": f"{TEXTS['user']} {SCRIPT} **now**"})
    ids["assistant_tools"] = sm.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": TEXTS["thinking"]},
                {"type": "text", "text": TEXTS["assistant"] + "\n\n```python\nprint('hi')\n```"},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls " + SCRIPT}},
                {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "/work/src/greet.py"}},
                {
                    "type": "toolCall",
                    "id": "call_3",
                    "name": "edit",
                    "arguments": {"path": "/work/src/greet.py", "edits": [{"oldText": "hi", "newText": "hello"}]},
                },
                {
                    "type": "toolCall",
                    "id": "call_4",
                    "name": "write",
                    "arguments": {"path": "/work/out.py", "content": TEXTS["write_content"]},
                },
                {"type": "toolCall", "id": "call_5", "name": "my_plugin_tool", "arguments": {"query": SCRIPT}},
            ],
            "api": "openai-completions",
            "provider": "fixture",
            "model": "fixture-model",
            "usage": {
                "input": 1200,
                "output": 300,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 1500,
                "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
            },
            "stopReason": "toolUse",
        }
    )
    ids["result_bash"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "bash",
            "content": [{"type": "text", "text": TEXTS["bash_output"] + "\n" + SCRIPT}],
            "isError": False,
        }
    )
    ids["result_read"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_2",
            "toolName": "read",
            "content": [{"type": "text", "text": TEXTS["read_output"]}],
            "isError": False,
        }
    )
    ids["result_edit"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_3",
            "toolName": "edit",
            "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in /work/src/greet.py."}],
            "details": {"diff": " 1 def greet():\n-2     return 'hi'\n" + TEXTS["edit_diff"]},
            "isError": False,
        }
    )
    ids["result_write"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_4",
            "toolName": "write",
            "content": [{"type": "text", "text": "Wrote 31 bytes"}],
            "isError": False,
        }
    )
    ids["result_plugin"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_5",
            "toolName": "my_plugin_tool",
            "content": [
                {"type": "text", "text": "plugin failed: " + SCRIPT},
                {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            ],
            "isError": True,
            "nestedCalls": {
                "calls": [{"id": "n1", "name": "read", "arguments": {"path": "x"}, "status": "ok", "durationMs": 3}],
                "complete": True,
            },
        }
    )
    ids["orphan"] = sm.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_gone",
            "toolName": "grep",
            "content": [{"type": "text", "text": TEXTS["orphan"]}],
            "isError": False,
        }
    )
    ids["label"] = sm.set_label(ids["user"], TEXTS["label"])
    ids["model_change"] = sm.append_model_change("fixture", "other-model")
    ids["thinking_change"] = sm.append_thinking_level_change("high")
    ids["fork_point"] = sm.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Done with the tools."}],
            "provider": "fixture",
            "model": "other-model",
            "stopReason": "stop",
        }
    )
    # the branch we leave: one answer
    ids["user_2"] = sm.append_message({"role": "user", "content": "Try approach A"})
    ids["other_branch"] = sm.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": TEXTS["other_branch"]}],
            "provider": "fixture",
            "model": "fixture-model",
            "stopReason": "stop",
        }
    )
    # back to the fork point, with a summary of the branch left: the active branch
    ids["branch_summary"] = sm.branch_with_summary(ids["fork_point"], TEXTS["branch_summary"], usage=SUMMARY_USAGE)
    ids["image_user"] = sm.append_message(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": TEXTS["image_caption"]},
                {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            ],
        }
    )
    ids["shell"] = sm.append_message(
        {
            "role": "bashExecution",
            "command": TEXTS["shell"],
            "output": TEXTS["shell_output"] + "\n",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
        }
    )
    ids["custom"] = sm.append_custom_message_entry("build-status", TEXTS["custom"] + " " + SCRIPT, True)
    ids["hidden_custom"] = sm.append_custom_message_entry("reminder", TEXTS["hidden_custom"], False)
    ids["plugin_state"] = sm.append_custom_entry("my-plugin", {"count": 1})
    ids["compaction"] = sm.append_compaction(
        TEXTS["compaction"] + "\n\n- point " + SCRIPT,
        ids["image_user"],
        51234,
        details={"readFiles": ["/work/src/greet.py"], "modifiedFiles": ["/work/out.py"]},
        usage=SUMMARY_USAGE,
    )
    ids["system_update"] = sm.append_message(
        {
            "role": "system",
            "content": "",
            "sections": {"skills": "<skills>none</skills>", "cwd": None},
            "toolsRemoved": [{"name": "read"}],
        }
    )
    ids["context_edit"] = sm.append_context_edit(ids["image_user"], None)
    ids["session_info"] = sm.append_session_info(TEXTS["name"])
    ids["usage"] = sm.append_usage(
        "cache_warm",
        "fixture",
        "fixture-model",
        {"input": 0, "output": 0, "cacheRead": 500, "totalTokens": 500, "cost": {"total": 0.0005}},
    )
    ids["error_answer"] = sm.append_message(
        {
            "role": "assistant",
            "content": [],
            "provider": "fixture",
            "model": "fixture-model",
            "stopReason": "error",
            "errorMessage": TEXTS["error"],
        }
    )
    ids["last_user"] = sm.append_message({"role": "user", "content": "Last question"})
    ids["leaf"] = sm.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Final answer of the **active** branch"}],
            "provider": "fixture",
            "model": "fixture-model",
            "stopReason": "stop",
        }
    )
    path = Path(sm.get_session_file() or "")
    session_id = sm.get_session_id()
    sm.close()
    return Fixture(path=path, ids=ids, session_id=session_id)
