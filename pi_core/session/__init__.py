"""The session store: JSONL session files (format v3) shared with the TypeScript pi.

    from pi_core.session import SessionManager, convert_to_llm

    session = SessionManager.continue_recent(cwd)
    context = session.build_session_context()      # messages, model, thinking level
    session.append_message(user_message)

See ``docs/sessions.md`` for the file format, durability and locking guarantees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Names are imported from their modules when first read: listing sessions is not
# imported by a run that only opens one (see pi_core._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "pi_hookspecs.events": "ProjectedEntry",
        ".context": "MessageSnapshot ModelRef SessionContext SessionProjection",
        ".errors": (
            "AmbiguousSessionError EntryNotFoundError InvalidSessionError SessionClosedError "
            "SessionDiagnostic SessionError SessionLockedError SessionNotFoundError "
            "SessionReadOnlyError"
        ),
        ".listing": "SessionInfo session_info",
        ".manager": "SessionManager",
        ".messages": (
            "BRANCH_SUMMARY_PREFIX BRANCH_SUMMARY_SUFFIX COMPACTION_SUMMARY_PREFIX "
            "COMPACTION_SUMMARY_SUFFIX LlmMessage bash_execution_to_text content_text "
            "convert_to_llm current_system_message"
        ),
        ".paths": "SESSION_DIR_ENV default_session_dir encode_cwd resolve_session_dir sessions_root",
        ".tree": "SessionTreeNode",
    },
)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pi_hookspecs.events import ProjectedEntry

    from .context import MessageSnapshot, ModelRef, SessionContext, SessionProjection
    from .errors import (
        AmbiguousSessionError,
        EntryNotFoundError,
        InvalidSessionError,
        SessionClosedError,
        SessionDiagnostic,
        SessionError,
        SessionLockedError,
        SessionNotFoundError,
        SessionReadOnlyError,
    )
    from .listing import SessionInfo, session_info
    from .manager import SessionManager
    from .messages import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
        LlmMessage,
        bash_execution_to_text,
        content_text,
        convert_to_llm,
        current_system_message,
    )
    from .paths import SESSION_DIR_ENV, default_session_dir, encode_cwd, resolve_session_dir, sessions_root
    from .tree import SessionTreeNode

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "SESSION_DIR_ENV",
    "AmbiguousSessionError",
    "EntryNotFoundError",
    "InvalidSessionError",
    "LlmMessage",
    "MessageSnapshot",
    "ModelRef",
    "ProjectedEntry",
    "SessionClosedError",
    "SessionContext",
    "SessionDiagnostic",
    "SessionError",
    "SessionInfo",
    "SessionLockedError",
    "SessionManager",
    "SessionNotFoundError",
    "SessionProjection",
    "SessionReadOnlyError",
    "SessionTreeNode",
    "bash_execution_to_text",
    "content_text",
    "convert_to_llm",
    "current_system_message",
    "default_session_dir",
    "encode_cwd",
    "resolve_session_dir",
    "session_info",
    "sessions_root",
]
