"""System prompt sections: order, tools and rules, skills index, patches."""

from __future__ import annotations

from pathlib import Path

from pi_core.resources.diagnostics import ResourceDiagnostic
from pi_core.resources.system_prompt import (
    DEFAULT_PREAMBLE,
    SECTION_ORDER,
    apply_system_prompt_patch,
    build_system_prompt,
    build_system_prompt_sections,
    diff_system_prompt_sections,
    format_skills_for_prompt,
    render_system_prompt,
)
from pi_hookspecs import ContextFile, Skill, SystemPromptOptions

DOCS = Path("/opt/pi/docs")


def skill(name: str, description: str = "Does things.", *, hidden: bool = False) -> Skill:
    return Skill(
        name=name,
        description=description,
        file_path=f"/skills/{name}/SKILL.md",
        base_dir=f"/skills/{name}",
        disable_model_invocation=hidden,
    )


def options(**kwargs: object) -> SystemPromptOptions:
    defaults: dict[str, object] = {
        "selected_tools": ["read", "bash", "edit", "write"],
        "tool_snippets": {
            "read": "Read a file",
            "bash": "Run a command",
            "edit": "Edit a file",
            "write": "Write a file",
        },
        "cwd": "/work/repo",
    }
    defaults.update(kwargs)
    return SystemPromptOptions.model_validate(defaults)


def body(section: str) -> str:
    """The text inside a tagged section."""
    return section.split("\n", 1)[1].rsplit("\n", 1)[0]


def test_fixed_section_order_then_custom_sections() -> None:
    sections = build_system_prompt_sections(
        options(
            append_system_prompt=["Always run the tests."],
            context_files=[ContextFile(path="/work/AGENTS.md", content="Use uv.")],
            skills=[skill("lint")],
            sections={"zeta": "z", "alpha": "a"},
        ),
        docs_dir=DOCS,
    )
    assert list(sections) == [*SECTION_ORDER, "zeta", "alpha"]
    assert sections["preamble"] == DEFAULT_PREAMBLE
    for name in list(sections)[1:]:
        assert sections[name].startswith(f"<{name}>\n") and sections[name].endswith(f"\n</{name}>")
    assert body(sections["addendum"]) == "Always run the tests."
    assert body(sections["cwd"]) == "/work/repo"
    assert str(DOCS) in sections["docs"]
    assert body(sections["zeta"]) == "z"


def test_empty_optional_sections_are_left_out() -> None:
    sections = build_system_prompt_sections(options(append_system_prompt=["  "], sections={"extra": ""}), docs_dir=DOCS)
    assert list(sections) == ["preamble", "tools", "rules", "docs", "cwd"]


def test_custom_prompt_replaces_preamble_tools_rules_and_docs() -> None:
    sections = build_system_prompt_sections(
        options(
            custom_prompt="You are a release bot.",
            append_system_prompt=["extra"],
            context_files=[ContextFile(path="/AGENTS.md", content="x")],
            skills=[skill("lint")],
        ),
        docs_dir=DOCS,
    )
    assert list(sections) == ["preamble", "addendum", "project_context", "skills", "cwd"]
    assert sections["preamble"] == "You are a release bot."


def test_tool_list_shows_declared_tools_with_snippets() -> None:
    sections = build_system_prompt_sections(
        options(
            selected_tools=["read", "bash", "codemode", "custom"],
            hidden_tools=["bash"],
            tool_snippets={"read": "Read a file", "bash": "Run a command", "codemode": "Run a script"},
            tool_guidelines={"bash": ["Prefer bash for git"], "read": ["Read before editing"]},
        ),
        docs_dir=DOCS,
    )
    tools = body(sections["tools"])
    assert tools.startswith("- read: Read a file\n- codemode: Run a script\n\n")
    assert "bash" not in tools and "custom" not in tools
    rules = body(sections["rules"])
    assert "- Read before editing" in rules and "Prefer bash for git" not in rules and "Use bash" not in rules
    none = build_system_prompt_sections(options(selected_tools=[], tool_snippets={}), docs_dir=DOCS)
    assert body(none["tools"]).startswith("(none)")


def test_rules_combine_tool_and_prompt_guidelines_without_duplicates() -> None:
    sections = build_system_prompt_sections(
        options(
            tool_guidelines={"edit": ["Keep edits small", "Keep edits small"], "grep": ["Not selected"]},
            prompt_guidelines=[" Keep edits small ", "Answer in English"],
        ),
        docs_dir=DOCS,
    )
    rules = body(sections["rules"]).split("\n")
    assert rules[0].startswith("- Use bash to list, search and find files")
    assert rules.count("- Keep edits small") == 1 and "- Answer in English" in rules
    assert all("Not selected" not in rule for rule in rules)
    with_grep = build_system_prompt_sections(options(selected_tools=["bash", "grep"]), docs_dir=DOCS)
    assert "Use bash to list" not in with_grep["rules"]


