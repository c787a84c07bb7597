"""Truncation helpers and the streaming output accumulator."""

from __future__ import annotations

import os

import pytest

from pi_core.tools import format_size, truncate_head, truncate_line, truncate_tail
from pi_core.tools.output import OutputAccumulator


def test_format_size():
    assert [format_size(n) for n in (0, 1023, 1024, 51200, 1536 * 1024)] == ["0B", "1023B", "1.0KB", "50.0KB", "1.5MB"]


def test_head_keeps_whole_lines_within_both_limits():
    text = "".join(f"{i}\n" for i in range(10))
    by_lines = truncate_head(text, max_lines=3)
    assert (by_lines.content, by_lines.truncated_by, by_lines.total_lines) == ("0\n1\n2", "lines", 10)
    by_bytes = truncate_head("aaaa\nbbbb\ncccc\n", max_bytes=9)
    assert (by_bytes.content, by_bytes.truncated_by, by_bytes.output_lines) == ("aaaa\nbbbb", "bytes", 2)
    untouched = truncate_head("short\n")
    assert untouched.content == "short\n" and not untouched.truncated


def test_head_reports_a_first_line_over_the_limit():
    result = truncate_head("x" * 20 + "\nshort", max_bytes=10)
    assert result.first_line_exceeds_limit and result.content == "" and result.output_lines == 0


def test_tail_keeps_the_end():
    text = "".join(f"{i}\n" for i in range(10))
    result = truncate_tail(text, max_lines=3)
    assert (result.content, result.output_lines, result.total_lines) == ("7\n8\n9", 3, 10)
    partial = truncate_tail("é" * 10, max_bytes=5)  # 2 bytes a character: never split one
    assert partial.last_line_partial and partial.content == "éé"


def test_truncate_line():
    assert truncate_line("abc", 5) == ("abc", False)
    assert truncate_line("abcdefgh", 5) == ("abcde... [truncated]", True)


def test_details_use_the_typescript_spelling():
    data = truncate_head("a\nb\nc", max_lines=1).to_json()
    assert data["truncatedBy"] == "lines" and data["maxLines"] == 1 and "content" not in data


def test_accumulator_decodes_characters_split_across_chunks():
    output = OutputAccumulator()
    encoded = "héllo wörld\n".encode()
    for i in range(len(encoded)):
        output.append(encoded[i : i + 1])
    output.finish()
    snapshot = output.snapshot()
    assert snapshot.content == "héllo wörld\n" and snapshot.full_output_path is None
    output.close()


@pytest.mark.parametrize("line_length", [3, 700, 30_000])
def test_accumulator_tail_matches_truncating_the_whole_output(line_length):
    output = OutputAccumulator(max_lines=50, max_bytes=2000)
    lines = [f"{i:06d}" + "z" * line_length for i in range(400)]
    whole = "\n".join(lines) + "\n"
    data = whole.encode()
    for start in range(0, len(data), 997):
        output.append(data[start : start + 997])
    output.finish()
    snapshot = output.snapshot()
    expected = truncate_tail(whole, max_lines=50, max_bytes=2000)
    assert snapshot.content == expected.content
    assert snapshot.truncation.total_lines == 400 and snapshot.truncation.truncated
    output.close()
    assert snapshot.full_output_path is not None
    with open(snapshot.full_output_path, "rb") as handle:
        assert handle.read() == data
    os.unlink(snapshot.full_output_path)


def test_accumulator_with_a_long_line_before_short_ones():
    output = OutputAccumulator(max_lines=50, max_bytes=2000)
    whole = "x" * 30_000 + "\nabc\n"
    output.append(whole.encode())
    output.finish()
    snapshot = output.snapshot(persist_if_truncated=False)
    assert snapshot.content == truncate_tail(whole, max_lines=50, max_bytes=2000).content == "abc"
    assert snapshot.truncation.total_lines == 2
    output.close()
    if output.full_output_path:
        os.unlink(output.full_output_path)
