"""Coordination in the runtime: the coordinator's records as operations (`records`), a member's live session
under its grant (`session`), and dispatching and settling executions (`executions`)."""

from resident.runtime.coordination.records import finish, issue_grant, recorded, result_digest
from resident.runtime.coordination.session import MAX_WORK_FIELD, Session, dispatch_session, resume_session

__all__ = [
    "MAX_WORK_FIELD", "Session", "dispatch_session", "finish", "issue_grant", "recorded", "result_digest",
    "resume_session",
]
