"""Validating entries in bulk gives the models and diagnostics of entry-by-entry validation.

A resume validates every entry on the context path at once (``validate_entries``), with
validators whose unions look the ``type`` / ``role`` key up instead of calling the
contract's discriminator functions; whatever they refuse goes through the full
validator. These tests hold both paths to the same answers on every kind of entry a file
can hold: each known type, unknown types, roles and blocks, invalid entries, missing
content, snake_case keys, extra keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_core.session import SessionManager, records
from pi_core.session.records import entry_adapter, validate_entries, validate_entry
from pi_hookspecs import MessageEntry, UnknownEntry
from pi_hookspecs.messages import UnknownContent, UnknownMessage

TS = "2026-01-01T00:00:00.000Z"


def entry(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{n:07d}", "parentId": f"e{n - 1:07d}" if n else None, "timestamp": TS, **fields}


USAGE = {
    "input": 1,
    "output": 2,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 3,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def assistant(content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "p",
        "model": "m",
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": 1,
        **extra,
    }


def corpus() -> list[dict[str, Any]]:
    """Raw entries of every kind, valid and not."""
    raws = [
        entry("message", 0, message={"role": "user", "content": "hi", "timestamp": 1}),
        entry("message", 1, message=assistant([{"type": "text", "text": "hello"}])),
        entry(
            "message",
            2,
            message=assistant(
                [
                    {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                    {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
                ],
                stopReason="toolUse",
            ),
        ),
        entry(
            "message",
            3,
            message={
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "content": [
                    {"type": "text", "text": "out"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                ],
                "isError": False,
                "timestamp": 2,
            },
        ),
        entry("message", 4, message={"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": 3}),
        entry("message", 5, message={"role": "user", "content": None, "timestamp": 3}),  # normalised to []
        entry("message", 6, message={"role": "system", "timestamp": 3, "content": None}),  # normalised to ""
        entry(
            "message",
            7,
            message={
                "role": "bashExecution",
                "command": "ls",
                "output": "a",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": 4,
            },
        ),
        entry(
            "message",
            8,
            message={"role": "custom", "customType": "note", "content": "c", "display": True, "timestamp": 4},
        ),
        entry("message", 9, message={"role": "brandNewRole", "timestamp": 5, "what": 1}),  # unknown role
        entry("message", 10, message=assistant([{"type": "hologram", "data": 1}, {"type": "text", "text": "t"}])),
        entry(
            "message",
            11,
            message={"role": "user", "content": "extra keys", "timestamp": 1, "mood": "fine"},
            future={"kept": True},
        ),
        entry("message", 12, message={"role": "user", "content": "snake", "timestamp": 1}, parent_id="e0000011"),
        entry("model_change", 13, provider="p", modelId="m"),
        entry("thinking_level_change", 14, thinkingLevel="high"),
        entry("compaction", 15, summary="s", firstKeptEntryId="e0000001", tokensBefore=10),
        entry("context_edit", 16, targetId="e0000001", replacement=None),
        entry("branch_summary", 17, fromId="e0000002", summary="b"),
        entry("custom", 18, customType="k", data={"a": 1}),
        entry("custom_message", 19, customType="k", content=None, display=True),  # normalised to []
        entry("label", 20, targetId="e0000001", label="L"),
        entry("session_info", 21, name="n"),
        entry("some_future_type", 22, payload=[1, 2]),  # unknown type
        entry("message", 23, message={"role": "user", "content": 5, "timestamp": 1}),  # invalid content
        entry("message", 24, message=assistant("not a list")),  # invalid assistant content
        entry("model_change", 25, provider=3),  # invalid field
        entry("message", 26, message="not an object"),
        entry("message", 27, message=assistant([{"type": "text", "text": "u"}], usage={**USAGE, "future": 1})),
    ]
    return raws


def dumped(model: Any) -> Any:
    return type(model), model.model_dump(mode="json", by_alias=True), model.model_extra


def reference(raw: dict[str, Any]) -> tuple[Any, str | None]:
    """Entry by entry through the full validator only (what every entry got before)."""
    normalised = records._normalised(raw)
    try:
        return entry_adapter().validate_python(normalised), None
    except Exception as exc:  # pydantic's ValidationError
        first = exc.errors()[0]  # type: ignore[attr-defined]
        where = ".".join(str(part) for part in first["loc"])
        return UnknownEntry.model_validate(raw), f"{where}: {first['msg']}"


def test_each_entry_gets_the_model_and_error_of_the_full_validator() -> None:
    raws = corpus()
    expected = [reference(raw) for raw in raws]
    one_by_one = [validate_entry(raw) for raw in raws]
    in_bulk = validate_entries(raws)
    for raw, want, single, bulk in zip(raws, expected, one_by_one, in_bulk, strict=True):
        assert dumped(single[0]) == dumped(want[0]), raw
        assert single[1] == want[1], raw
        assert dumped(bulk[0]) == dumped(want[0]), raw
        assert bulk[1] == want[1], raw
    # the corpus does reach the fallbacks
    models = [model for model, _ in in_bulk]
    assert any(isinstance(m, UnknownEntry) and m.type == "some_future_type" for m in models)
    assert any(isinstance(m, MessageEntry) and isinstance(m.message, UnknownMessage) for m in models)
    assert any(
        isinstance(m, MessageEntry) and any(isinstance(b, UnknownContent) for b in m.message.content)
        for m in models
        if getattr(m.message, "role", None) == "assistant"
    )
    assert sum(error is not None for _, error in in_bulk) == 4


@pytest.mark.parametrize("bad_at", [None, 0, 2047, 2048, 4999])
def test_a_bad_entry_costs_only_its_chunk_and_keeps_every_model(bad_at: int | None) -> None:
    raws = [entry("message", n, message={"role": "user", "content": f"q{n}", "timestamp": n}) for n in range(5000)]
    if bad_at is not None:
        raws[bad_at] = entry("message", bad_at, message={"role": "user", "content": 7, "timestamp": 1})
    results = validate_entries(raws)
    assert len(results) == 5000
    for n, (model, error) in enumerate(results):
        if n == bad_at:
            assert isinstance(model, UnknownEntry) and error == reference(raws[n])[1]
            assert error is not None and "content" in error
        else:
            assert error is None and isinstance(model, MessageEntry) and model.message.content == f"q{n}"


def test_a_resumed_file_reports_its_invalid_entries_by_line(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": TS, "cwd": "/p"}
    raws = [entry("message", n, message={"role": "user", "content": f"q{n}", "timestamp": n}) for n in range(3000)]
    raws[1500]["message"]["content"] = 7
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *raws]))
    error = reference(raws[1500])[1]
    with SessionManager.open(path) as session:
        messages = session.build_session_context().messages
        assert len(messages) == 2999
        assert [str(d) for d in session.diagnostics] == [
            f"{path}:1502: entry e0001500 (message) does not match the session format ({error}); "
            "it is kept but left out of the context"
        ]
    # nothing was lost: the file still holds the invalid entry as it was
    assert json.loads(path.read_text().splitlines()[1501])["message"]["content"] == 7


def test_a_file_validated_line_by_line_gives_each_entry_the_full_validators_model(tmp_path: Path) -> None:
    """Opening a file in the current format validates each line straight from its JSON;
    a line that validator refuses is kept raw and gets the full validator when first
    needed: every entry ends with the same model and error as entry by entry."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": TS, "cwd": "/p"}
    raws = corpus()
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *raws]))
    with SessionManager.open(path) as session:
        tree = session._tree
        validated_on_read = [record.raw is None for record in tree.records]
        got = [session.get_entry(raw["id"]) for raw in raws]
        errors = sorted(str(d) for d in session.diagnostics)
    expected = [reference(raw) for raw in raws]
    for raw, model, (want, _) in zip(raws, got, expected, strict=True):
        assert dumped(model) == dumped(want), raw
    assert errors == sorted(
        f"{path}:{n + 2}: entry {raw['id']} ({raw['type']}) does not match the session format ({error}); "
        "it is kept but left out of the context"
        for n, (raw, (_, error)) in enumerate(zip(raws, expected, strict=True))
        if error is not None
    )
    # the usual entries took the direct way, the unusual ones the general one
    assert validated_on_read[0] and validated_on_read[13] and validated_on_read[20]
    assert not validated_on_read[5] and not validated_on_read[22] and not validated_on_read[23]


