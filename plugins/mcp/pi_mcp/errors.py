"""Errors of pluggable-pi-mcp (messages are shown to users and models as they are)."""

from __future__ import annotations


class McpUnavailableError(RuntimeError):
    """A server cannot be reached: it failed to connect, needs sign-in, dropped the
    connection during a call, or was shut down."""


class McpTimeoutError(McpUnavailableError):
    """A request got no answer within the server's timeout (a stdio server is then
    restarted before the next request)."""


class SignInRequiredError(RuntimeError):
    """An OAuth server rejected the connection and there is no usable token: the user
    must sign in (``pi mcp login NAME`` or ``/mcp login NAME``)."""


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order."""
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaf_exceptions(inner))
        return out
    return [exc]


def describe(exc: BaseException) -> str:
    """A one-line description of what went wrong (the most telling leaf of a group)."""
    leaves = leaf_exceptions(exc)
    for leaf in leaves:
        if isinstance(leaf, SignInRequiredError | McpUnavailableError):
            return str(leaf)
    leaf = leaves[0] if leaves else exc
    text = str(leaf).strip()
    if isinstance(leaf, FileNotFoundError) and leaf.filename:
        return f"cannot start {leaf.filename!r}: {leaf.strerror or 'not found'}"
    if isinstance(leaf, OSError) and leaf.strerror:
        return f"{leaf.strerror}" + (f": {leaf.filename}" if leaf.filename else "")
    name = type(leaf).__name__
    if not text:
        return name
    if name in ("MCPError", "RuntimeError", "ValueError", "ConfigValueError", "TimeoutError"):
        return text
    return f"{name}: {text}"


def find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    for leaf in leaf_exceptions(exc):
        if isinstance(leaf, kind):
            return leaf
        cause = leaf.__cause__ or leaf.__context__
        while cause is not None:
            if isinstance(cause, kind):
                return cause
            cause = cause.__cause__ or cause.__context__
    return None
