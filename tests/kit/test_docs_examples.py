"""Every code example in docs/ runs (see doc_blocks.py for what each kind of block gets).

One test per doc file and kind of block, so a failure names the file; the message names
the block's line. Docs that other people are still writing are covered the moment they
exist: the tests are generated from whatever docs/*.md holds.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import os
import re
import runpy
import subprocess
import sys
import tomllib
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from doc_blocks import Block, blocks, program_name, quote, shell_commands
from kit_support import REPO

DOCS = REPO / "docs"
BIN = Path(sys.executable).parent
DOC_FILES = [*sorted(DOCS.glob("*.md")), REPO / "CONTRIBUTING.md"]
ALL_BLOCKS = {path: blocks(path) for path in DOC_FILES}


# (kind, page) -> why its examples cannot run yet: an expected failure with that reason
# (strict: once the page is fixed, its entry must go). Empty: every page's examples run.
NOT_RUNNABLE_YET: dict[tuple[str, str], str] = {}


def files_with(*kinds: str, label: str | None = None) -> list[Any]:
    """One parameter per doc file holding blocks of ``kinds`` (expected to fail when it is
    in NOT_RUNNABLE_YET under ``label``, by default the kind)."""
    label = label or kinds[0]
    return [
        pytest.param(
            path,
            id=path.name,
            marks=[pytest.mark.xfail(strict=True, reason=NOT_RUNNABLE_YET[label, path.name])]
            if (label, path.name) in NOT_RUNNABLE_YET
            else [],
        )
        for path, found in ALL_BLOCKS.items()
        if any(b.kind in kinds for b in found)
    ]


def of_kind(path: Path, *kinds: str) -> list[Block]:
    return [b for b in ALL_BLOCKS[path] if b.kind in kinds]


def test_every_block_has_a_known_language() -> None:
    unknown = [f"{b.where} ```{b.lang}" for found in ALL_BLOCKS.values() for b in found if b.kind is None]
    assert not unknown, "code blocks in a language this test does not check (add a check to doc_blocks.KINDS):\n" + (
        "\n".join(unknown)
    )


def test_the_index_links_every_doc() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))
    missing = sorted(p.name for p in DOC_FILES if p.parent == DOCS and p.name != "README.md" and p.name not in linked)
    assert not missing, f"docs/README.md does not link {missing}"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in DOC_FILES])
def test_relative_links_resolve(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    broken = [
        target
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
        if "://" not in target and not target.startswith("mailto:") and not (path.parent / target).exists()
    ]
    assert not broken, f"{path.name}: broken links {broken}"


# --------------------------------------------------------------------------- python


@pytest.fixture
def doc_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch working directory, no provider keys (nothing may reach a real provider),
    ``pi`` on PATH. The reader of the docs has a model configured; here the settings
    name the offline demo (without a model, a run refuses to start)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name in ("PI_EXTENSIONS", "PI_EXTENSIONS_STRICT", "PI_TRACE_HOOKS"):
            monkeypatch.delenv(name)
    settings = Path(os.environ["PI_CODING_AGENT_DIR"]) / "settings.json"
    settings.write_text(json.dumps({"defaultProvider": "faux", "defaultModel": "offline-demo"}))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return work


def _compile(block: Block) -> Any:
    source = "\n" * (block.line) + block.code  # line numbers in tracebacks match the doc
    return compile(source, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@contextlib.contextmanager
def _harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[Any]:
    from pi_core.testing import PiHarness

    agent, project = tmp_path / name / "agent", tmp_path / name / "project"
    agent.mkdir(parents=True)
    project.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("PI_CODING_AGENT_DIR", str(agent))
        harness = PiHarness(agent, project)
        try:
            yield harness
        finally:
            harness.close()


def _run_doc_tests(
    block: Block, namespace: dict[str, Any], before: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Call the ``test_*`` functions ``block`` defined, with the fixtures they name."""
    ran = []
    for name, function in list(namespace.items()):
        if name in before or not name.startswith("test_") or not callable(function):
            continue
        parameters = list(inspect.signature(function).parameters)
        unknown = set(parameters) - {"pi", "tmp_path"}
        assert not unknown, f"{block.where}: {name} asks for fixtures the docs test cannot give: {unknown}"
        scratch = tmp_path / f"{name}-tmp"
        scratch.mkdir()
        with _harness(tmp_path, monkeypatch, name) as pi:
            kwargs = {"pi": pi, "tmp_path": scratch}
            function(**{p: kwargs[p] for p in parameters})
        ran.append(name)
    return ran


