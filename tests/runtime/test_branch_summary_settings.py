"""branchSummary.reserveTokens: the tokens kept free when an abandoned branch is
summarised (a real session on the scripted model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_helpers import start, write_settings

from pi_core.ai import FauxResponse, FauxScript, faux_model
from pi_core.compaction.branch import NO_BRANCH_CONTENT


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.mark.parametrize("free", [None, 5])
async def test_reserve_tokens_bound_what_the_branch_summary_reads(cwd: Path, free: int | None) -> None:
    if free is not None:  # only 5 tokens left for the branch: nothing fits, no request, the fixed summary
        window = faux_model(FauxScript([])).context_window
        write_settings({"branchSummary": {"reserveTokens": window - free}})
    long_answer = "a long answer about the branch " * 20  # about 150 tokens
    runtime, script, _ = await start(cwd, "answer one", long_answer, FauxResponse(text="## Goal\nsummarised"))
    session = runtime.session
    await session.prompt("question one")
    await session.prompt("question two")
    second_user = [e for e in session.sm.get_branch() if e.type == "message" and e.message.role == "user"][1]
    await session.navigate_tree(second_user.id, summarize=True)
    summary = next(e for e in session.sm.get_entries() if e.type == "branch_summary").summary
    if free is None:
        assert "summarised" in summary and script.requests == 3
    else:
        assert summary == NO_BRANCH_CONTENT and script.requests == 2
