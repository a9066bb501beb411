"""Skills, as pure rules: the SKILL.md format, weights, forgetting, relevance and the rebuild ledger."""

from resident.skills.forgetting import ForgettingPlan, in_dry_run, plan_forgetting, protected_sessions
from resident.skills.holdings import INITIAL_WEIGHT
from resident.skills.ledger import SkillLedger, differences
from resident.skills.relevance import SkillIndex
from resident.skills.skill_file import ParsedSkill, check_skill_name, parse_natives, parse_skill
from resident.skills.weights import current_weight, score_for

__all__ = [
    "INITIAL_WEIGHT",
    "ForgettingPlan",
    "ParsedSkill",
    "SkillIndex",
    "SkillLedger",
    "check_skill_name",
    "current_weight",
    "differences",
    "in_dry_run",
    "parse_natives",
    "parse_skill",
    "plan_forgetting",
    "protected_sessions",
    "score_for",
]
