"""The built-in tools plugin loads through the ordinary plugin path."""

from __future__ import annotations

from pathlib import Path

from tools_support import FakeToolContext, call, text

from pi_core.builtins import builtin_plugins
from pi_core.extensions import LoadOptions, PluginHost
from pi_core.tools import DEFAULT_ACTIVE_TOOLS, BuiltinToolsPlugin, builtin_tools
from pi_hookspecs import ToolResult, hookimpl, tool

ALL = ["read", "bash", "edit", "write", "grep", "find", "ls"]


async def load(tmp_path: Path, *plugins: object) -> PluginHost:
    host = PluginHost(LoadOptions(cwd=str(tmp_path), entry_points=False, sdk_plugins=list(plugins)))
    await host.load(project_trusted=False)
    return host


def test_builtin_plugins_name_the_providers_and_the_tools_plugin():
    from pi_core.ai import builtin

    assert builtin_plugins() == [("pi-providers", builtin), ("tools", BuiltinToolsPlugin)]


async def test_the_host_registers_pi_s_providers_from_the_builtin_plugin(tmp_path):
    host = await load(tmp_path)
    by_plugin = host.registry.by_plugin("pi-providers")
    assert {"anthropic-messages", "openai-completions", "faux"} <= set(by_plugin["apis"])
    assert {"anthropic", "openai", "google"} <= set(by_plugin["providers"])
    assert "anthropic" in by_plugin["logins"]
    assert all(r.source == "builtin" for r in host.registry.providers.values() if r.plugin == "pi-providers")


async def test_the_host_registers_the_seven_tools_from_the_builtin_plugin(tmp_path):
    host = await load(tmp_path)
    assert not [d for d in host.diagnostics if d.level == "error"]
    assert list(host.registry.tools) == ALL
    for name, registered in host.registry.tools.items():
        assert registered.plugin == "tools" and registered.source == "builtin"
        assert registered.value.default_active is (name in DEFAULT_ACTIVE_TOOLS)
    record = next(r for r in host.records if r.name == "tools")
    assert record.kind == "builtin" and record.hooks == ["register_tools"]


async def test_a_plugin_tool_replaces_the_builtin_of_the_same_name(tmp_path):
    @tool(name="read")
    def my_read(path: str) -> str:
        """Read with logging."""
        return f"logged {path}"

    class Override:
        @hookimpl
        def register_tools(self, register):
            register(my_read)

    host = await load(tmp_path, Override())
    registered = host.registry.tools["read"]
    assert registered.plugin == "Override" and registered.shadows is not None
    assert registered.shadows.plugin == "tools"
    assert not [d for d in host.diagnostics if d.level != "info"]
    result = await registered.value.run({"path": "x"}, FakeToolContext(tmp_path))
    assert text(result) == "logged x"


def test_every_tool_is_described_for_the_model():
    for definition in builtin_tools():
        assert definition.label == definition.name
        assert definition.description and definition.prompt_snippet
        assert definition.prompt_guidelines
        assert all(definition.name in guideline for guideline in definition.prompt_guidelines), definition.name
        assert definition.annotations is not None
        assert definition.execution_mode == "parallel"
        assert definition.args_model is not None
        assert set(definition.parameters["properties"]) == set(definition.args_model.model_fields)
    hints = {d.name: d.annotations.read_only_hint for d in builtin_tools() if d.annotations}
    assert hints == {"read": True, "bash": False, "edit": False, "write": False, "grep": True, "find": True, "ls": True}


async def test_invalid_arguments_are_rejected_by_validation(tmp_path):
    read = next(d for d in builtin_tools() if d.name == "read")
    try:
        read.validate_arguments({"offset": 1})
    except Exception as exc:
        assert "path" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("missing path accepted")
    result = await call(read, FakeToolContext(tmp_path), path="missing")
    assert isinstance(result, ToolResult) and result.is_error


async def test_a_context_with_only_cwd_is_enough(tmp_path):
    import types

    ctx = types.SimpleNamespace(cwd=str(tmp_path))
    tools = {d.name: d for d in builtin_tools()}
    assert text(await tools["write"].run({"path": "a.txt", "content": "hi\n"}, ctx)).startswith("Successfully wrote")
    assert text(await tools["bash"].run({"command": "cat a.txt"}, ctx)) == "hi\n"
    assert text(await tools["read"].run({"path": "a.txt"}, ctx)) == "hi\n"
    edited = await tools["edit"].run({"path": "a.txt", "oldText": "hi", "newText": "ho"}, ctx)
    assert not edited.is_error
    assert text(await tools["ls"].run({}, ctx)) == "a.txt"
