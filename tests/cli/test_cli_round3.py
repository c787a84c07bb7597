"""What a pi 1.6.0 user could tell apart, round 3 (issue 32, items 10 and 11), with the
real ``pi``: the theme and terminal-mode options (``--theme PATH``, ``--use-theme``,
``--no-themes``, ``--tui-mode``), ``pi update``'s targets and options, ``pi config
--list``, and warnings said once (keybindings.json) or not at all
(``enableInstallTelemetry: true``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, run_pi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interactive_pty import PI, TIMEOUT, Pi, clean_env, loose, pty_or_skip

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Pi]]:
    started: list[Pi] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Pi:
        pi = Pi(*args, cwd=project, env=env)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def quit_pi(pi: Pi) -> int:
    pi.line("/quit")
    return pi.wait_exit()


def tomato_theme() -> dict[str, object]:
    """Every token of the dark theme, the accent tomato red (24-bit 255;99;71)."""
    dark = json.loads((REPO / "pi_core/cli/tui/themes/dark.json").read_text())
    dark["name"] = "tomato"
    dark["vars"]["tomato"] = "#ff6347"
    dark["colors"]["accent"] = "tomato"
    return dark


def colour_env() -> dict[str, str]:
    env = clean_env(COLORTERM="truecolor", TERM="xterm-256color")
    env.pop("NO_COLOR")
    return env


# --------------------------------------------------------------------------- the options


def test_help_lists_the_theme_and_tui_mode_options(project: Path) -> None:
    out = run_pi("--help", cwd=project)
    assert out.returncode == 0
    for flag in ("--theme PATH", "--use-theme NAME[/NAME]", "--no-themes", "--tui-mode {regular,fullscreen}"):
        assert flag in out.stdout, flag


def test_a_tui_mode_that_does_not_exist_is_a_usage_error(project: Path) -> None:
    out = run_pi("--tui-mode", "bogus", "-p", "hi", cwd=project)
    assert out.returncode == 2 and out.stdout == ""
    assert "--tui-mode: invalid choice: 'bogus' (choose from 'regular', 'fullscreen')" in out.stderr


def test_print_mode_takes_the_interactive_options_without_a_word(project: Path) -> None:
    out = run_pi(
        "--tui-mode", "fullscreen", "--use-theme", "light", "--no-themes", "--theme", "nowhere.json",
        "--model", "faux/offline-demo", "-p", "hi", cwd=project,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "theme" not in out.stderr.lower() and "fullscreen" not in out.stderr.lower()


ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"


def test_tui_mode_fullscreen_runs_on_the_alternate_screen(spawn: Callable[..., Pi]) -> None:
    pi = spawn("--tui-mode", "fullscreen")
    pi.expect("› ")
    assert quit_pi(pi) == 0
    raw = "".join(pi.log)
    assert ALT_SCREEN_ON in raw and raw.rindex(ALT_SCREEN_OFF) > raw.index(ALT_SCREEN_ON)
    assert "Fullscreen" not in pi.screen_text()


def test_the_tui_mode_setting_and_the_option_over_it(spawn: Callable[..., Pi]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"tuiMode": "fullscreen"}))
    pi = spawn()
    pi.expect("› ")
    assert quit_pi(pi) == 0
    assert ALT_SCREEN_ON in "".join(pi.log)
    pi = spawn("--tui-mode", "regular")  # the option wins: regular is what runs, nothing to say
    pi.expect("› ")
    assert quit_pi(pi) == 0
    screen = pi.screen_text()
    assert ALT_SCREEN_ON not in "".join(pi.log)
    assert "Fullscreen" not in screen and "is not read by this pi's terminal" not in screen


def test_theme_loads_a_file_and_use_theme_selects_it(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    theme = tmp_path / "elsewhere" / "tomato.json"
    theme.parent.mkdir()
    theme.write_text(json.dumps(tomato_theme()))
    pi = spawn("--theme", str(theme), "--theme", str(tmp_path / "missing"), "--use-theme", "tomato", env=colour_env())
    pi.expect(f"Theme path does not exist: {tmp_path / 'missing'}")
    pi.expect("› ")
    pi.line("/model")  # the picker's cursor is drawn in the accent colour
    pi.expect("Which model?")
    assert "38;2;255;99;71" in "".join(pi.log)
    pi.send("\x1b")
    pi.expect("Which model? · (cancelled)")
    assert quit_pi(pi) == 0
    assert not (agent_dir() / "settings.json").exists() or "tomato" not in (agent_dir() / "settings.json").read_text()


def test_theme_takes_a_folder(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    folder = tmp_path / "themes"
    folder.mkdir()
    (folder / "tomato.json").write_text(json.dumps(tomato_theme()))
    pi = spawn("--theme", str(folder), "--use-theme", "tomato", env=colour_env())
    pi.expect("› ")
    pi.line("/model")
    pi.expect("Which model?")
    assert "38;2;255;99;71" in "".join(pi.log)
    pi.send("\x1b")
    pi.expect("Which model? · (cancelled)")
    assert quit_pi(pi) == 0


def test_no_themes_leaves_out_discovered_themes_but_not_theme_paths(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    (themes / "tomato.json").write_text(json.dumps(tomato_theme()))
    pi = spawn("--no-themes", "--use-theme", "tomato")
    pi.expect("Theme 'tomato' not found")
    pi.expect("› ")
    assert quit_pi(pi) == 0
    pi = spawn("--no-themes", "--theme", str(themes / "tomato.json"), "--use-theme", "tomato")
    pi.expect("› ")
    assert quit_pi(pi) == 0
    assert "not found" not in pi.screen_text()


def test_theme_with_a_theme_name_still_selects_it_and_says_how(spawn: Callable[..., Pi]) -> None:
    pi = spawn("--theme", "light")
    pi.expect("--theme takes a theme file or folder (as in pi 1.6.0): selecting the theme 'light' for this run")
    pi.expect("› ")
    assert quit_pi(pi) == 0


def test_use_theme_takes_a_light_dark_pair(spawn: Callable[..., Pi]) -> None:
    pi = spawn("--use-theme", "light/dark")
    pi.expect("› ")
    assert quit_pi(pi) == 0
    assert "not found" not in pi.screen_text()


# --------------------------------------------------------------------------- warnings


def test_a_keybindings_problem_is_said_once_per_change_of_the_file(spawn: Callable[..., Pi]) -> None:
    keys = agent_dir() / "keybindings.json"
    keys.write_text(json.dumps({"app.bogus": "ctrl+k"}))
    pi = spawn()
    pi.expect("unknown action 'app.bogus'")
    pi.expect("› ")
    pi.line("/new")
    pi.expect("New session ")
    pi.line("/reload")
    pi.expect("Reloaded in ")
    pi.line("/clone")
    pi.expect("Cloned into new session ")
    pi.line("/reload")
    pi.expect("Reloaded in ")
    assert pi.screen_text().count("unknown action 'app.bogus'") == 1
    keys.write_text(json.dumps({"app.bogus": "ctrl+k", "app.other": "ctrl+j"}))
    pi.line("/reload")
    pi.expect("unknown action 'app.other'")  # changed: said again, once
    pi.expect("Reloaded in ")
    assert quit_pi(pi) == 0
    assert pi.screen_text().count("unknown action 'app.other'") == 1


def test_install_telemetry_at_its_pi_1_6_0_default_is_not_warned_about(project: Path) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"enableInstallTelemetry": True}))
    out = run_pi("--model", "faux/offline-demo", "-p", "hi", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "enableInstallTelemetry" not in out.stderr


# --------------------------------------------------------------------------- pi update


def test_update_help_names_pi_1_6_0_s_options(project: Path) -> None:
    out = run_pi("update", "--help", cwd=project)
    assert out.returncode == 0
    for option in ("--self", "--extensions", "--models", "--all", "--extension SOURCE", "--force", "--local"):
        assert option in out.stdout, option


def test_update_models_says_the_catalogue_comes_with_pi(project: Path) -> None:
    # no plugin with a dynamic catalogue loads here (tests/cli/test_update_models.py has them)
    out = run_pi("update", "--models", cwd=project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("No plugin supplies a dynamic model catalogue") and out.stdout.count("\n") == 1


def test_update_extensions_with_nothing_recorded(project: Path) -> None:
    out = run_pi("update", "--extensions", cwd=project)
    assert out.returncode == 0
    assert out.stdout == f"Nothing to update: no packages recorded in {agent_dir() / 'settings.json'}\n"


@pytest.mark.parametrize("args", [["--self"], ["self"], ["pi"], ["--force"], ["--all"]])
def test_update_self_of_a_pi_run_from_its_source_folder_says_why_not(project: Path, args: list[str]) -> None:
    """This checkout's pi is installed from its folder: nothing to download, one line."""
    out = run_pi("update", *args, cwd=project)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "this pi was installed from the source folder" in out.stderr
    if args == ["--all"]:  # the packages are still updated (none recorded here)
        assert "Nothing to update: no packages recorded" in out.stdout


