"""``PiModel.model_construct`` (the contract's faster constructor) makes the instance
pydantic's ``BaseModel.model_construct`` makes, for every model of the contract and
of pi_core: the same ``__dict__`` (values, order and defaults), the same set fields,
the same extra keys, and fresh mutable defaults per instance."""

from __future__ import annotations

import importlib
import pkgutil
import time
from typing import Any

import pytest
from pydantic import BaseModel

import pi_core
import pi_hookspecs
from pi_hookspecs import PiModel
from pi_hookspecs._base import _construct_plan, now_ms


def _all_models() -> list[type[PiModel]]:
    for package in (pi_hookspecs, pi_core):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if ".tui" in info.name or info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional dependency missing here
                continue
    seen: list[type[PiModel]] = []
    stack: list[type[PiModel]] = [PiModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen and not sub.__pydantic_generic_metadata__["parameters"]:
                seen.append(sub)
                stack.append(sub)
    return sorted(seen, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


MODELS = _all_models()


def _state(model: BaseModel) -> tuple[Any, ...]:
    """What an instance holds; a clock default (``now_ms``, ``time.monotonic``) is
    compared by its type, as the two instances are made a moment apart."""
    fields = type(model).__pydantic_fields__
    clock = {name for name, info in fields.items() if info.default_factory in (now_ms, time.monotonic)}
    return (
        [
            (k, type(v) if k in clock and k not in model.__pydantic_fields_set__ else v)
            for k, v in model.__dict__.items()
        ],
        model.__pydantic_fields_set__,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


def _sample(cls: type[PiModel], spelling: str) -> dict[str, Any]:
    """A value for every field, by alias or by name, plus an unknown key."""
    values: dict[str, Any] = {}
    for index, (name, info) in enumerate(cls.__pydantic_fields__.items()):
        key = info.alias if spelling == "alias" and info.alias else name
        values[key] = f"value-{index}"
    values["somethingNew"] = 1
    return values


def test_every_model_is_found() -> None:
    names = {cls.__name__ for cls in MODELS}
    assert {"AssistantMessage", "MessageEntry", "ToolCallEvent", "Usage", "SystemPromptOptions"} <= names
    assert len(MODELS) > 150


@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_same_instance_as_pydantic(cls: type[PiModel]) -> None:
    # defaults only (factories called, immutable defaults shared as pydantic shares them)
    ours, theirs = cls.model_construct(), BaseModel.model_construct.__func__(cls)  # type: ignore[attr-defined]
    assert _state(ours) == _state(theirs)
    for spelling in ("alias", "name"):
        ours = cls.model_construct(**_sample(cls, spelling))
        theirs = BaseModel.model_construct.__func__(cls, **_sample(cls, spelling))  # type: ignore[attr-defined]
        assert _state(ours) == _state(theirs)
        assert type(ours) is cls
    # an explicit fields set is kept as given
    given = {"x"}
    assert cls.model_construct(given).__pydantic_fields_set__ is given


def test_mutable_defaults_are_fresh_per_instance() -> None:
    from pi_hookspecs import AssistantMessage

    assert _construct_plan(AssistantMessage) is not None  # the fast way, not pydantic's
    one, two = AssistantMessage.model_construct(), AssistantMessage.model_construct()
    assert one.content == [] and one.content is not two.content


def test_both_spellings_given_keep_the_name_as_extra_like_pydantic() -> None:
    from pi_hookspecs import ToolResultMessage

    kwargs = {"toolCallId": "a", "tool_call_id": "b"}
    ours = ToolResultMessage.model_construct(**dict(kwargs))
    theirs = BaseModel.model_construct.__func__(ToolResultMessage, **dict(kwargs))  # type: ignore[attr-defined]
    assert ours.tool_call_id == theirs.tool_call_id == "a"
    assert ours.__pydantic_extra__ == theirs.__pydantic_extra__ == {"tool_call_id": "b"}