@pytest.mark.parametrize("path", files_with("python"))
def test_python_examples(path: Path, doc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the page's examples run as one module would (dataclasses, pickling and the like look
    # the module of a class up in sys.modules)
    module = types.ModuleType(f"docs_{path.stem.replace('-', '_')}")
    namespace: dict[str, Any] = module.__dict__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    loop = asyncio.new_event_loop()
    try:
        for block in of_kind(path, "python"):
            before = set(namespace)
            try:
                result = eval(_compile(block), namespace)
                if inspect.iscoroutine(result):
                    loop.run_until_complete(result)
                _run_doc_tests(block, namespace, before, tmp_path, monkeypatch)
            except Exception as exc:
                raise AssertionError(f"{block.where}: the example failed: {type(exc).__name__}: {exc}") from exc
    finally:
        loop.close()


PRIVATE_ATTRIBUTE = re.compile(r"(?<![\w.])(?!os\._exit\b|self\.|cls\.)[A-Za-z_]\w*(?:\.\w+)*\._[a-z]\w*")


def test_python_examples_use_only_public_attributes() -> None:
    """What readers copy must keep working: no ``obj._private`` of pi in the docs' code
    (a plugin class's own ``self._state`` is its business)."""
    found = [
        f"{block.path.name}:{block.line}: {match.group()}"
        for path in DOC_FILES
        for block in of_kind(path, "python", "codemode")
        for match in PRIVATE_ATTRIBUTE.finditer(block.code)
    ]
    assert not found, "docs examples use private attributes:\n" + "\n".join(found)


def test_codemode_scripts_compile() -> None:
    for block in (b for path in DOC_FILES for b in of_kind(path, "codemode")):
        try:
            _compile(block)
        except SyntaxError as exc:
            raise AssertionError(f"{block.where}: the codemode script is not Python: {exc}") from exc


# --------------------------------------------------------------------------- shell


def _click_parse(app: Any, args: list[str]) -> None:
    """Parse ``args`` with a typer app's click command, following subcommands."""
    import typer.main

    command = typer.main.get_command(app)
    ctx = command.make_context("pi", list(args))
    while hasattr(command, "resolve_command") and (rest := [*ctx._protected_args, *ctx.args]):
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)


def check_pi_arguments(args: list[str]) -> str:
    """Parse ``pi ARGS`` the way ``pi_core.cli.main`` dispatches it; return what it is."""
    from pi_core.cli import PACKAGE_COMMANDS, SUBCOMMANDS, _could_be_plugin_command

    if args in (["--version"], ["-v"]):
        return "version"
    if args[:1] in (["help"], ["completion"]):
        return args[0]
    if args and args[0] in PACKAGE_COMMANDS:
        from pi_core.cli.packages import packages_app

        _click_parse(packages_app, ["remove" if args[0] == "uninstall" else args[0], *args[1:]])
        return "packages"
    if args and args[0] in SUBCOMMANDS:
        from pi_core.cli.app import app

        _click_parse(app, args)
        return "subcommand"
    if args and _could_be_plugin_command(args[0]):
        from pi_core.cli.plugin_commands import fast_cli_command, load_cli_commands

        if fast_cli_command(args[0]) is not None or args[0] in load_cli_commands():
            return "plugin command"
    from pi_core.cli.main import parse_args

    parse_args(args)  # argparse, with the flags plugins register (as `pi` itself parses)
    return "agent"


def cheap_offline_run(kind: str, args: list[str]) -> bool:
    """Whether running the command is quick and needs no network nor key."""
    if kind in ("version", "help", "completion") or args in (["--help"], ["-h"]):
        return True
    if kind == "subcommand" and args[:2] != ["sessions", "--all"]:
        return True
    if kind == "packages":
        return args[:1] == ["list"]
    if kind == "agent":
        model = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"), "")
        batch = "-p" in args or "--print" in args or any(a == "--mode" for a in args)
        return model.startswith("faux/") and batch and "rpc" not in args
    return False


