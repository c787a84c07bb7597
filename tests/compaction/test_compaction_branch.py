"""Branch summaries: collecting the abandoned entries across a tree and summarising them."""

from __future__ import annotations

import pytest
from compaction_helpers import MODEL, Session, reply, scripted, text_of_size

from pi_core.compaction import (
    CompactionError,
    collect_entries_for_branch_summary,
    generate_branch_summary,
    prepare_branch_entries,
    prepare_tree,
)
from pi_core.compaction.prompts import BRANCH_SUMMARY_PREAMBLE
from pi_hookspecs import BranchSummaryMessage, CompactionSummaryMessage, ToolResultMessage, UserMessage


def _tree() -> tuple[Session, dict[str, str]]:
    """A - B - C - D (old leaf) and A - E - F (target)."""
    s = Session()
    ids = {"A": s.user("A").id, "B": s.assistant("B").id, "C": s.user("C").id, "D": s.assistant("D").id}
    ids["E"] = s.user("E", parent=ids["A"]).id
    ids["F"] = s.assistant("F").id
    return s, ids


def _names(entries: list[object]) -> list[str]:
    out = []
    for entry in entries:
        message = entry.message  # type: ignore[attr-defined]
        out.append(message.content if isinstance(message, UserMessage) else message.text())
    return out


def test_collects_from_the_old_leaf_back_to_the_common_ancestor() -> None:
    session, ids = _tree()
    collection = collect_entries_for_branch_summary(session.entries, ids["D"], ids["F"])
    assert _names(collection.entries) == ["B", "C", "D"]
    assert collection.common_ancestor_id == ids["A"]


def test_moving_back_along_the_same_path() -> None:
    session, ids = _tree()
    by_id = {e.id: e for e in session.entries}
    collection = collect_entries_for_branch_summary(by_id, ids["D"], ids["B"])
    assert _names(collection.entries) == ["C", "D"]
    assert collection.common_ancestor_id == ids["B"]
    assert collect_entries_for_branch_summary(by_id, ids["D"], ids["D"]).entries == []


def test_no_old_leaf_or_separate_roots() -> None:
    session, ids = _tree()
    assert collect_entries_for_branch_summary(session.entries, None, ids["F"]).entries == []
    other_root = session.user("root 2", parent=None)
    collection = collect_entries_for_branch_summary(session.entries, ids["D"], other_root.id)
    assert _names(collection.entries) == ["A", "B", "C", "D"]
    assert collection.common_ancestor_id is None
    with pytest.raises(KeyError, match="nope"):
        collect_entries_for_branch_summary(session.entries, "nope", ids["F"])


def test_prepare_tree() -> None:
    session, ids = _tree()
    preparation = prepare_tree(session.entries, ids["D"], ids["F"], user_wants_summary=True, label="tried B")
    assert preparation.target_id == ids["F"] and preparation.old_leaf_id == ids["D"]
    assert preparation.common_ancestor_id == ids["A"]
    assert [e.id for e in preparation.entries_to_summarize] == [ids["B"], ids["C"], ids["D"]]
    assert preparation.user_wants_summary and preparation.label == "tried B"


def test_compactions_are_not_a_boundary_and_tool_results_are_skipped() -> None:
    s = Session()
    root = s.user("root")
    s.user("old work")
    s.compaction("EARLIER SUMMARY", root.id)
    s.assistant("", ("read", {"path": "x.py"}))
    s.tool_result("file body")
    leaf = s.assistant("done")
    target = s.user("elsewhere", parent=root.id)
    collection = collect_entries_for_branch_summary(s.entries, leaf.id, target.id)
    prepared = prepare_branch_entries(collection.entries)
    assert isinstance(prepared.messages[1], CompactionSummaryMessage)
    assert not any(isinstance(m, ToolResultMessage) for m in prepared.messages)
    assert len(prepared.messages) == 4  # old work, summary, tool call, done
    assert prepared.file_ops.read == ["x.py"]


