"""Where verified knowledge meets the execution records: candidates at a step's finish, promotion.

The evidence resolver reads, in one read transaction, everything the acceptance gate
(`resident.knowledge.evidence.assess`) may ask about: the candidate, its implementation step, the
reviews and audits recorded of that step, and the grants they all ran under. A passing verdict is
written as `EntryVerified` naming the entry version and each execution's seal as read; the writer
refuses it if any of them changed meanwhile. When the candidate replaces a verified decision, that
decision becomes `superseded` in the same transaction.

Promotion is tried on its own after the owner accepts an implementation step and after each review
or audit of one finishes; `rt.knowledge.promote` tries it on demand and says why it failed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from resident.errors import CandidateInvalid, EntryNotFound, PromotionRefused, ResidentError
from resident.ids import new_id
from resident.knowledge.candidate import check_step, parse_candidate, propose
from resident.knowledge.evidence import GateDecision, assess
from resident.messages.coordination import Execution, Outcome, StepResult
from resident.messages.knowledge import EntrySuperseded, EntryVerified, KnowledgeEntry
from resident.messages.store import Commit
from resident.runtime.context import Context
from resident.runtime.knowledge.probe import ProbeFailed, WorkTree
from resident.store.store import Reader
from resident.store.tables import EXECUTIONS, GRANTS, KNOWLEDGE_ENTRIES, KNOWLEDGE_REPOSITORIES

__all__ = ["MAX_CANDIDATE_FILES", "prepare_candidate", "promote", "promote_candidates_of", "require_promoted"]

logger = logging.getLogger(__name__)

MAX_CANDIDATE_FILES = 256


def prepare_candidate(
    context: Context,
    execution: Execution,
    raw: Mapping[str, Any] | str | bytes,
    *,
    outcome: Outcome,
    result: StepResult,
    files: Iterable[str],
) -> KnowledgeEntry:
    """The candidate entry a finishing step proposes, as the host makes it; `CandidateInvalid` if none may be."""
    if not context.config.knowledge.enabled:
        raise CandidateInvalid("knowledge is off for this home; set `[knowledge] enabled = true` in resident.toml")
    check_step(execution, outcome, result)
    candidate = parse_candidate(raw)
    work = execution.work
    if work is None:  # check_step refused it already; kept for the type checker
        raise CandidateInvalid(f"step {execution.id} has no work item")
    wanted = tuple(dict.fromkeys(files))
    if len(wanted) > MAX_CANDIDATE_FILES:
        raise CandidateInvalid(f"a candidate may name {MAX_CANDIDATE_FILES} files; this step names {len(wanted)}")
    with context.store.reader() as reader:
        repository = reader.get(KNOWLEDGE_REPOSITORIES, work.repository)
        replaced = reader.get(KNOWLEDGE_ENTRIES, candidate.supersedes) if candidate.supersedes else None
    if repository is None or repository.project != work.project:
        raise CandidateInvalid(f"repository {work.repository} of project {work.project} is not registered")
    if execution.member not in repository.members:
        raise CandidateInvalid(f"{execution.member} is not a member of repository {repository.id}")
    if candidate.supersedes is not None and (
        replaced is None or (replaced.project, replaced.repository) != (work.project, work.repository)
        or replaced.state != "verified"
    ):
        raise CandidateInvalid(f"{candidate.supersedes} is not a verified entry of repository {work.repository}")
    tree = WorkTree(repository)
    digests: list[tuple[str, str]] = []
    for path in wanted:
        try:
            digest = tree.digest(path)
        except ProbeFailed as error:
            raise CandidateInvalid(f"the step names {path!r}, which cannot be read: {error}") from None
        if digest is None:
            raise CandidateInvalid(f"the step names {path}, which is not a file of repository {repository.id}")
        digests.append((path, digest))
    return propose(execution, candidate, digests, entry_id=new_id("kn"), now=context.clock.time())


def _resolve(reader: Reader, entry: KnowledgeEntry) -> GateDecision:
    """Gather the evidence the gate may ask about, and ask it."""
    implementation = reader.get(EXECUTIONS, entry.execution) if entry.execution else None
    examinations = [
        step for _, step in reader.items(EXECUTIONS) if implementation is not None and step.reviews == implementation.id
    ]
    grants = dict(reader.items(GRANTS))
    return assess(entry, implementation, examinations, grants)


def promote(context: Context, entry_id: str) -> tuple[KnowledgeEntry, GateDecision]:
    """Run the gate on a candidate and, if it passes, verify it; the entry as it is after, and the verdict."""
    context.check_open()
    now = context.clock.time()
    with context.store.reader() as reader:
        entry = reader.get(KNOWLEDGE_ENTRIES, entry_id)
        if entry is None:
            raise EntryNotFound(f"no knowledge entry {entry_id}")
        decision = _resolve(reader, entry)
        replaced = reader.get(KNOWLEDGE_ENTRIES, entry.supersedes) if entry.supersedes else None
    if not decision.passed:
        return entry, decision
    events: list[Any] = [EntryVerified(at=now, id=entry.id, version=entry.version, evidence=decision.evidence)]
    if replaced is not None and replaced.state == "verified":
        events.append(EntrySuperseded(at=now, id=replaced.id, version=replaced.version, by=entry.id))
    context.write(Commit(events=tuple(events)))
    with context.store.reader() as reader:
        after = reader.get(KNOWLEDGE_ENTRIES, entry.id)
    return (after or entry), decision


def require_promoted(context: Context, entry_id: str) -> KnowledgeEntry:
    """`promote`, raising `PromotionRefused` with every reason when the gate does not pass."""
    entry, decision = promote(context, entry_id)
    if not decision.passed:
        raise PromotionRefused(f"entry {entry_id} stays {entry.state}: " + "; ".join(decision.reasons))
    return entry


def promote_candidates_of(context: Context, execution_id: str) -> None:
    """Try the gate on every candidate the implementation step `execution_id` proposed."""
    with context.store.reader() as reader:
        candidates = [
            entry.id for _, entry in reader.items(KNOWLEDGE_ENTRIES)
            if entry.execution == execution_id and entry.state == "candidate"
        ]
    for entry_id in candidates:
        try:
            _, decision = promote(context, entry_id)
        except ResidentError as error:
            logger.info("candidate %s was not promoted: %s", entry_id, error)
            continue
        if not decision.passed:
            logger.debug("candidate %s stays a candidate: %s", entry_id, "; ".join(decision.reasons))
