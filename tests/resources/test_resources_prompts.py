"""Prompt templates: argument parsing, substitution, discovery and expansion."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pi_core.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
    load_prompt_template,
    load_prompt_templates,
    parse_command_args,
    substitute_args,
)
from pi_core.resources.settings import load_settings


def write(path: Path, text: str) -> Path:
    """Create ``path`` (and its parents) with ``text``, dedented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("  concurrency  ", ["concurrency"]),
        ('"API compatibility"', ["API compatibility"]),
        ("a  b\tc\nd", ["a", "b", "c", "d"]),
        ("doesn't stop", ["doesn't", "stop"]),
        ('"abc def', ['"abc', "def"]),
        ("'unclosed", ["'unclosed"]),
        (r'"the \"fast\" path"', ['the "fast" path']),
        (r"'it\'s' ok", ["it's", "ok"]),
        (r'"C:\temp\new"', [r"C:\temp\new"]),
        (r"plain\ text", ["plain\\", "text"]),
        ("'single quoted' \"double quoted\"", ["single quoted", "double quoted"]),
        ('"" x', ["", "x"]),
        ('a"b c"', ['a"b', 'c"']),
        ('"a b"c d', ["a bc", "d"]),
        ("'say \"hi\"'", ['say "hi"']),
    ],
)
def test_parse_command_args(text: str, expected: list[str]) -> None:
    assert parse_command_args(text) == expected


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        ("$1 $2 $3", ["a", "b"], "a b "),
        ("all: $@ / $ARGUMENTS", ["x", "y z"], "all: x y z / x y z"),
        (
            "Focus on ${1:-correctness, security, and error handling}.",
            [],
            "Focus on correctness, security, and error handling.",
        ),
        ("Focus on ${1:-correctness}.", ["concurrency"], "Focus on concurrency."),
        ("${2:-none}", ["a", ""], "none"),
        ("${@:-everything}", [], "everything"),
        ("${@:-everything}", ["a", "b"], "a b"),
        ("${@:2}", ["a", "b", "c", "d"], "b c d"),
        ("${@:2:2}", ["a", "b", "c", "d"], "b c"),
        ("${@:0}", ["a", "b"], "a b"),
        ("${@:5}", ["a"], ""),
        ("$0|$10", [str(i) for i in range(1, 11)], "|10"),
        ("cost: $5 or $", [], "cost:  or $"),
        ("$HOME ${x} ${@} $ {1}", ["a"], "$HOME ${x} ${@} $ {1}"),
        ("$1 and $2", ["$2", "two"], "$2 and two"),
        ("$@", ["$1", "${@:1}"], "$1 ${@:1}"),
        ("${1:-$2}", [], "$2"),
    ],
)
def test_substitute_args(template: str, args: list[str], expected: str) -> None:
    assert substitute_args(template, args) == expected


def test_expand_prompt_template() -> None:
    review = PromptTemplate(
        name="review", description="", content="Review. Focus on ${1:-everything}.", file_path="/r.md"
    )
    assert expand_prompt_template('/review "API compatibility"', [review]) == "Review. Focus on API compatibility."
    assert expand_prompt_template("/review", [review]) == "Review. Focus on everything."
    assert expand_prompt_template("/reviews x", [review]) == "/reviews x"
    assert expand_prompt_template("review x", [review]) == "review x"


# --------------------------------------------------------------------------- files


def test_template_metadata(tmp_path: Path) -> None:
    path = write(
        tmp_path / "review.md",
        """
        ---
        description: Review staged git changes
        argument-hint: "[focus]"
        ---
        Review the staged changes. Focus on $1.
        """,
    )
    template, diagnostics = load_prompt_template(path, "user")
    assert diagnostics == []
    assert template == PromptTemplate(
        name="review",
        description="Review staged git changes",
        content="Review the staged changes. Focus on $1.",
        file_path=str(path),
        source="user",
        argument_hint="[focus]",
    )


def test_description_falls_back_to_the_first_line(tmp_path: Path) -> None:
    short = write(tmp_path / "short.md", "\n\n  Fix the build  \nmore\n")
    assert load_prompt_template(short)[0].description == "Fix the build"  # type: ignore[union-attr]
    long = write(tmp_path / "long.md", "x" * 61 + "\n")
    assert load_prompt_template(long)[0].description == "x" * 60 + "..."  # type: ignore[union-attr]


def test_broken_frontmatter_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.md", "---\ndescription: [oops\n---\nbody\n")
    template, diagnostics = load_prompt_template(path)
    assert template is None and str(diagnostics[0]).startswith(str(path)) and "invalid YAML" in str(diagnostics[0])


def test_discovery_precedence_and_trust(project: Path, agent_dir: Path, tmp_path: Path) -> None:
    write(agent_dir / "prompts" / "fix.md", "user fix")
    write(agent_dir / "prompts" / "nested" / "deep.md", "not loaded: conventional dirs are flat")
    write(agent_dir / "prompts" / "notes.txt", "not markdown")
    write(project / ".pi" / "prompts" / "fix.md", "project fix")
    write(project / ".pi" / "prompts" / "ship.md", "project ship")
    write(project / "team" / "team.md", "team")
    write(tmp_path / "cli" / "fix.md", "cli fix")
    write(tmp_path / "cli" / "cli.md", "cli only")
    (project / ".pi" / "settings.json").write_text(json.dumps({"prompts": ["../team"]}))

    def load(trusted: bool, **kwargs: object) -> list[tuple[str, str, str]]:
        settings = load_settings(project, agent_dir=agent_dir, project_trusted=trusted)
        result = load_prompt_templates(
            project, agent_dir=agent_dir, settings=settings, cli_paths=[str(tmp_path / "cli")], **kwargs
        )  # type: ignore[arg-type]
        return [(t.name, t.content, t.source) for t in result.templates]

    assert load(True) == [
        ("team", "team", "project"),
        ("fix", "project fix", "project"),
        ("ship", "project ship", "project"),
        ("cli", "cli only", "cli"),
    ]
    assert load(False) == [("fix", "user fix", "user"), ("cli", "cli only", "cli")]
    assert load(True, include_defaults=False) == [("cli", "cli only", "cli"), ("fix", "cli fix", "cli")]


def test_collisions_are_reported(project: Path, agent_dir: Path, tmp_path: Path) -> None:
    write(agent_dir / "prompts" / "fix.md", "user fix")
    other = write(tmp_path / "x" / "fix.md", "other")
    result = load_prompt_templates(
        project, agent_dir=agent_dir, extension_paths=[str(other), str(tmp_path / "missing.md")]
    )
    assert [t.content for t in result.templates] == ["user fix"]
    missing, collision = result.diagnostics  # path problems are found before any file is read
    assert collision.kind == "collision" and collision.path == str(other)
    assert collision.winner_path == str(agent_dir / "prompts" / "fix.md")
    assert str(missing) == f"{tmp_path / 'missing.md'}: prompt template path does not exist"