def test_invalid_custom_section_names_are_reported() -> None:
    seen: list[ResourceDiagnostic] = []
    sections = build_system_prompt_sections(
        options(sections={"Bad Name": "x", "preamble": "y", "9lives": "z", "ok_name-2": "fine", "cwd": "/elsewhere"}),
        docs_dir=DOCS,
        diagnostics=seen,
    )
    assert [name for name in sections if name not in SECTION_ORDER] == ["ok_name-2"]
    assert body(sections["cwd"]) == "/elsewhere" and list(sections).index("cwd") == 4
    assert len(seen) == 3 and all("invalid system prompt section name" in d.message for d in seen)
    assert sections["preamble"] == DEFAULT_PREAMBLE


def test_project_context_wraps_each_file_with_its_path() -> None:
    files = [
        ContextFile(path="/home/me/.pi/agent/AGENTS.md", content="global"),
        ContextFile(path='/w/"q"/AGENTS.md', content="local"),
    ]
    text = body(build_system_prompt_sections(options(context_files=files), docs_dir=DOCS)["project_context"])
    assert '<project_instructions path="/home/me/.pi/agent/AGENTS.md">\nglobal\n</project_instructions>' in text
    assert '<project_instructions path="/w/&quot;q&quot;/AGENTS.md">\nlocal\n</project_instructions>' in text
    assert text.index("global") < text.index("local")


def test_cwd_uses_forward_slashes() -> None:
    assert body(build_system_prompt_sections(options(cwd="C:\\work\\repo"), docs_dir=DOCS)["cwd"]) == "C:/work/repo"


# --------------------------------------------------------------------------- skills index


def test_skills_index_is_escaped_and_skips_command_only_skills() -> None:
    text = format_skills_for_prompt([skill("a&b", "Use <this> for \"x\" & 'y'"), skill("secret", hidden=True)], True)
    assert "<name>a&amp;b</name>" in text
    assert "<description>Use &lt;this&gt; for &quot;x&quot; &amp; &apos;y&apos;</description>" in text
    assert "<location>/skills/a&b/SKILL.md</location>" not in text and "/skills/a&amp;b/SKILL.md" in text
    assert "secret" not in text
    assert format_skills_for_prompt([skill("secret", hidden=True)], True) == ""


def test_skills_wording_follows_the_available_reader() -> None:
    assert "with the read tool" in format_skills_for_prompt([skill("a")], True, True)
    bash = format_skills_for_prompt([skill("a")], False, True)
    assert "with bash" in bash and "read tool" not in bash
    neither = format_skills_for_prompt([skill("a")], False, False)
    assert "read tool" not in neither and "bash" not in neither and "load its file before you start" in neither


def test_skills_section_depends_on_the_selected_tools() -> None:
    def skills_section(**kwargs: object) -> str | None:
        return build_system_prompt_sections(options(skills=[skill("a")], **kwargs), docs_dir=DOCS).get("skills")

    assert "read tool" in (skills_section() or "")
    assert "with bash" in (skills_section(selected_tools=["bash"]) or "")
    indirect = skills_section(selected_tools=["read", "codemode"], hidden_tools=["read"]) or ""
    assert "<available_skills>" in indirect and "read tool" not in indirect
    assert skills_section(selected_tools=["edit"]) is None


# --------------------------------------------------------------------------- rendering and patches


def test_render_joins_non_empty_sections_in_order() -> None:
    assert (
        render_system_prompt({"preamble": "P", "tools": "", "blank": " \n", "x": "<x>\n1\n</x>", "gone": None})
        == "P\n\n<x>\n1\n</x>"
    )
    opts = options()
    assert build_system_prompt(opts, docs_dir=DOCS) == render_system_prompt(
        build_system_prompt_sections(opts, docs_dir=DOCS)
    )
    assert build_system_prompt(options(force_system_prompt="forced"), docs_dir=DOCS) == "forced"


def test_diff_patches_only_changed_sections_and_keeps_the_prefix() -> None:
    opts = options(skills=[skill("a")])
    old = build_system_prompt_sections(opts, docs_dir=DOCS)
    assert diff_system_prompt_sections(old, build_system_prompt_sections(opts, docs_dir=DOCS)) == {}

    opts.skills.append(skill("b"))  # a before_agent_start handler changes the options in place
    opts.sections["mode"] = "plan"
    new = build_system_prompt_sections(opts, docs_dir=DOCS)
    patch = diff_system_prompt_sections(old, new)
    assert patch == {"skills": new["skills"], "mode": new["mode"]}
    assert apply_system_prompt_patch(old, patch) == new

    opts.skills.clear()
    del opts.sections["mode"]
    newer = build_system_prompt_sections(opts, docs_dir=DOCS)
    patch = diff_system_prompt_sections(new, newer)
    assert patch == {"skills": None, "mode": None}
    replayed = apply_system_prompt_patch(new, patch)
    assert replayed == newer
    # the untouched prefix is byte-identical, so a provider's prompt cache still hits
    assert render_system_prompt(replayed).startswith(
        render_system_prompt({k: old[k] for k in ("preamble", "tools", "rules", "docs")})
    )


def test_diff_ignores_removed_markers_in_the_old_state() -> None:
    assert diff_system_prompt_sections({"a": "1", "b": None}, {"a": "1"}) == {}
    assert diff_system_prompt_sections({"a": "1"}, {"a": "2", "c": "3"}) == {"a": "2", "c": "3"}
