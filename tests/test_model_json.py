"""pi_core._schema_cache.model_json: the JSON of a model by a serializer built from its
class's kept schema, equal to ``model.to_json()``."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from pi_core._schema_cache import model_json
from pi_core.runtime.events import NoticeEvent
from pi_hookspecs import (
    AssistantMessage,
    MessageEntry,
    ModelChangeEntry,
    PiModel,
    SessionTreeEvent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolResult,
    Usage,
    UserMessage,
)


def _samples() -> list[Any]:
    message = AssistantMessage(
        content=[
            ThinkingContent(thinking="hm", thinking_signature="s"),
            TextContent(text="hi"),
            ToolCall(id="c", name="bash", arguments={"command": "ls"}),
        ],
        api="x",
        provider="p",
        model="m",
        usage=Usage(input=3, cache_write_1h=None),
        stop_reason="toolUse",
        timestamp=5,
    )
    return [
        message,
        UserMessage(content=[TextContent(text="q")], timestamp=1),
        MessageEntry(id="a", parent_id=None, timestamp="t", message=message),
        ModelChangeEntry(id="b", parent_id="a", timestamp="t", provider="p", model_id="m", custom_extra=1),
        ToolExecutionEndEvent(
            tool_call_id="c", tool_name="bash", result=ToolResult.text("ok", details={"x": None}), is_error=False
        ),
        SessionTreeEvent(new_leaf_id="a", old_leaf_id=None),
        NoticeEvent(level="warning", message="m"),
    ]


@pytest.mark.parametrize("model", _samples(), ids=lambda m: type(m).__name__)
def test_the_same_json_as_to_json(model: PiModel) -> None:
    assert model_json(model) == model.to_json()


def test_a_class_outside_the_contract_uses_its_own_serializer() -> None:
    class Mine(PiModel):
        some_field: int = 1

    assert model_json(Mine()) == {"someField": 1}
    assert model_json({"plain": 1}) == {"plain": 1}


def test_a_later_run_does_not_generate_the_schemas(tmp_path: Any) -> None:
    code = (
        "import pydantic._internal._model_construction as mc\n"
        "built = []\nreal = mc.complete_model_class\n"
        "mc.complete_model_class = lambda cls, *a, **k: (built.append(cls.__name__), real(cls, *a, **k))[1]\n"
        "from pi_core._schema_cache import model_json\n"
        "from pi_hookspecs import UserMessage, TextContent\n"
        "print(model_json(UserMessage.model_construct(role='user', "
        "content=[TextContent.model_construct(type='text', text='q')], timestamp=1)))\n"
        "print(built)\n"
    )
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        for _ in range(2)
    ]
    assert runs[0][0] == runs[1][0] == "{'role': 'user', 'content': [{'type': 'text', 'text': 'q'}], 'timestamp': 1}"
    assert runs[0][1] != "[]"  # generated, then kept
    assert runs[1][1] == "[]"
