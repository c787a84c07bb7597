"""``pi fleet`` without Ray: the command line, the task file's errors, the message when
Ray is missing, and a ``pi -p`` that has pluggable-pi-fleet installed never importing Ray."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_kit import PI, ScriptedModel, fleet_env, make_repo, run_fleet, write_models, write_tasks

from pi_fleet.taskfile import TaskFileError, read_tasks

HIDE_RAY = """
import importlib.abc, sys
class _NoRay(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoRay())
"""


def test_without_ray_pi_fleet_says_to_install_it(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(HIDE_RAY)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "repo": str(tmp_path), "prompt": "hi"}])
    env = fleet_env(tmp_path / "agent", PYTHONPATH=str(tmp_path))
    done = run_fleet("run", str(tasks), "--out", str(tmp_path / "out"), env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "pi fleet: Ray is not installed in this environment: install pluggable-pi-fleet with its dependencies "
        "(pip install pluggable-pi-fleet)"
    ]
    assert not (tmp_path / "out").exists()


def test_help_needs_no_ray(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(HIDE_RAY)
    done = run_fleet("run", "--help", env=fleet_env(tmp_path / "agent", PYTHONPATH=str(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0
    assert "--max-parallel" in done.stdout and "--address" in done.stdout and "--rerun" in done.stdout


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "repo": "r"}'], "tasks.jsonl:1: the field 'prompt' is missing"),
        (['{"id": "a", "repo": "r", "prompt": "p"}', "{oops"], "tasks.jsonl:2: invalid JSON"),
        (['{"id": "a/b", "repo": "r", "prompt": "p"}'], "the id 'a/b' must be letters"),
        (
            ['{"id": "a", "repo": "r", "prompt": "p"}', '{"id": "a", "repo": "s", "prompt": "q"}'],
            "tasks.jsonl:2: the id 'a' is already used on line 1",
        ),
        (['{"id": "a", "repo": "r", "prompt": "p", "modle": "x"}'], "tasks.jsonl:1: unknown field 'modle'"),
        (['{"id": "a", "repo": "r", "prompt": "p", "settings": [1]}'], "the field 'settings' must be an object"),
        (['{"id": "a", "repo": 3, "prompt": "p"}'], "the field 'repo' must be a non-empty string"),
        ([""], "no tasks"),
    ],
)
def test_task_file_errors_are_one_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskFileError, match=None) as caught:
        read_tasks(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_bad_task_file_through_the_command(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "a", "repo": "r"}\n')
    done = run_fleet("run", str(path), "--out", str(tmp_path / "out"), env=fleet_env(tmp_path / "agent"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == f"pi fleet: {path}:1: the field 'prompt' is missing\n"
    missing = run_fleet("run", str(tmp_path / "nope.jsonl"), "--out", "o", env=fleet_env(tmp_path / "a"), cwd=tmp_path)
    assert missing.returncode == 1 and missing.stderr == f"pi fleet: {tmp_path / 'nope.jsonl'}: no such file\n"


def test_an_address_nothing_answers_at_is_one_line(tmp_path: Path) -> None:
    """Ray would retry for a minute, printing its own warnings: pi says it at once."""
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "repo": str(tmp_path), "prompt": "p"}])
    out = tmp_path / "out"
    args = ("run", str(tasks), "--out", str(out), "--address", f"127.0.0.1:{port}")
    done = run_fleet(*args, env=fleet_env(tmp_path / "agent"), cwd=tmp_path, timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"pi fleet: cannot start or join 127.0.0.1:{port}: ConnectionError: "
        f"nothing answers at 127.0.0.1:{port} (Connection refused)\n"
    )
    assert not (out / "report.html").exists()


def test_relative_repositories_are_read_from_the_task_files_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = write_tasks(
        tmp_path / "sub" / "tasks.jsonl",
        [
            {"id": "a", "repo": "../repo", "prompt": "p"},
            {"id": "b", "repo": "https://example.com/o/r.git", "prompt": "p", "ref": "v1"},
            {"id": "c", "repo": "git@example.com:o/r.git", "prompt": "p"},
        ],
    )
    tasks = read_tasks(path)
    assert [t.repo for t in tasks] == [
        str(tmp_path / "repo"),
        "https://example.com/o/r.git",
        "git@example.com:o/r.git",
    ]
    assert tasks[1].ref == "v1"


def test_pi_print_with_the_fleet_plugin_never_imports_ray(tmp_path: Path) -> None:
    """Start-up of a plain ``pi -p`` is unchanged: the plugin's entry point loads (it
    registers ``pi fleet``) and imports neither Ray nor rich nor the driver."""
    server = ScriptedModel().start()
    try:
        model = write_models(tmp_path / "agent", server.url)
        repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
        env = fleet_env(tmp_path / "agent", PI_EXTENSIONS="fleet")
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *PI[1:], "-p", "--model", model, "say hi"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "pi_fleet.plugin" in imported  # the plugin did load
    heavy = sorted(m for m in imported if m == "ray" or m.startswith(("ray.", "pi_fleet.driver", "pi_fleet.worker")))
    assert heavy == []
    listed = subprocess.run(
        [*PI, "extensions", "list", "--json"], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    fleet = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "fleet"]
    assert fleet and fleet[0]["status"] == "loaded" and fleet[0]["distribution"] == "pluggable-pi-fleet", fleet
