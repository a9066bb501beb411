"""Engagement, as pure rules: entry rules, judges, resolution order and how it narrows recall."""

from resident.engagement.judge import Judge, KeywordJudge, context_text
from resident.engagement.narrowing import Narrowing, allows, narrowing
from resident.engagement.resolution import Resolution, resolve, restricted_state
from resident.engagement.rules import DEFAULT_THRESHOLD, EngagementConfig, EntryRule, matching_rule, parse_engagement

__all__ = [
    "DEFAULT_THRESHOLD",
    "EngagementConfig",
    "EntryRule",
    "Judge",
    "KeywordJudge",
    "Narrowing",
    "Resolution",
    "allows",
    "context_text",
    "matching_rule",
    "narrowing",
    "parse_engagement",
    "resolve",
    "restricted_state",
]
