"""Judges: what engagement a session's context implies, as a typed decision with a confidence.

A judge is anything with a `name` and `decide(context, examples)`; the runtime asks it only when no
explicit switch holds and no entry rule matches, and asks the owner instead whenever its confidence
is below the threshold. A judge may call a remote model (that is a normal binding), so the runtime
calls it outside its actors.

The default, `KeywordJudge`, is a small multinomial naive Bayes classifier over the terms of the
context (task, directory, harness, counterpart — analysed like recall's keyword search), trained
on the member's own examples: its explicit switches made during a session and the owner's answers.
It is deterministic, needs no model, and is honest about what it has not seen: its confidence is
the winning label's posterior times the share of the context's terms that appear in any example, so
a context unlike every example is never confident however sure the posterior looks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from resident.memory.text import term_ids
from resident.messages.engagement import Domain, EngagementContext, EngagementDecision, EngagementExample

__all__ = ["Judge", "KeywordJudge", "context_text"]

_SMOOTHING = 1.0


class Judge(Protocol):
    """Decides a member's engagement from a session's context and the member's examples."""

    name: str

    def decide(self, context: EngagementContext, examples: Sequence[EngagementExample]) -> EngagementDecision:
        """A decision for `context`; confidence 0..1 (below the threshold, the owner is asked)."""


def context_text(context: EngagementContext) -> str:
    """The text a context is judged by."""
    return "\n".join(part for part in (context.task, context.directory, context.harness, context.counterpart) if part)


class KeywordJudge:
    """Naive Bayes over context terms, trained on the member's examples (see the module docstring)."""

    name = "keyword"

    def decide(self, context: EngagementContext, examples: Sequence[EngagementExample]) -> EngagementDecision:
        labels: list[tuple[str, str]] = sorted({(e.domain or "", e.project or "") for e in examples})
        terms = np.unique(term_ids(context_text(context)))
        if not labels or not len(terms):
            return EngagementDecision(domain=None, project=None, confidence=0.0, judge=self.name,
                                      reason="no examples yet" if not labels else "the context has no words")
        vocabulary, counts, priors = self._train(labels, examples)
        known = np.isin(terms, vocabulary)
        coverage = float(known.mean())
        if not known.any():
            return EngagementDecision(domain=None, project=None, confidence=0.0, judge=self.name,
                                      reason="no word of the context appears in any example")
        columns = np.searchsorted(vocabulary, terms[known])
        likelihood = np.log((counts[:, columns] + _SMOOTHING) /
                            (counts.sum(axis=1, keepdims=True) + _SMOOTHING * len(vocabulary)))
        scores = np.log(priors) + likelihood.sum(axis=1)
        posterior = np.exp(scores - scores.max())
        posterior /= posterior.sum()
        best = int(np.argmax(posterior))
        domain, project = labels[best]
        return EngagementDecision(
            domain=_domain(domain), project=project or None,
            confidence=round(float(posterior[best]) * coverage, 6), judge=self.name,
            reason=f"posterior {float(posterior[best]):.2f} over {len(labels)} labels; "
                   f"{coverage:.0%} of the context's words seen in {len(examples)} examples",
        )

    @staticmethod
    def _train(
        labels: list[tuple[str, str]], examples: Sequence[EngagementExample]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted vocabulary, per-label term counts over it, and label priors."""
        index = {label: row for row, label in enumerate(labels)}
        rows: list[np.ndarray] = []
        example_terms: list[np.ndarray] = []
        for example in examples:
            found = term_ids(context_text(example.context))
            example_terms.append(found)
            rows.append(np.full(len(found), index[(example.domain or "", example.project or "")]))
        all_terms = np.concatenate(example_terms) if example_terms else np.zeros(0, dtype=np.uint64)
        vocabulary = np.unique(all_terms)
        counts = np.zeros((len(labels), len(vocabulary)))
        if len(all_terms):
            np.add.at(counts, (np.concatenate(rows), np.searchsorted(vocabulary, all_terms)), 1.0)
        label_counts = np.bincount([index[(e.domain or "", e.project or "")] for e in examples], minlength=len(labels))
        priors = (label_counts + _SMOOTHING) / (label_counts.sum() + _SMOOTHING * len(labels))
        return vocabulary, counts, priors


def _domain(value: str) -> Domain | None:
    if value == "work":
        return "work"
    if value == "personal":
        return "personal"
    return None
