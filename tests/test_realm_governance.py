"""Realm's governance rules as pure functions: verdicts, their durability, and the feed cursor."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from resident.messages.realm import RealmRecord, Verdict
from resident.realm.governance import (
    DELEGATED_PROMOTION,
    Precedent,
    content_key,
    different_content_reason,
    judge,
    next_cursor,
)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(
    record_id: str = "r1",
    content: str = "v1",
    *,
    canonical: bool = False,
    delegated: bool = False,
    supersedes: str | None = None,
) -> RealmRecord:
    return RealmRecord(
        id=record_id,
        digest=digest(content),
        owner="deven",
        bank="agent_core/deven",
        scope="AGENT_CORE",
        kind="world",
        summary="summary",
        body=content,
        canonical=canonical,
        delegated=delegated,
        recorded_at=1.0,
        supersedes=supersedes,
    )


class Ledger:
    """What Realm remembers, in memory: verdicts by (id, digest), the accepted record by id, and
    the content of invalidated records."""

    def __init__(self) -> None:
        self.verdicts: dict[tuple[str, str], Verdict] = {}
        self.accepted: dict[str, RealmRecord] = {}
        self.invalidated: dict[str, str] = {}

    def replicate(self, records: list[RealmRecord], at: float) -> list[Verdict]:
        answers = []
        for item in records:
            key = (item.id, item.digest)
            accepted = self.accepted.get(item.id)
            precedent = Precedent(
                prior=self.verdicts.get(key),
                accepted_digest=None if accepted is None else accepted.digest,
                invalidated_with_content=self.invalidated.get(content_key(item)),
            )
            verdict = judge(item, precedent, at=at)
            self.verdicts.setdefault(key, verdict)
            if verdict.status == "accepted":
                self.accepted.setdefault(item.id, item)
            answers.append(verdict)
        return answers

    def invalidate(self, record_id: str) -> None:
        self.invalidated.setdefault(content_key(self.accepted[record_id]), record_id)


def test_a_new_record_is_accepted_without_reason() -> None:
    verdict = judge(record(), Precedent(prior=None, accepted_digest=None), at=5.0)
    assert verdict == Verdict(status="accepted", reason="", at=5.0)


def test_canonical_record_through_delegated_path_is_a_conflict_with_the_exact_reason() -> None:
    verdict = judge(record(canonical=True, delegated=True), Precedent(prior=None, accepted_digest=None), at=5.0)
    assert verdict.status == "conflict"
    assert verdict.reason == "non-canonical memory cannot be promoted through a delegated path"
    assert verdict.reason == DELEGATED_PROMOTION


def test_canonical_record_from_the_owner_and_delegated_plain_record_are_accepted() -> None:
    assert judge(record(canonical=True), Precedent(prior=None, accepted_digest=None), at=0).status == "accepted"
    assert judge(record(delegated=True), Precedent(prior=None, accepted_digest=None), at=0).status == "accepted"


def test_other_digest_under_an_accepted_id_is_a_conflict_naming_the_id() -> None:
    verdict = judge(record("r7", "v2"), Precedent(prior=None, accepted_digest=digest("v1")), at=0)
    assert verdict.status == "conflict"
    assert verdict.reason == "record r7 already replicated with different content"
    assert verdict.reason == different_content_reason("r7")


def test_same_digest_under_an_accepted_id_is_accepted_again() -> None:
    assert judge(record("r1", "v1"), Precedent(prior=None, accepted_digest=digest("v1")), at=0).status == "accepted"


def test_a_prior_verdict_is_returned_unchanged_whatever_the_flags() -> None:
    conflict = Verdict(status="conflict", reason=DELEGATED_PROMOTION, at=1.0)
    assert judge(record(), Precedent(prior=conflict, accepted_digest=None), at=9.0) is conflict
    accepted = Verdict(status="accepted", at=1.0)
    assert judge(record(canonical=True, delegated=True), Precedent(prior=accepted), at=9.0) is accepted


def test_a_corrected_version_after_a_governance_conflict_is_judged_afresh() -> None:
    ledger = Ledger()
    first, corrected = ledger.replicate(
        [record("r1", "v1", canonical=True, delegated=True), record("r1", "v2", canonical=True)], at=1.0
    )
    assert first.status == "conflict"
    assert corrected.status == "accepted"


def test_a_duplicate_within_one_batch_is_judged_against_the_first() -> None:
    ledger = Ledger()
    answers = ledger.replicate([record("r1", "v1"), record("r1", "v1"), record("r1", "v2")], at=1.0)
    assert [answer.status for answer in answers] == ["accepted", "accepted", "conflict"]


def test_a_readmit_that_supersedes_an_invalidated_record_without_new_content_is_a_conflict() -> None:
    ledger = Ledger()
    ledger.replicate([record("r1", "the runbook is in the old wiki")], at=1.0)
    ledger.invalidate("r1")
    (same,) = ledger.replicate([record("r2", "the runbook is in the old wiki", supersedes="r1")], at=2.0)
    assert (same.status, same.rule) == ("conflict", "supersedes_invalidated")
    assert "r1" in same.reason
    (corrected,) = ledger.replicate([record("r3", "the runbook is in the handbook", supersedes="r1")], at=3.0)
    assert corrected.status == "accepted"


def test_content_equal_to_an_invalidated_records_is_a_conflict_under_any_id() -> None:
    ledger = Ledger()
    ledger.replicate([record("r1", "stale fact")], at=1.0)
    ledger.invalidate("r1")
    (again,) = ledger.replicate([record("r9", "stale fact", canonical=True)], at=2.0)
    assert (again.status, again.rule) == ("conflict", "invalidated_content")
    # What was accepted before the invalidation keeps its verdict: answers never change.
    (before,) = ledger.replicate([record("r1", "stale fact")], at=3.0)
    assert before.status == "accepted"


def test_next_cursor_is_the_last_seq_given_or_since_when_nothing_is_new() -> None:
    assert next_cursor(0, []) == 0
    assert next_cursor(7, []) == 7
    assert next_cursor(3, [4, 5, 9]) == 9


records_strategy = st.builds(
    record,
    record_id=st.sampled_from(["a", "b", "c"]),
    content=st.sampled_from(["v1", "v2", "v3"]),
    canonical=st.booleans(),
    delegated=st.booleans(),
)
batches_strategy = st.lists(st.lists(records_strategy, max_size=6), max_size=6)


@given(batches_strategy)
def test_replaying_any_sequence_of_requests_gives_the_same_answers(batches: list[list[RealmRecord]]) -> None:
    ledger = Ledger()
    first = [ledger.replicate(batch, at=1.0) for batch in batches]
    again = [ledger.replicate(batch, at=2.0) for batch in batches]
    assert again == first


@given(batches_strategy)
def test_an_id_is_accepted_with_one_digest_at_most(batches: list[list[RealmRecord]]) -> None:
    ledger = Ledger()
    accepted: dict[str, set[str]] = {}
    for batch in batches:
        for item, verdict in zip(batch, ledger.replicate(batch, at=1.0), strict=True):
            if verdict.status == "accepted":
                accepted.setdefault(item.id, set()).add(item.digest)
    assert all(len(digests) == 1 for digests in accepted.values())


@given(batches_strategy)
def test_a_first_seen_delegated_canonical_record_is_never_accepted(batches: list[list[RealmRecord]]) -> None:
    ledger = Ledger()
    for batch in batches:
        for item in batch:
            seen_before = (item.id, item.digest) in ledger.verdicts
            (verdict,) = ledger.replicate([item], at=1.0)
            if item.canonical and item.delegated and not seen_before:
                assert verdict.status == "conflict"


@given(batches_strategy, st.lists(st.sampled_from(["a", "b", "c"]), max_size=3), batches_strategy)
def test_content_realm_invalidated_is_never_accepted_again_under_a_new_version(
    before: list[list[RealmRecord]], invalidated: list[str], after: list[list[RealmRecord]]
) -> None:
    ledger = Ledger()
    for batch in before:
        ledger.replicate(batch, at=1.0)
    for record_id in invalidated:
        if record_id in ledger.accepted:
            ledger.invalidate(record_id)
    for batch in after:
        for item in batch:
            seen_before = (item.id, item.digest) in ledger.verdicts
            (verdict,) = ledger.replicate([item], at=2.0)
            if content_key(item) in ledger.invalidated and not seen_before:
                assert verdict.status == "conflict"


def test_an_invalidated_id_is_refused_whatever_was_said_of_it_before() -> None:
    # A home that imported an export of an invalidated record pushes the very same (id, digest) again.
    accepted = judge(record(), Precedent(), at=1.0)
    assert accepted.status == "accepted"
    again = judge(record(), Precedent(prior=accepted, invalidated_because="withdrawn by the owner"), at=2.0)
    assert (again.status, again.rule) == ("conflict", "invalidated")
    assert "withdrawn by the owner" in again.reason


def test_content_is_compared_normalized_so_case_spacing_and_compatibility_forms_are_the_same() -> None:
    invalidated = record("r1", "Deploy  the API\u00a0first")
    fullwidth_d = "\uff24"  # NFKC makes it a plain D
    variants = (
        "deploy the api first", "DEPLOY THE API FIRST", " Deploy\tthe\nAPI first ", f"{fullwidth_d}eploy the API first"
    )
    for variant in variants:
        assert content_key(record("r2", variant)) == content_key(invalidated), variant
        verdict = judge(record("r2", variant), Precedent(invalidated_with_content="r1"), at=1.0)
        assert verdict.rule == "invalidated_content"
    assert content_key(record("r3", "deploy the api second")) != content_key(invalidated)
