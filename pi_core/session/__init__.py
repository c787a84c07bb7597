"""The session store: JSONL session files (format v3) shared with the TypeScript pi.

    from pi_core.session import SessionManager, convert_to_llm

    session = SessionManager.continue_recent(cwd)
    context = session.build_session_context()      # messages, model, thinking level
    session.append_message(user_message)

See ``docs/sessions.md`` for the file format, durability and locking guarantees.
"""

from __future__ import annotations

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