def test_an_older_format_is_migrated_from_its_parsed_lines(tmp_path: Path) -> None:
    header = {"type": "session", "version": 2, "id": "s", "timestamp": TS, "cwd": "/p"}
    raws = [
        entry(
            "message",
            0,
            message={"role": "hookMessage", "customType": "k", "content": "c", "display": True, "timestamp": 1},
        ),
        entry("message", 1, message={"role": "user", "content": "hi", "timestamp": 2}),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *raws]))
    with SessionManager.open(path) as session:
        roles = [m.role for m in session.build_session_context().messages]
        assert roles == ["custom", "user"] and not session.diagnostics
    assert json.loads(path.read_text().splitlines()[0])["version"] == 3


# --------------------------------------------------------------------------- the schema cache


def test_the_fast_schema_is_cached_beside_the_bytecode_and_regenerated_when_a_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_core import _schema_cache as schema_cache

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    module = tmp_path / "src" / "builder.py"
    module.parent.mkdir()
    module.write_text("# the module that builds the schema\n")
    full = records._keyed(entry_adapter().core_schema)
    calls: list[int] = []

    def generate() -> Any:
        calls.append(1)
        return full

    def cached_files() -> list[Path]:
        return sorted((tmp_path / "pycache").rglob("pi-entry-schema.*.pickle"))

    schema = schema_cache.cached_schema(str(module), generate)
    assert calls == [1] and len(cached_files()) == 1
    again = schema_cache.cached_schema(str(module), generate)
    assert calls == [1], "the second run reads the schema back"
    # validators built from the schema read back give the full validator's answers
    one = records._validators_of(again).entry
    for raw in corpus()[:9]:
        assert dumped(one(records._normalised(raw))) == dumped(reference(raw)[0])
    assert schema is full
    # a changed source: generated again, and the stale file goes
    first = cached_files()
    module.write_text("# changed\n# the module that builds the schema\n")
    schema_cache.cached_schema(str(module), generate)
    assert calls == [1, 1]
    assert len(cached_files()) == 1 and cached_files() != first
    # a damaged file is ignored (and replaced)
    cached_files()[0].write_bytes(b"not a pickle")
    schema_cache.cached_schema(str(module), generate)
    assert calls == [1, 1, 1]
    schema_cache.cached_schema(str(module), generate)
    assert calls == [1, 1, 1]


