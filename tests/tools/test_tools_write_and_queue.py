"""The write tool and the per-file mutation queue."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text, write

from pi_core.tools import (
    create_edit_tool,
    create_write_tool,
    file_mutation_lock,
    mutation_queue_key,
    with_file_mutation_queue,
)
from pi_core.tools.mutation_queue import pending_mutations


@pytest.fixture
def ctx(tmp_path: Path) -> FakeToolContext:
    return FakeToolContext(tmp_path)


# --------------------------------------------------------------------------- write


async def test_write_creates_parent_directories(ctx, tmp_path):
    result = await call(create_write_tool(), ctx, path="deep/er/new.txt", content="héllo\n")
    assert not result.is_error
    assert text(result) == "Successfully wrote 7 bytes to deep/er/new.txt"
    assert (tmp_path / "deep/er/new.txt").read_text(encoding="utf-8") == "héllo\n"


async def test_write_overwrites(ctx, tmp_path):
    target = write(tmp_path / "a.txt", "old content that is longer")
    await call(create_write_tool(), ctx, path="a.txt", content="new")
    assert target.read_text() == "new"


async def test_write_refuses_a_directory(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    result = await call(create_write_tool(), ctx, path="d", content="x")
    assert result.is_error and text(result) == "Could not write d: it is a directory."


async def test_write_under_a_file_is_an_error(ctx, tmp_path):
    write(tmp_path / "file", "x")
    result = await call(create_write_tool(), ctx, path="file/child.txt", content="x")
    assert result.is_error and text(result).startswith("Could not write file/child.txt:")


async def test_write_after_abort_writes_nothing(ctx, tmp_path):
    ctx.abort()
    result = await call(create_write_tool(), ctx, path="a.txt", content="x")
    assert result.is_error and text(result) == "Operation aborted"
    assert not (tmp_path / "a.txt").exists()


# --------------------------------------------------------------------------- queue


async def test_parallel_edits_to_one_file_lose_nothing(ctx, tmp_path):
    count = 40
    target = write(tmp_path / "shared.txt", "".join(f"slot {i}: empty\n" for i in range(count)))
    edit = create_edit_tool()
    results = await asyncio.gather(
        *(
            call(edit, ctx, path="shared.txt", edits=[{"oldText": f"slot {i}: empty", "newText": f"slot {i}: done"}])
            for i in range(count)
        )
    )
    assert not any(r.is_error for r in results), [text(r) for r in results if r.is_error]
    assert target.read_text() == "".join(f"slot {i}: done\n" for i in range(count))


async def test_writes_and_edits_through_a_symlink_share_the_queue(ctx, tmp_path):
    real = write(tmp_path / "real.txt", "")
    (tmp_path / "alias.txt").symlink_to(real)
    assert mutation_queue_key(tmp_path / "alias.txt") == mutation_queue_key(real)
    order: list[str] = []

    async def step(name: str, path: Path, entered: asyncio.Event | None, release: asyncio.Event | None) -> None:
        async with file_mutation_lock(path):
            order.append(f"{name} in")
            if entered is not None:
                entered.set()
            if release is not None:
                await release.wait()
            order.append(f"{name} out")

    entered, release = asyncio.Event(), asyncio.Event()
    first = asyncio.ensure_future(step("first", real, entered, release))
    await entered.wait()
    second = asyncio.ensure_future(step("second", tmp_path / "alias.txt", None, None))
    await asyncio.sleep(0)  # let the second one reach the queue
    assert pending_mutations(real) == 2 and order == ["first in"]
    release.set()
    await asyncio.gather(first, second)
    assert order == ["first in", "first out", "second in", "second out"]
    assert pending_mutations(real) == 0


async def test_different_files_do_not_wait_for_each_other(tmp_path):
    release = asyncio.Event()
    holder_in = asyncio.Event()

    async def hold() -> None:
        async with file_mutation_lock(tmp_path / "a"):
            holder_in.set()
            await release.wait()

    holder = asyncio.ensure_future(hold())
    await holder_in.wait()
    assert await with_file_mutation_queue(tmp_path / "b", lambda: asyncio.sleep(0, "b done")) == "b done"
    release.set()
    await holder


async def test_new_files_in_a_symlinked_directory_share_a_key(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert mutation_queue_key(tmp_path / "link" / "new.txt") == mutation_queue_key(tmp_path / "real" / "new.txt")
    assert mutation_queue_key("relative.txt") == os.path.realpath("relative.txt")


async def test_the_queue_is_released_when_the_work_fails(tmp_path):
    async def boom() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await with_file_mutation_queue(tmp_path / "x", boom)
    assert pending_mutations(tmp_path / "x") == 0
    assert await with_file_mutation_queue(tmp_path / "x", lambda: asyncio.sleep(0, "next")) == "next"


async def test_a_plugin_tool_holding_the_queue_delays_the_builtin_edit(ctx, tmp_path):
    from pi_hookspecs.files import file_mutation_lock as contract_lock

    target = write(tmp_path / "f.txt", "a\nb\n")
    edit = create_edit_tool()
    async with contract_lock(target):  # a plugin's read-modify-write window
        pending = asyncio.ensure_future(call(edit, ctx, path="f.txt", edits=[{"oldText": "b", "newText": "B"}]))
        await asyncio.sleep(0)
        assert pending_mutations(target) == 2 and not pending.done()
        target.write_text(target.read_text().replace("a", "A"))
    result = await pending
    assert not result.is_error
    assert target.read_text() == "A\nB\n"