def test_update_skips_packages_offline(project: Path, tmp_path: Path) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"packages": [str(tmp_path / "pkg")]}))
    out = run_pi("update", "--extension", str(tmp_path / "pkg"), cwd=project, env={"PI_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Skipped package updates (offline mode: PI_OFFLINE=1)\n"


def test_update_of_something_not_recorded_fails(project: Path) -> None:
    out = run_pi("update", "--extension", "pi-nothing", cwd=project)
    assert out.returncode == 1 and "not recorded in" in out.stderr and "pi-nothing" in out.stderr


def test_update_rejects_an_unknown_option(project: Path) -> None:
    out = run_pi("update", "--bogus", cwd=project)
    assert out.returncode == 2 and "No such option: --bogus" in out.stderr


# --------------------------------------------------------------------------- pi config


def test_config_list_prints_the_list_in_a_terminal_too(project: Path) -> None:
    pexpect = pty_or_skip()
    child = pexpect.spawn(
        PI[0],
        [*PI[1:], "config", "--list"],
        cwd=str(project),
        env=clean_env(PI_EXTENSIONS=""),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(60, 200),
    )
    child.expect(loose(f"Settings: {agent_dir() / 'settings.json'} (user)"))
    child.expect(loose("Run `pi config` in a terminal to change these."))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Space toggle" not in (child.before or "")
