"""Token estimates, the trigger and the settings."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from compaction_helpers import Session, text_of_size

from pi_core.compaction import (
    BranchSummarySettings,
    CompactionSettings,
    SettingsValueError,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    should_compact,
)
from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UnknownMessage,
    Usage,
    UserMessage,
)

# ----------------------------------------------------------------------------- estimate_tokens


def test_user_text_is_chars_over_four_rounded_up() -> None:
    assert estimate_tokens(UserMessage(content="abcd" * 3)) == 3
    assert estimate_tokens(UserMessage(content="abcde")) == 2
    assert estimate_tokens(UserMessage(content="")) == 0


def test_images_count_as_4800_chars() -> None:
    image = ImageContent(data="AAAA" * 10_000, mime_type="image/png")
    user = UserMessage(content=[TextContent(text="abcd"), image])
    assert estimate_tokens(user) == (4 + 4800) // 4
    result = ToolResultMessage(tool_call_id="c", tool_name="read", content=[image, image])
    assert estimate_tokens(result) == 2 * 1200
    assert estimate_tokens(CustomMessage(custom_type="n", content=[image])) == 1200


def test_assistant_counts_text_thinking_and_tool_calls_as_compact_json() -> None:
    call = ToolCall(id="1", name="edit", arguments={"path": "a.py", "n": [1, 2]})
    message = AssistantMessage(content=[TextContent(text="1234"), ThinkingContent(thinking="12345678"), call])
    arguments = '{"path":"a.py","n":[1,2]}'
    assert estimate_tokens(message) == -(-(4 + 8 + len("edit") + len(arguments)) // 4)


def test_other_roles() -> None:
    assert estimate_tokens(BashExecutionMessage(command="ls", output="a\nb")) == 2  # 5 chars
    assert estimate_tokens(CompactionSummaryMessage(summary="x" * 40)) == 10
    assert estimate_tokens(BranchSummaryMessage(summary="x" * 41)) == 11
    system = SystemMessage(content="x" * 8, sections={"tools": "y" * 8, "gone": None})
    assert estimate_tokens(system) == 4
    assert estimate_tokens(UnknownMessage(role="mystery")) == 0


# ----------------------------------------------------------------------------- context estimates


def _assistant(total: int, stop_reason: str = "stop") -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text="ok")], usage=Usage(total_tokens=total), stop_reason=stop_reason)


def test_usage_of_last_assistant_plus_estimated_trailing_messages() -> None:
    messages = [UserMessage(content="x" * 400), _assistant(5000), UserMessage(content=text_of_size(30))]
    estimate = estimate_context_tokens(messages)
    assert (estimate.tokens, estimate.usage_tokens, estimate.trailing_tokens) == (5030, 5000, 30)
    assert estimate.last_usage_index == 1


def test_aborted_error_and_zero_usage_are_not_trusted() -> None:
    messages = [
        UserMessage(content=text_of_size(10)),
        _assistant(5000),
        _assistant(9000, "aborted"),
        _assistant(9000, "error"),
        _assistant(0),
    ]
    estimate = estimate_context_tokens(messages)
    assert estimate.last_usage_index == 1
    assert estimate.usage_tokens == 5000
    assert estimate.trailing_tokens == 3  # three "ok" replies, 1 token each


def test_without_usage_everything_is_estimated() -> None:
    messages = [UserMessage(content=text_of_size(10)), _assistant(5000)]
    assert estimate_context_tokens(messages, use_usage=False).tokens == 11
    assert estimate_context_tokens([UserMessage(content=text_of_size(7))]).last_usage_index is None


def test_calculate_context_tokens_falls_back_to_components() -> None:
    assert calculate_context_tokens(Usage(total_tokens=77, input=1)) == 77
    assert calculate_context_tokens(Usage(input=10, output=5, cache_read=100, cache_write=3)) == 118


def test_projected_estimate_ignores_usage_older_than_a_context_edit() -> None:
    session = Session()
    session.user(text_of_size(100))
    big = session.assistant("x", usage=Usage(total_tokens=50_000))
    assert estimate_projected_context_tokens(session.entries).tokens == 50_000
    session.edit(big.id, None)  # the edit makes the reported usage stale
    assert estimate_projected_context_tokens(session.entries).tokens == 100


def test_projected_estimate_ignores_usage_from_before_a_compaction() -> None:
    session = Session()
    u = session.user(text_of_size(100))
    session.assistant("x", usage=Usage(total_tokens=90_000))
    session.compaction(text_of_size(50), u.id)
    estimate = estimate_projected_context_tokens(session.entries)
    assert estimate.last_usage_index is None
    assert estimate.tokens == 50 + 100 + 1


# ----------------------------------------------------------------------------- should_compact


def test_should_compact_threshold() -> None:
    settings = CompactionSettings()
    assert not should_compact(128_000 - 16_384, 128_000, settings)
    assert should_compact(128_000 - 16_384 + 1, 128_000, settings)
    assert not should_compact(10**9, 128_000, CompactionSettings(enabled=False))
    assert should_compact(101, 1000, CompactionSettings(reserve_tokens=900))


# ----------------------------------------------------------------------------- settings


def test_settings_defaults_and_camel_case() -> None:
    assert CompactionSettings().to_json() == {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}
    settings = CompactionSettings.from_settings({"compaction": {"enabled": False, "keepRecentTokens": 5}})
    assert (settings.enabled, settings.reserve_tokens, settings.keep_recent_tokens) == (False, 16384, 5)
    assert CompactionSettings.from_settings(None) == CompactionSettings()
    assert CompactionSettings.coerce({"reserveTokens": 7}).reserve_tokens == 7
    assert CompactionSettings.coerce({"compaction": {"reserveTokens": 8}, "theme": "dark"}).reserve_tokens == 8


def test_model_overrides_fall_back_per_field() -> None:
    data = {
        "compaction": {
            "reserveTokens": 1000,
            "keepRecentTokens": 2000,
            "modelOverrides": {"prov/big/model": {"reserveTokens": 400_000, "enabled": False}},
        }
    }
    settings = CompactionSettings.from_settings(data, "prov/big/model")
    assert (settings.enabled, settings.reserve_tokens, settings.keep_recent_tokens) == (True, 400_000, 2000)
    assert CompactionSettings.from_settings(data, "prov/other").reserve_tokens == 1000


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"compaction": {"reserveTokens": -1}}, "compaction.reserveTokens"),
        ({"compaction": {"keepRecentTokens": "20000"}}, "compaction.keepRecentTokens"),
        ({"compaction": {"keepRecentTokens": 1.5}}, "non-negative integer"),
        ({"compaction": {"reserveTokens": True}}, "non-negative integer"),
        ({"compaction": {"reserveTokens": 2**53}}, "non-negative integer"),
        ({"compaction": {"enabled": "yes"}}, "true or false"),
        ({"compaction": []}, "compaction must be an object"),
        ({"compaction": {"modelOverrides": {"p/m": 5}}}, 'modelOverrides["p/m"] must be an object'),
        ({"compaction": {"modelOverrides": {"p/m": {"reserveTokens": -5}}}}, 'modelOverrides["p/m"].reserveTokens'),
    ],
)
def test_invalid_settings_are_reported(data: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsValueError, match=message.replace("[", r"\[").replace(".", r"\.")):
        CompactionSettings.from_settings(data, "p/m")


def test_coerce_accepts_any_settings_object() -> None:
    @dataclass(frozen=True)
    class ResourcesStyle:
        enabled: bool = True
        reserve_tokens: int = 10
        keep_recent_tokens: int = 20

    assert CompactionSettings.coerce(ResourcesStyle()).keep_recent_tokens == 20


def test_branch_summary_settings() -> None:
    settings = BranchSummarySettings.from_settings({"branchSummary": {"reserveTokens": 1, "skipPrompt": True}})
    assert (settings.reserve_tokens, settings.skip_prompt) == (1, True)
    assert BranchSummarySettings.from_settings({}) == BranchSummarySettings()
