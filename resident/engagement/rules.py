"""Entry rules: `[engagement]` in `resident.toml` maps where a session starts to a domain and project.

    [engagement]
    threshold = 0.8            # a judge below this asks the owner instead of deciding

    [[engagement.rules]]
    directory = "~/work/acme"  # the session's working directory is this one or inside it
    harness = "codex"          # and (optional) it runs in this harness
    domain = "work"
    project = "acme"

The first rule whose every condition holds decides; a rule names at least one condition and at
least one of domain and project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from resident.errors import ConfigError
from resident.messages.engagement import DOMAINS, Domain, EngagementContext

__all__ = [
    "DEFAULT_THRESHOLD",
    "EngagementConfig",
    "EntryRule",
    "engagement_table",
    "matching_rule",
    "parse_engagement",
]

DEFAULT_THRESHOLD = 0.8
_RULE_KEYS = {"directory", "harness", "task", "domain", "project"}


@dataclass(frozen=True, slots=True)
class EntryRule:
    """Conditions on a session's context, and the engagement they imply."""

    directory: str | None = None
    harness: str | None = None
    task: str | None = None
    domain: Domain | None = None
    project: str | None = None

    def matches(self, context: EngagementContext) -> bool:
        if self.directory is not None and not _inside(context.directory, self.directory):
            return False
        if self.harness is not None and context.harness != self.harness:
            return False
        return self.task is None or self.task.casefold() in context.task.casefold()


@dataclass(frozen=True, slots=True)
class EngagementConfig:
    threshold: float = DEFAULT_THRESHOLD
    rules: tuple[EntryRule, ...] = ()


def _inside(directory: str, root: str) -> bool:
    """Whether `directory` is `root` or below it, comparing whole path components."""
    if not directory:
        return False
    # Lexically normalised, so `acme/../other` is not taken for a place inside `acme`.
    here = PurePosixPath(os.path.normpath(Path(directory).expanduser()))
    top = PurePosixPath(os.path.normpath(Path(root).expanduser()))
    return here == top or top in here.parents


def matching_rule(rules: tuple[EntryRule, ...], context: EngagementContext) -> EntryRule | None:
    return next((rule for rule in rules if rule.matches(context)), None)


def parse_engagement(data: Any, where: str) -> EngagementConfig:
    """The `[engagement]` table of `resident.toml` (`ConfigError` naming the problem)."""
    if data is None:
        return EngagementConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: `engagement` must be a table ([engagement])")
    unknown = sorted(set(data) - {"threshold", "rules"})
    if unknown:
        raise ConfigError(f"{where}: unknown key `{unknown[0]}` in [engagement]; allowed: rules, threshold")
    threshold = data.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"{where}: [engagement] threshold must be a number from 0 to 1")
    rules = data.get("rules", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{where}: [engagement] rules must be an array of tables ([[engagement.rules]])")
    return EngagementConfig(float(threshold), tuple(_rule(rule, f"{where}: [[engagement.rules]] #{n}")
                                                    for n, rule in enumerate(rules, 1)))


def _rule(data: Any, where: str) -> EntryRule:
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(data) - _RULE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key `{unknown[0]}`; allowed: {', '.join(sorted(_RULE_KEYS))}")
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: `{key}` must be a non-empty string")
    if data.get("domain") is not None and data["domain"] not in DOMAINS:
        raise ConfigError(f"{where}: `domain` must be \"work\" or \"personal\"")
    if not {"directory", "harness", "task"} & set(data):
        raise ConfigError(f"{where} needs a condition: directory, harness or task")
    if not {"domain", "project"} & set(data):
        raise ConfigError(f"{where} must say what it implies: domain and/or project")
    return EntryRule(
        directory=data.get("directory"), harness=data.get("harness"), task=data.get("task"),
        domain=data.get("domain"), project=data.get("project"),
    )


def engagement_table(config: EngagementConfig) -> dict[str, Any] | None:
    """The `[engagement]` table `resident.toml` is written with (None for the defaults)."""
    if config == EngagementConfig():
        return None
    rules = [
        {key: value for key in sorted(_RULE_KEYS) if (value := getattr(rule, key)) is not None}
        for rule in config.rules
    ]
    return {"threshold": config.threshold, "rules": rules}
