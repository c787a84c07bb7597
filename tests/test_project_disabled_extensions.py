"""A trusted project's ``disabledExtensions`` switches off only the project's own plugins
and never a required one; every name it cannot apply gets one warning, never silence."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_host, make_distribution, write

PLUGIN = "from pi_hookspecs import hookimpl\n\n@hookimpl\ndef agent_start():\n    pass\n"


def setup(site: Path, agent_dir: Path, project: Path, *, disabled: list[str], required: tuple[str, ...] = ()) -> None:
    make_distribution(
        site,
        dist="pi-test-ours",
        version="1.0",
        module="pi_test_ours",
        code=PLUGIN,
        entry_points={"ours": "pi_test_ours"},
    )
    write(agent_dir / "extensions" / "mine.py", PLUGIN)
    write(project / ".pi" / "extensions" / "theirs.py", PLUGIN)
    write(project / ".pi" / "settings.json", json.dumps({"disabledExtensions": disabled}))
    if required:
        write(agent_dir / "settings.json", json.dumps({"requiredExtensions": list(required)}))


async def test_the_project_disables_its_own_plugins_and_is_told_about_the_others(
    site_dir: Path, agent_dir: Path, project: Path
) -> None:
    setup(site_dir, agent_dir, project, disabled=["ours", "mine", "theirs", "nowhere"])
    host = await load_host(cwd=str(project), entry_points=["ours"], project_trusted=True)
    assert {r.name: r.status for r in host.records if r.name in ("ours", "mine", "theirs")} == {
        "ours": "loaded",
        "mine": "loaded",
        "theirs": "disabled",
    }
    warnings = [d for d in host.diagnostics if "disabledExtensions" in d.message]
    settings = str(project / ".pi" / "settings.json")
    assert [(d.level, d.plugin, d.path, d.message) for d in warnings] == [
        (
            "warning",
            "ours",
            settings,
            "disabledExtensions of the project ignored for 'ours': a project switches off "
            "only its own plugins, and 'ours' is installed",
        ),
        (
            "warning",
            "mine",
            settings,
            "disabledExtensions of the project ignored for 'mine': a project switches off "
            "only its own plugins, and 'mine' is a user extension",
        ),
    ]
    assert "\n" not in warnings[0].format()


async def test_a_required_project_plugin_stays_and_the_warning_says_why(
    site_dir: Path, agent_dir: Path, project: Path
) -> None:
    setup(site_dir, agent_dir, project, disabled=["theirs", "ours"], required=["theirs", "ours"])
    host = await load_host(cwd=str(project), entry_points=["ours"], project_trusted=True)
    assert {r.name: r.status for r in host.records if r.name in ("ours", "theirs")} == {
        "ours": "loaded",
        "theirs": "loaded",
    }
    messages = sorted(d.message for d in host.diagnostics if "disabledExtensions" in d.message)
    assert messages == [
        "disabledExtensions of the project ignored for 'ours': the user settings require it (requiredExtensions)",
        "disabledExtensions of the project ignored for 'theirs': the user settings require it (requiredExtensions)",
    ]


async def test_nothing_is_said_for_an_untrusted_project_or_the_user_s_own_list(
    site_dir: Path, agent_dir: Path, project: Path
) -> None:
    setup(site_dir, agent_dir, project, disabled=["ours"])
    host = await load_host(cwd=str(project), entry_points=["ours"], project_trusted=False)
    assert not [d for d in host.diagnostics if "disabledExtensions" in d.message]
    write(agent_dir / "settings.json", json.dumps({"disabledExtensions": ["ours"]}))
    host = await load_host(cwd=str(project), entry_points=["ours"], project_trusted=True)
    assert next(r for r in host.records if r.name == "ours").status == "disabled"
    assert not [d for d in host.diagnostics if "disabledExtensions" in d.message]
