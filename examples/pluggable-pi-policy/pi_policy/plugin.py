"""The policy plugin: a ``trylast`` gate on every tool call, a ``trylast`` redactor on
every tool result, and an audit line for every tool call.

It fails closed: when the settings or the rules cannot be loaded, or the audit log cannot
be written, every tool call is blocked with a reason naming the file at fault, and tool
output that cannot be redacted is withheld.
"""

from __future__ import annotations

from typing import Any

from pi_hookspecs import (
    ExtensionContext,
    TextContent,
    ToolCallEvent,
    ToolCallResult,
    ToolExecutionEndEvent,
    ToolResultEvent,
    ToolResultPatch,
    hookimpl,
)

from .audit import AuditLog
from .errors import PolicyError
from .redact import redact_text, redact_value
from .rules import LoadedRules, RulesFile
from .settings import Config, load_config
from .verdict import Verdict, judge

PLUGIN_NAME = "policy"


class PolicyPlugin:
    """pi creates one instance per session runtime: settings are read once per runtime
    (``/reload`` reads them again), the rules file whenever it changes."""

    def __init__(self) -> None:
        self._config: Config | str | None = None
        self._rules_file: RulesFile | None = None
        self._audit = AuditLog(None)
        self._judged: set[str] = set()

    # ------------------------------------------------------------------ loading

    def config(self) -> Config:
        if self._config is None:
            try:
                self._config = load_config()
            except PolicyError as exc:
                self._config = str(exc)
            else:
                self._rules_file = RulesFile(self._config.rules_file)
                self._audit = AuditLog(self._config.audit_log)
        if isinstance(self._config, str):
            raise PolicyError(self._config)
        return self._config

    def rules(self) -> LoadedRules:
        """The current rules; raise :class:`PolicyError` naming the file at fault."""
        self.config()
        assert self._rules_file is not None
        return self._rules_file.load()

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def session_start(self) -> None:
        # Broken settings or rules are reported when the session starts (naming this
        # plugin and the file); tool calls are blocked until they are fixed.
        self.rules()

    @hookimpl(trylast=True)  # after every other plugin: judge the input as they left it
    def tool_call(self, event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        self._judged.add(event.tool_call_id)
        try:
            rules = self.rules()
        except PolicyError as exc:
            verdict, redaction = Verdict(False, "rules", str(exc)), None
        else:
            verdict, redaction = judge(rules, event.tool_name, event.input, ctx.cwd), rules
        record = self._record(event.tool_name, event.tool_call_id, event.parent_tool_call_id, ctx)
        record["input"] = redact_value(event.input, redaction.redact) if redaction else "(withheld: no rules)"
        record.update(verdict="allow" if verdict.allowed else "block", rule=verdict.rule, reason=verdict.reason)
        try:
            self._audit.write(record)
        except PolicyError as exc:
            return ToolCallResult(block=True, reason=f"{PLUGIN_NAME}: {exc}")
        if verdict.allowed:
            return None
        return ToolCallResult(block=True, reason=f"{PLUGIN_NAME}: {verdict.reason}")

    @hookimpl
    def tool_execution_end(self, event: ToolExecutionEndEvent, ctx: ExtensionContext) -> None:
        """Audit the calls the gate never saw: unknown tools, invalid arguments, calls
        blocked by an earlier gate."""
        if event.tool_call_id in self._judged:
            self._judged.discard(event.tool_call_id)
            return
        record = self._record(event.tool_name, event.tool_call_id, event.parent_tool_call_id, ctx)
        try:
            reason = redact_text(event.result.text_content(), self.rules().redact)[:500]
        except PolicyError:
            reason = "(withheld: no rules)"
        record.update(verdict="not-run", rule=None, reason=reason)
        self._audit.write(record)

    @hookimpl(trylast=True)  # after the other transforms: redact what reaches the model
    def tool_result(self, event: ToolResultEvent) -> ToolResultPatch | None:
        try:
            rules = self.rules().redact
        except PolicyError as exc:  # cannot redact: withhold the output
            text = f"{PLUGIN_NAME}: tool output withheld: {exc}"
            return ToolResultPatch(content=[TextContent(text=text)], details=None, is_error=True)
        if not rules:
            return None
        patch: dict[str, Any] = {}
        content = [
            block.model_copy(update={"text": redact_text(block.text, rules)})
            if isinstance(block, TextContent)
            else block
            for block in event.content
        ]
        if content != event.content:
            # Replacing content drops structured_content unless it is given again.
            patch.update(content=content, structured_content=redact_value(event.structured_content, rules))
        for name in ("details", "structured_content"):
            value = getattr(event, name)
            if name not in patch and (redacted := redact_value(value, rules)) != value:
                patch[name] = redacted
        return ToolResultPatch.model_validate(patch) if patch else None

    # ------------------------------------------------------------------ audit

    @staticmethod
    def _record(tool: str, call_id: str, parent_id: str | None, ctx: ExtensionContext) -> dict[str, Any]:
        return {
            "session": ctx.session_manager.get_session_id(),
            "cwd": ctx.cwd,
            "tool": tool,
            "toolCallId": call_id,
            "parentToolCallId": parent_id,
        }
