"""Coordination in the runtime: the coordinator's records as operations (`records`), a member's live session
under its grant (`session`), and dispatching and settling executions (`executions`)."""

from resident.runtime.coordination.records import (
    accept,
    correct,
    execution,
    executions,
    finish,
    issue_grant,
    progress,
    recorded,
    result_digest,
)
from resident.runtime.coordination.session import MAX_WORK_FIELD, Session, dispatch_session, resume_session

__all__ = [
    "MAX_WORK_FIELD", "Session", "accept", "correct", "dispatch_session", "execution", "executions", "finish",
    "issue_grant", "progress", "recorded", "result_digest", "resume_session",
]
