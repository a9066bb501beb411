"""Principles, as pure rules: what a candidate must hold, and who may decide it."""

from resident.principles.rules import MAX_BASIS, MAX_TEXT, candidate, decision_reason

__all__ = ["MAX_BASIS", "MAX_TEXT", "candidate", "decision_reason"]
