"""The one error of the policy: something it needs (settings, rules, the audit log) is
unusable. The plugin then fails closed: tool calls are blocked with this message."""


class PolicyError(Exception):
    """The message names the file at fault (and the line, when there is one)."""
