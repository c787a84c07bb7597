"""pi_core.testing: trusting the project, plugin flags and options, and ctx.ui recorded
with scripted dialog answers — the kit's documented ways, used as a plugin author would."""

from __future__ import annotations

from typing import Any

from pi_core.testing import ECHO, PiHarness, call
from pi_hookspecs import FlagDefinition, hookimpl, tool


class Deployer:
    """Asks where to deploy, confirms, reports with notify/status/widget; reads a flag
    and the effective and per-scope settings."""

    @hookimpl
    def register_flags(self, register: Any) -> None:
        register(FlagDefinition(name="dry-run", description="only say what would happen"))
        register(FlagDefinition(name="target", type="string", default="staging"))

    @hookimpl
    def register_tools(self, register: Any) -> None:
        @tool
        async def deploy(ctx: Any) -> str:
            """Deploy the project."""
            where = await ctx.ui.select("Deploy where?", ["staging", "production"])
            if where is None:
                return f"no target chosen (has_ui={ctx.has_ui})"
            if not await ctx.ui.confirm("Deploy?", f"to {where}"):
                return "cancelled"
            note = await ctx.ui.input("Release note", "what changed")
            ctx.ui.set_status("deploy", f"deployed {where}")
            ctx.ui.set_widget("deploy", [f"target: {where}", f"note: {note}"])
            dry = " (dry run)" if ctx.get_flag("dry-run") else ""
            ctx.ui.notify(f"deployed to {where}{dry}", "info")
            return f"deployed to {where}{dry}: {note}"

        @tool
        def settings_seen(ctx: Any) -> str:
            """Report the settings."""
            key = "deployer"
            return (
                f"effective={ctx.get_settings().get(key)} user={ctx.get_settings('user').get(key)} "
                f"project={ctx.get_settings('project').get(key)} trusted={ctx.is_project_trusted()} "
                f"target={ctx.get_flag('target')}"
            )

        register(deploy)
        register(settings_seen)


def test_dialogs_take_the_scripted_answers_and_every_ui_call_is_recorded(pi: PiHarness) -> None:
    pi.use(Deployer).set_mode("tui").flag("dry-run")
    pi.ui.answer("select", "production").answer("confirm", True).answer("input", lambda c: f"for {c.title}")
    pi.script(call("deploy"), ECHO)
    run = pi.prompt("deploy it")
    assert run.text == "deployed to production (dry run): for Release note"
    assert [c.method for c in pi.ui.calls] == ["select", "confirm", "input", "set_status", "set_widget", "notify"]
    select = pi.ui.of("select")[0]
    assert (select.title, select.args["options"], select.answer) == (
        "Deploy where?",
        ["staging", "production"],
        "production",
    )
    assert pi.ui.of("confirm")[0].args["message"] == "to production"
    assert pi.ui.notifications == [("info", "deployed to production (dry run)")]
    assert pi.ui.status == {"deploy": "deployed production"}
    assert pi.ui.widgets == {"deploy": ["target: production", "note: for Release note"]}
    assert pi.ui.unanswered() == {}


def test_without_answers_dialogs_answer_like_print_mode(pi: PiHarness) -> None:
    pi.use(Deployer)  # mode "sdk": ctx.has_ui is false, dialogs get print mode's defaults
    pi.script(call("deploy"), ECHO)
    assert pi.prompt("deploy it").text == "no target chosen (has_ui=False)"
    assert [(c.method, c.answer) for c in pi.ui.calls] == [("select", None)]


def test_a_confirm_answered_no_is_recorded_with_its_answer(pi: PiHarness) -> None:
    pi.use(Deployer).set_mode("rpc")
    pi.ui.answer("select", "staging").answer("confirm", False)
    pi.script(call("deploy"), ECHO)
    assert pi.prompt("deploy").text == "cancelled"
    assert [(c.method, c.answer) for c in pi.ui.calls] == [("select", "staging"), ("confirm", False)]


def test_a_trusted_project_s_settings_count_an_untrusted_one_s_do_not(pi: PiHarness) -> None:
    pi.use(Deployer).configure(deployer="user").configure_project(deployer="project").trust_project()
    pi.flag("target", "production")
    pi.script(call("settings_seen"), ECHO)
    assert pi.prompt("show").text == ("effective=project user=user project=project trusted=True target=production")


def test_an_untrusted_project_s_settings_are_ignored(pi: PiHarness) -> None:
    pi.use(Deployer).configure(deployer="user").configure_project(deployer="project")
    pi.script(call("settings_seen"), ECHO)
    assert pi.prompt("show").text == "effective=user user=user project=None trusted=False target=staging"


def test_options_of_the_command_line(pi: PiHarness) -> None:
    pi.use(Deployer).set_options(tools=["read", "deploy"])
    run = pi.prompt("hi")
    assert pi.declared_tools(run.requests[0]) == ["read", "deploy"]


def test_setting_up_after_the_first_prompt_is_refused(pi: PiHarness) -> None:
    pi.prompt("hi")
    for late in (
        lambda: pi.trust_project(),
        lambda: pi.flag("x"),
        lambda: pi.set_mode("tui"),
        lambda: pi.configure_project(a=1),
        lambda: pi.set_options(tools=[]),
    ):
        try:
            late()
        except RuntimeError as exc:
            assert "must be called before the first prompt" in str(exc)
        else:
            raise AssertionError("a late setup call was accepted")
