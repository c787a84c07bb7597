"""The edit tool: exact and fuzzy matching, uniqueness, line endings, BOM, diffs,
argument shapes and errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text, write

from pi_core.tools import create_edit_tool
from pi_core.tools.edit_diff import display_diff, unified_patch


@pytest.fixture
def edit():
    return create_edit_tool()


@pytest.fixture
def ctx(tmp_path: Path) -> FakeToolContext:
    return FakeToolContext(tmp_path)


def one(old: str, new: str) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new}]


def test_schema_uses_the_typescript_argument_names(edit):
    params = edit.parameters
    assert params["required"] == ["path", "edits"]
    item = params["properties"]["edits"]["items"]
    assert set(item["properties"]) == {"oldText", "newText"}
    assert "$ref" not in str(params)


async def test_exact_replacement(edit, ctx, tmp_path):
    target = write(tmp_path / "a.py", "def f():\n    return 1\n")
    result = await call(edit, ctx, path="a.py", edits=one("return 1", "return 2"))
    assert not result.is_error
    assert text(result) == "Successfully replaced 1 block(s) in a.py."
    assert target.read_text() == "def f():\n    return 2\n"
    assert result.details["firstChangedLine"] == 2
    assert "-2     return 1" in result.details["diff"] and "+2     return 2" in result.details["diff"]
    patch = result.details["patch"]
    assert patch.startswith("--- a.py\n+++ a.py\n@@")
    assert "-    return 1\n+    return 2\n" in patch


async def test_legacy_top_level_old_and_new_text(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "alpha beta")
    result = await call(edit, ctx, path="a.txt", oldText="beta", newText="gamma")
    assert not result.is_error and target.read_text() == "alpha gamma"
    direct = await edit.execute({"path": "a.txt", "oldText": "alpha", "newText": "omega"}, ctx)
    assert not direct.is_error and target.read_text() == "omega gamma"


async def test_edits_sent_as_a_json_string(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "one two")
    result = await call(edit, ctx, path="a.txt", edits='[{"oldText": "two", "newText": "three"}]')
    assert not result.is_error and target.read_text() == "one three"
    single = await call(edit, ctx, path="a.txt", edits={"oldText": "one", "newText": "1"})
    assert not single.is_error and target.read_text() == "1 three"


async def test_several_disjoint_edits_against_the_original(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "a = 1\nb = 2\nc = 3\n")
    edits = [{"oldText": "c = 3", "newText": "c = 30"}, {"oldText": "a = 1", "newText": "a = 10"}]
    result = await call(edit, ctx, path="a.txt", edits=edits)
    assert text(result) == "Successfully replaced 2 block(s) in a.txt."
    assert target.read_text() == "a = 10\nb = 2\nc = 30\n"


async def test_overlapping_edits_are_refused(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "abcdef")
    edits = [{"oldText": "abcd", "newText": "x"}, {"oldText": "cdef", "newText": "y"}]
    result = await call(edit, ctx, path="a.txt", edits=edits)
    assert result.is_error and "edits[0] and edits[1] overlap in a.txt" in text(result)
    assert target.read_text() == "abcdef"


async def test_ambiguous_text_names_the_number_of_occurrences(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "x = 1\nx = 1\nx = 1\n")
    result = await call(edit, ctx, path="a.txt", edits=one("x = 1", "x = 2"))
    assert result.is_error
    assert text(result).startswith("Found 3 occurrences of the text in a.txt. The text must be unique")
    assert target.read_text() == "x = 1\nx = 1\nx = 1\n"
    multi = await call(edit, ctx, path="a.txt", edits=[*one("zzz", "y"), *one("x = 1", "x = 2")])
    assert "Could not find edits[0] in a.txt." in text(multi)


async def test_not_found_shows_where_it_probably_belongs(edit, ctx, tmp_path):
    write(tmp_path / "a.py", "import os\n\ndef handler(event):\n    return event\n")
    result = await call(edit, ctx, path="a.py", edits=one("def handler(evt):\n    return evt", "x"))
    body = text(result)
    assert result.is_error
    assert body.startswith("Could not find the exact text in a.py. The old text must match exactly")
    assert "Closest match is around line 3:" in body and "  3: def handler(event):" in body


async def test_identical_old_and_new_text(edit, ctx, tmp_path):
    write(tmp_path / "a.txt", "same")
    result = await call(edit, ctx, path="a.txt", edits=one("same", "same"))
    assert result.is_error and text(result) == "oldText and newText are identical in a.txt: there is nothing to change."


async def test_empty_old_text(edit, ctx, tmp_path):
    write(tmp_path / "a.txt", "x")
    result = await call(edit, ctx, path="a.txt", edits=one("", "y"))
    assert result.is_error and text(result) == "oldText must not be empty in a.txt."


async def test_no_edits(edit, ctx, tmp_path):
    write(tmp_path / "a.txt", "x")
    result = await call(edit, ctx, path="a.txt", edits=[])
    assert result.is_error and "edits must contain at least one replacement" in text(result)


async def test_missing_file_and_directory(edit, ctx, tmp_path):
    missing = await call(edit, ctx, path="nope.txt", edits=one("a", "b"))
    assert (
        missing.is_error and text(missing) == "Could not edit nope.txt: file not found. Use write to create a new file."
    )
    (tmp_path / "d").mkdir()
    directory = await call(edit, ctx, path="d", edits=one("a", "b"))
    assert text(directory) == "Could not edit d: it is a directory."


async def test_fuzzy_match_tolerates_trailing_whitespace_quotes_and_dashes(edit, ctx, tmp_path):
    original = "keep  \nsay(\u201chello\u201d)   \nrange 1\u20132\nkeep too  \n"
    target = write(tmp_path / "a.txt", original)
    result = await call(edit, ctx, path="a.txt", edits=one('say("hello")\nrange 1-2', 'say("bye")\nrange 3-4'))
    assert not result.is_error, text(result)
    # Touched lines take the new text; untouched lines keep their trailing spaces.
    assert target.read_text() == 'keep  \nsay("bye")\nrange 3-4\nkeep too  \n'


async def test_fuzzy_match_applies_nfkc(edit, ctx, tmp_path):
    target = write(tmp_path / "a.txt", "value = \uff11\uff12\n")  # full-width digits
    result = await call(edit, ctx, path="a.txt", edits=one("value = 12", "value = 13"))
    assert not result.is_error and target.read_text() == "value = 13\n"


async def test_crlf_and_bom_are_preserved(edit, ctx, tmp_path):
    target = write(tmp_path / "win.txt", b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\n")
    result = await call(edit, ctx, path="win.txt", edits=one("second\nthird", "2nd\n3rd"))
    assert not result.is_error, text(result)
    assert target.read_bytes() == b"\xef\xbb\xbffirst\r\n2nd\r\n3rd\r\n"
    assert "\r" not in result.details["diff"]


async def test_undecodable_bytes_survive_an_edit(edit, ctx, tmp_path):
    target = write(tmp_path / "mixed.txt", b"caf\xe9 name = old\n")
    result = await call(edit, ctx, path="mixed.txt", edits=one("old", "new"))
    assert not result.is_error
    assert target.read_bytes() == b"caf\xe9 name = new\n"


async def test_edit_through_a_symlink_changes_the_target(edit, ctx, tmp_path):
    real = write(tmp_path / "real.txt", "before")
    (tmp_path / "link.txt").symlink_to(real)
    result = await call(edit, ctx, path="link.txt", edits=one("before", "after"))
    assert not result.is_error
    assert (tmp_path / "link.txt").is_symlink() and real.read_text() == "after"


async def test_file_mode_is_kept(edit, ctx, tmp_path):
    script = write(tmp_path / "run.sh", "echo a\n")
    script.chmod(0o751)
    await call(edit, ctx, path="run.sh", edits=one("echo a", "echo b"))
    assert os.stat(script).st_mode & 0o777 == 0o751
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".pi-tmp")]


def test_display_diff_elides_distant_context():
    old = "\n".join(f"l{i}" for i in range(1, 21))
    new = old.replace("l10", "L10")
    diff, first = display_diff(old, new)
    assert first == 10
    assert diff.splitlines() == [
        "    ...",
        "  6 l6",
        "  7 l7",
        "  8 l8",
        "  9 l9",
        "-10 l10",
        "+10 L10",
        " 11 l11",
        " 12 l12",
        " 13 l13",
        " 14 l14",
        "    ...",
    ]


def test_unified_patch_marks_a_missing_final_newline():
    patch = unified_patch("f", "a\nb", "a\nc")
    assert patch.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
