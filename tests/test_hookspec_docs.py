"""The contract documents itself: every hookspec has a docstring, the exact signature,
a ``test_hook_<name>`` test, and docs/hooks.md is generated from those docstrings."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

from pi_hookspecs import EVENTS, REGISTRATION_HOOKS, specs

REPO = Path(__file__).resolve().parents[1]

# DESIGN.md §2: one hookspec per event, named exactly as the event.
DESIGN_EVENTS = """input context context_with_system tool_call tool_result session_before_compact
resources_discover project_trust session_start session_shutdown session_before_switch
session_before_fork session_before_tree session_tree session_compact session_compact_failed
session_info_changed before_agent_start agent_start agent_end agent_before_settle agent_settled
turn_start turn_end message_start message_update message_end tool_execution_start
tool_execution_update tool_execution_end before_provider_headers before_provider_request
after_provider_response provider_stream_event model_select thinking_level_select user_bash""".split()
# Added since: bash_spawn (issue 21), so a plugin (pi-sandbox) decides how every shell
# command starts; hook_outcome (issue 22), so audit and telemetry plugins see what other
# plugins' handlers did.
ADDED_EVENTS = ["bash_spawn", "hook_outcome"]


def _load_docs_module():
    spec = importlib.util.spec_from_file_location("_hookdocs", REPO / "docs" / "_hookdocs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_hookdocs"] = module
    spec.loader.exec_module(module)
    return module


hookdocs = _load_docs_module()
HOOKS = hookdocs.hook_names()


def test_the_hookspecs_are_exactly_the_designed_events_and_registration_hooks() -> None:
    assert sorted(HOOKS) == sorted(DESIGN_EVENTS + ADDED_EVENTS + list(REGISTRATION_HOOKS))
    assert sorted(EVENTS) == sorted(DESIGN_EVENTS + ADDED_EVENTS)


@pytest.mark.parametrize("name", HOOKS)
def test_hookspec_signature_and_docstring(name: str) -> None:
    func = getattr(specs, name)
    params = list(inspect.signature(func).parameters)
    expected = {"register_tools": ["register"], "register_commands": ["register"], "register_flags": ["register"],
                "register_providers": ["register"], "register_cli_commands": ["register"],
                "add_hookspecs": ["add"]}.get(name, ["event", "ctx"])
    assert params == expected
    doc = inspect.getdoc(func) or ""
    assert len(doc) > 80, f"{name} needs a real docstring"
    assert "**Errors**" in doc, f"{name}: say what an exception does"
    if name in EVENTS:
        assert re.search(r"\*\*(Returns|Mutate)\*\*", doc), f"{name}: say what a handler may return"


def test_every_hook_has_a_test() -> None:
    source = (REPO / "tests" / "test_hooks.py").read_text()
    tested = set(re.findall(r"^async def test_hook_(\w+)\(|^def test_hook_(\w+)\(", source, re.M))
    names = {a or b for a, b in tested}
    missing = sorted(set(HOOKS) - names)
    assert not missing, f"add test_hook_<name> tests for: {missing}"


def test_every_event_model_names_its_event() -> None:
    for name, spec in EVENTS.items():
        assert spec.event.model_fields["type"].default == name
        assert spec.rule in spec.rule.__class__


def test_docs_hooks_md_matches_the_docstrings() -> None:
    current = (REPO / "docs" / "hooks.md").read_text()
    assert current == hookdocs.render(), "docs/hooks.md is stale: run `uv run python docs/_hookdocs.py`"