def test_budget_keeps_the_newest_messages_and_squeezes_in_summaries() -> None:
    s = Session()
    s.user("oldest " + text_of_size(500))
    s.branch_summary(text_of_size(300), details={"readFiles": ["nested.py"], "modifiedFiles": ["n.py"]})
    s.user("middle " + text_of_size(400))
    s.assistant("newest " + text_of_size(100))
    prepared = prepare_branch_entries(s.entries, token_budget=700)
    # newest (102) + middle (402) fit; the summary (300) overflows the budget but is
    # squeezed in because less than 90% of it is used; the walk stops there.
    assert [type(m).__name__ for m in prepared.messages] == ["BranchSummaryMessage", "UserMessage", "AssistantMessage"]
    assert prepared.total_tokens == 102 + 402 + 300
    # File lists of nested pi-generated branch summaries are carried over.
    assert prepared.file_ops.read == ["nested.py"] and prepared.file_ops.modified == ["n.py"]

    tight = prepare_branch_entries(s.entries, token_budget=550)  # 504 >= 90% of 550: no squeeze
    assert [type(m).__name__ for m in tight.messages] == ["UserMessage", "AssistantMessage"]


def test_plugin_summaries_do_not_carry_files_and_edits_apply() -> None:
    s = Session()
    s.branch_summary("plugin summary", details={"readFiles": ["p.py"]}, from_hook=True)
    secret = s.user("secret")
    s.edit(secret.id, None)
    s.user("visible")
    prepared = prepare_branch_entries(s.entries)
    assert prepared.file_ops.read == []
    assert isinstance(prepared.messages[0], BranchSummaryMessage)
    assert [m.content for m in prepared.messages[1:]] == ["visible"]  # type: ignore[union-attr]


async def test_generate_branch_summary() -> None:
    s = Session()
    s.user("try approach B")
    s.assistant("", ("read", {"path": "b.py"}), ("write", {"path": "c.py"}))
    s.tool_result("ok")
    model = scripted(reply("## Goal\nApproach B"))
    result = await generate_branch_summary(s.entries, MODEL, model, custom_instructions="mention costs")
    prompt = model.calls[0].prompt
    assert "[User]: try approach B" in prompt
    assert "## Next Steps" in prompt and "## Critical Context" not in prompt
    assert prompt.endswith("Additional focus: mention costs")
    assert result.summary.startswith(BRANCH_SUMMARY_PREAMBLE)
    assert "## Goal\nApproach B" in result.summary
    assert result.summary.endswith("<read-files>\nb.py\n</read-files>\n\n<modified-files>\nc.py\n</modified-files>")
    assert result.details == {"readFiles": ["b.py"], "modifiedFiles": ["c.py"]}
    assert result.usage is not None


async def test_replace_instructions_and_empty_branch() -> None:
    s = Session()
    s.user("something")
    model = scripted(reply("custom"))
    await generate_branch_summary(s.entries, MODEL, model, custom_instructions="ONLY THIS", replace_instructions=True)
    assert model.calls[0].prompt.endswith("</conversation>\n\nONLY THIS")

    empty = Session()
    empty.model_change()
    model = scripted()
    result = await generate_branch_summary(empty.entries, MODEL, model)
    assert result.summary == "No content to summarize" and model.calls == []


async def test_branch_summary_failures_raise() -> None:
    s = Session()
    s.user("x")
    with pytest.raises(CompactionError, match=r"Branch summarization failed: .*output limit"):
        await generate_branch_summary(s.entries, MODEL, scripted(reply("half", stop_reason="length")))
    with pytest.raises(CompactionError, match="Branch summarization failed: boom"):
        await generate_branch_summary(s.entries, MODEL, scripted(reply("", stop_reason="error", error_message="boom")))
    with pytest.raises(CompactionError) as info:
        await generate_branch_summary(s.entries, MODEL, scripted(reply("", stop_reason="aborted")))
    assert info.value.aborted
