"""The tokenizer: splitting, stop words, light stemming."""

from __future__ import annotations

import pytest
from pi_toolindex import STOP_WORDS, stem, tokenize


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("mcp__github__create_issue", ["mcp", "github", "creat", "issu"]),
        ("create-issue", ["creat", "issu"]),
        ("issues.create", ["issu", "creat"]),
        ("createPullRequest", ["creat", "pull", "request"]),
        ("getHTTPResponse", ["get", "http", "respons"]),
        ("oauth2Token", ["oauth", "2", "token"]),
        ("utf8", ["utf", "8"]),
        ("Create an issue in the repo", ["creat", "issu", "repo"]),
        ("", []),
        ("the of a to", []),
        ("创建表格", ["创建", "建表", "表格"]),
    ],
)
def test_tokenize_splits_names_and_text(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


@pytest.mark.parametrize(
    "forms",
    [
        ("create", "creates", "created", "creating"),
        ("issue", "issues"),
        ("merge", "merged", "merging", "merges"),
        ("commit", "commits", "committed", "committing"),
        ("get", "gets", "getting"),
        ("add", "adds", "added", "adding"),
        ("query", "queries"),
        ("branch", "branches"),
        ("class", "classes"),
        ("status", "statuses"),
        ("file", "files", "filed"),
        ("list", "lists", "listed", "listing"),
    ],
)
def test_stemming_brings_inflections_together(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1, {form: stem(form) for form in forms}


@pytest.mark.parametrize("word", ["pass", "status", "analysis", "string", "need", "speed", "tree", "use", "add", "s3"])
def test_stemming_leaves_words_it_should_not_touch(word: str) -> None:
    assert stem(word) == word


def test_stop_words_are_lowercase_function_words() -> None:
    assert {"the", "a", "to", "of"} <= STOP_WORDS
    assert not {"create", "list", "get", "new", "not", "all"} & STOP_WORDS
    assert all(word == word.lower() for word in STOP_WORDS)
