"""The contract documents itself: every hookspec carries its contract (event model,
result model, rule, section), has a docstring and a ``test_hook_<name>`` test, and
docs/hooks.md is generated from them. Every list of hooks here is derived from the
hookspecs (``pi_hookspecs.specs``): adding a hook means writing its hookspec, its test
and regenerating the docs, nothing else."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from pi_hookspecs import EVENTS, HOOK_GROUPS, REGISTRATIONS, events, specs
from pi_hookspecs.rules import EventSpec, RegistrationSpec, Rule, contract_of, hookspec_hints

REPO = Path(__file__).resolve().parents[1]


def _load_docs_module():
    spec = importlib.util.spec_from_file_location("_hookdocs", REPO / "docs" / "_hookdocs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_hookdocs"] = module
    spec.loader.exec_module(module)
    return module


hookdocs = _load_docs_module()
HOOKS = hookdocs.hook_names()


def test_every_hookspec_carries_its_contract_and_everything_is_derived_from_them() -> None:
    contracts = {name: contract_of(getattr(specs, name)) for name in HOOKS}
    assert all(isinstance(c, EventSpec | RegistrationSpec) for c in contracts.values()), contracts
    assert list(EVENTS) == [n for n, c in contracts.items() if isinstance(c, EventSpec)]
    assert list(REGISTRATIONS) == [n for n, c in contracts.items() if isinstance(c, RegistrationSpec)]
    assert [n for names in HOOK_GROUPS.values() for n in names] == HOOKS  # each hook in one section, in order
    assert all(EVENTS[n] is contracts[n] for n in EVENTS)


def test_every_event_model_has_its_hookspec() -> None:
    models = {
        cls.model_fields["type"].default: cls
        for cls in (getattr(events, name) for name in dir(events))  # the occasional ones included
        if isinstance(cls, type) and issubclass(cls, events.Event) and isinstance(cls.model_fields["type"].default, str)
    }
    assert {name: spec.event for name, spec in EVENTS.items()} == models


@pytest.mark.parametrize("name", HOOKS)
def test_hookspec_signature_and_docstring(name: str) -> None:
    func = getattr(specs, name)
    sig = inspect.signature(func)
    contract = contract_of(func)
    if isinstance(contract, RegistrationSpec):
        assert list(sig.parameters) == [contract.argument]
        assert sig.parameters[contract.argument].annotation is contract.callback
        assert sig.return_annotation is None
    else:
        assert isinstance(contract, EventSpec)
        assert list(sig.parameters) == ["event", "ctx"]
        hints = hookspec_hints(func)  # an occasional event's name is quoted (made on first use)
        assert hints["event"] is contract.event
        assert hints["ctx"].__name__ in ("ExtensionContext", "ProjectTrustContext")
        if contract.result is None:
            assert hints["return"] is type(None)
            assert contract.rule in (Rule.NOTIFICATION, Rule.MUTATION)
        else:
            assert hints["return"] == contract.result | None
            assert issubclass(contract.result, BaseModel)
    doc = inspect.getdoc(func) or ""
    assert len(doc) > 80, f"{name} needs a real docstring"
    assert "**Errors**" in doc, f"{name}: say what an exception does"
    if name in EVENTS:
        assert re.search(r"\*\*(Returns|Mutate)\*\*", doc), f"{name}: say what a handler may return"
    if name in EVENTS and EVENTS[name].fail_closed:
        assert "fail **closed**" in doc, f"{name}: say that it fails closed"


def test_every_hook_has_a_test() -> None:
    source = (REPO / "tests" / "test_hooks.py").read_text()
    tested = set(re.findall(r"^async def test_hook_(\w+)\(|^def test_hook_(\w+)\(", source, re.M))
    names = {a or b for a, b in tested}
    missing = sorted(set(HOOKS) - names)
    assert not missing, f"add test_hook_<name> tests for: {missing}"


def test_docs_hooks_md_matches_the_docstrings() -> None:
    current = (REPO / "docs" / "hooks.md").read_text()
    assert current == hookdocs.render(), "docs/hooks.md is stale: run `uv run python docs/_hookdocs.py`"