def test_without_bytecode_writing_nothing_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_core import _schema_cache as schema_cache

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module = tmp_path / "builder.py"
    module.write_text("")
    assert schema_cache.cached_schema(str(module), lambda: {"type": "any"}) == {"type": "any"}
    assert not list(tmp_path.rglob("pi-entry-schema.*"))


def test_a_fresh_process_validates_with_the_cached_schema_without_building_the_full_validator(tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from pi_core.session import records\n"
        "models = records.validate_entries([json.loads(line) for line in sys.stdin])\n"
        "print(records.entry_adapter.cache_info().currsize, len(models), models[1][0].message.content[0].text)\n"
    )
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    lines = "".join(json.dumps(raw) + "\n" for raw in corpus()[:9])
    runs = [
        subprocess.run([sys.executable, "-c", script], input=lines, env=env, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert runs[0].stdout.split() == ["1", "9", "hello"]  # generated from the full validator's schema
    assert runs[1].stdout.split() == ["0", "9", "hello"]  # read back: the full validator was never built


@pytest.mark.parametrize("bad_at", [0, 510, 511, 512, 1023, 1499])
def test_a_refused_line_in_a_run_of_lines_costs_only_its_run(tmp_path: Path, bad_at: int) -> None:
    """Lines go through the validator in runs; one it refuses (here not JSON at all, or
    an entry of the wrong shape) sends its run line by line, and every line keeps its
    number and its entry."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": TS, "cwd": "/p"}
    lines = [
        json.dumps(entry("message", n, message={"role": "user", "content": f"q{n}", "timestamp": n}))
        for n in range(1500)
    ]
    broken = bad_at % 2 == 0
    lines[bad_at] = (
        "{not json"
        if broken
        else json.dumps(entry("message", bad_at, message={"role": "user", "content": 7, "timestamp": 1}))
    )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines]) + "\n")
    with SessionManager.open(path) as session:
        ids = [e.id for e in session.get_entries()]
        messages = session.build_session_context().messages
        diagnostics = [str(d) for d in session.diagnostics]
    expected = [f"e{n:07d}" for n in range(1500) if not (broken and n == bad_at)]
    assert ids == expected
    assert len(diagnostics) == 1 and diagnostics[0].startswith(f"{path}:{bad_at + 2}: ")
    if not broken:  # kept but left out of the context; the chain goes on through it
        kept = [n for n in range(1500) if n != bad_at]
    elif bad_at < 1499:  # a line lost: the entry after it starts the branch (its parent is gone)
        kept = list(range(bad_at + 1, 1500))
    else:
        kept = list(range(1499))
    assert [m.content for m in messages] == [f"q{n}" for n in kept]