def run_pi(program: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    executable = REPO / program if "/" in program else BIN / "pi"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("PI_EXT")}
    return subprocess.run([str(executable), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


TASKS = runpy.run_path(str(REPO / "tasks.py"))["TASKS"]  # importing tasks.py runs nothing


def check_other_program(argv: list[str], block: Block) -> None:
    """Programs other than pi that docs may show, each with what is checked."""
    name = program_name(argv)
    if name in ("python3", "python") and argv[1:2] == ["tasks.py"]:
        assert argv[2:3] and argv[2] in TASKS, f"{block.where}: unknown task in {quote(argv)}"
    elif name in ("python3", "python") and argv[1:2] and argv[1].startswith("tools/"):
        assert (REPO / argv[1]).is_file(), f"{block.where}: no such maintainer script: {quote(argv)}"
    elif name == "export":
        assert all(re.match(r"^[A-Za-z_]\w*=", a) for a in argv[1:]), f"{block.where}: {quote(argv)}"
    elif name == "cookiecutter":
        template = [a for a in argv[1:] if not a.startswith("-") and "=" not in a]  # KEY=VALUE: the answers
        assert template and ((REPO / template[0]).is_dir() or template[0].startswith(("gh:", "https:"))), (
            f"{block.where}: {quote(argv)}"
        )
    elif name in ("python3", "python") and argv[1:3] == ["-m", "venv"]:
        pass
    elif name in ("source", ".") and argv[1:] == [".venv/bin/activate"]:
        pass  # the clone's development environment (getting-started.md says when)
    elif name in ("eval", "complete"):
        pass  # loading `pi completion SHELL`'s output
    elif name in ("python3", "python") and argv[1:] in (["-"], ["-m", "build"]):
        pass  # a script on stdin (its here-document is the reader's to read); building a wheel
    elif name in ("cat", "grep"):
        pass
    elif name in ("cd", "git", "uv", "uvx", "pip", "pytest", "pipx"):
        pass  # not pi's: their syntax is theirs; the lines that run pi are what this test checks
    elif name == "python" and argv[1:3] == ["-m", "pytest"]:
        pass
    else:
        raise AssertionError(f"{block.where}: a command this test does not know how to check: {quote(argv)}")


@pytest.mark.parametrize("path", files_with("shell"))
def test_shell_examples(path: Path, doc_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (doc_env / "examples").symlink_to(REPO / "examples")  # commands may name the repository's examples
    for block in of_kind(path, "shell"):
        for line, argv in shell_commands(block.code):
            if program_name(argv) != "pi":
                check_other_program(argv, block)
                continue
            stderr = io.StringIO()
            with monkeypatch.context() as patch:
                patch.chdir(REPO)  # relative -e paths in docs start at the repository
                try:
                    with contextlib.redirect_stderr(stderr):
                        kind = check_pi_arguments(argv[1:])
                except SystemExit as exc:
                    raise AssertionError(
                        f"{block.where}: `{line}` does not parse: {stderr.getvalue().strip()}"
                    ) from exc
                except Exception as exc:
                    raise AssertionError(f"{block.where}: `{line}`: {type(exc).__name__}: {exc}") from exc
            if cheap_offline_run(kind, argv[1:]) and RUNNABLE not in block.attributes:  # those run below
                out = run_pi(argv[0], argv[1:], doc_env)
                assert out.returncode == 0, f"{block.where}: `{line}` exited {out.returncode}:\n{out.stderr}"


# --------------------------------------------------------------------------- runnable

RUNNABLE = "runnable"
"""The fence attribute (```` ```sh runnable ````) of a shell block that runs as written."""
MUST_HAVE_RUNNABLE = ("getting-started.md", "plugins.md")


def runnable_blocks(path: Path) -> list[Block]:
    return [b for b in ALL_BLOCKS[path] if b.kind == "shell" and RUNNABLE in b.attributes]


def test_the_first_pages_a_user_reads_have_runnable_blocks() -> None:
    missing = [name for name in MUST_HAVE_RUNNABLE if not runnable_blocks(DOCS / name)]
    assert not missing, f"no ```sh {RUNNABLE} block in {missing}"


def checkout_as_users_have_it(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder that looks like this clone after the README's set-up (every top-level
    entry linked, ``.venv`` included; what a block creates stays in the folder), a home of
    its own, no provider key, and a PATH without ``.venv/bin``: a command that needs the
    environment must say so (``.venv/bin/pi``, ``source .venv/bin/activate``)."""
    work = tmp_path / "clone"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in (".git", ".demo", "dist"):
            (work / entry.name).symlink_to(entry)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith(("PI_", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"))
    }
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != BIN.resolve()]
    env.update(HOME=str(home), PATH=os.pathsep.join(path), CI="true")
    return work, env


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in DOC_FILES if runnable_blocks(p)])
def test_runnable_blocks_run_as_written(path: Path, tmp_path: Path) -> None:
    """Each ``runnable`` block of a page, in order, in one clone-like folder: bash runs it
    as a reader would paste it, and it must succeed."""
    work, env = checkout_as_users_have_it(tmp_path)
    for block in runnable_blocks(path):
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.code],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (
            f"{block.where}: the block exited {done.returncode}:\n{block.code}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


# --------------------------------------------------------------------------- data


def _strip_json_comments(text: str) -> str:
    out, in_string, i = [], False, 0
    while i < len(text):
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[i + 1])
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _json_values(text: str) -> list[Any]:
    decoder, values, i = json.JSONDecoder(), [], 0
    while (i := len(text) - len(text[i:].lstrip())) < len(text):
        value, i = decoder.raw_decode(text, i)
        values.append(value)
    return values


def _markdown_front_matter(code: str) -> None:
    if code.startswith("---\n"):
        yaml.safe_load(code[4 : code.index("\n---", 4)])


PARSERS: dict[str, Callable[[str], Any]] = {
    "json": json.loads,
    "jsonl": lambda code: [json.loads(line) for line in code.splitlines() if line.strip()],
    "jsonc": lambda code: _json_values(_strip_json_comments(code)),
    "toml": tomllib.loads,
    "yaml": yaml.safe_load,
    "markdown": _markdown_front_matter,
}


@pytest.mark.parametrize("path", files_with(*PARSERS, label="data"))
def test_data_examples_parse(path: Path) -> None:
    for block in of_kind(path, *PARSERS):
        try:
            PARSERS[block.kind or ""](block.code)
        except Exception as exc:
            raise AssertionError(f"{block.where}: the {block.lang} example does not parse: {exc}") from exc
