"""No subject ever sees a knowledge entry it is not entitled to, on any read surface.

The entitlement below is written from the spec, apart from the code: the home's owner sees every
entry; a member sees an entry only through a registered repository of the entry's project that
lists it (and, for a member session, only the repository of its work), and then the project's
entries and its own private ones. Hypothesis draws subjects, sessions, projects and repositories
against one home holding entries of every state, visibility and owner.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident import Runtime
from resident.errors import EntryNotFound, NotVisible
from resident.knowledge.visibility import Subject
from resident.messages.knowledge import KnowledgeEntry
from resident.messages.knowledge_calls import EntriesQuery, EntryQuery
from resident.runtime.caller import Caller
from resident.runtime.context import Call
from resident.runtime.knowledge.banks import entries, prepared_context
from resident.runtime.knowledge.banks import entry as entry_of
from tests.knowledge_helpers import candidate, entries_of, evidence_chain, open_knowledge, work_item

REPOSITORIES = {"alpha": ("deven", "alice"), "beta": ("alice", "oliver", "victor")}
MEMBERS = (None, "samuel", "deven", "alice", "oliver", "victor")
PLACES = ("alpha", "beta", "gamma")


def entitled(member: str | None, session: frozenset[str] | None, entry: KnowledgeEntry) -> bool:
    if member is None:
        return True
    members = REPOSITORIES.get(entry.repository)
    if members is None or entry.project != entry.repository or member not in members:
        return False
    if session is not None and entry.repository not in session:
        return False
    return entry.visibility == "project" or entry.owner == member


def populate(rt: Runtime, tmp_path: Path) -> None:
    for name, members in REPOSITORIES.items():
        tree = tmp_path / name
        tree.mkdir()
        (tree / "writer.py").write_text(f"# {name}\n", encoding="utf-8")
        rt.knowledge.register_repository(name, tree, members=members)
    alpha, beta = work_item("alpha"), work_item("beta")
    evidence_chain(rt, work=alpha, proposal=candidate("alpha project"))
    evidence_chain(rt, work=alpha, proposal=candidate("alpha deven private", visibility="private"))
    evidence_chain(rt, member="alice", reviewer="deven", work=alpha,
                   proposal=candidate("alpha alice private", visibility="private"))
    evidence_chain(rt, member="alice", reviewer=None, work=alpha, proposal=candidate("alpha candidate"))
    evidence_chain(rt, member="oliver", reviewer="alice", auditor="victor", work=beta,
                   proposal=candidate("beta project"))
    evidence_chain(rt, member="alice", reviewer="oliver", auditor="victor", work=beta,
                   proposal=candidate("beta alice private", visibility="private"))
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_text(
        '{"project": "alpha", "repository": "alpha", "kind": "fact", "title": "old alpha", "body": "x"}\n'
        '{"project": "gamma", "repository": "gamma", "kind": "fact", "title": "old gamma", "body": "y"}\n'
        '{"project": "alpha", "repository": "alpha", "kind": "fact", "title": "old private", "body": "z",'
        ' "visibility": "private", "owner": "deven"}\n',
        encoding="utf-8",
    )
    rt.knowledge.import_legacy(legacy)


@pytest.mark.slow
def test_no_subject_ever_sees_an_entry_it_is_not_entitled_to(tmp_path: Path) -> None:
    with open_knowledge(tmp_path / "home") as rt:
        populate(rt, tmp_path)
        stored = entries_of(rt)
        states = {entry.state for entry in stored.values()}
        assert states == {"verified", "candidate", "legacy_unverified"}
        # Not vacuous: a member of both repositories gets context in each, and only its due.
        assert {e.title for e in rt.knowledge.context("alice", "alpha", "alpha")} == {
            "alpha project", "alpha alice private",
        }
        assert {e.title for e in rt.knowledge.context("alice", "beta", "beta")} == {
            "beta project", "beta alice private",
        }

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            member=st.sampled_from(MEMBERS),
            session=st.none() | st.frozensets(st.sampled_from(PLACES), max_size=2),
            project=st.sampled_from(PLACES),
            repository=st.sampled_from(PLACES),
        )
        def check(member: str | None, session: frozenset[str] | None, project: str, repository: str) -> None:
            subject = Subject(member=member, repositories=session if member is not None else None)
            # A Subject held to repositories is how a session reads: in process, the services take it as it is.
            listed = list(entries(rt._services, Call(Caller()), EntriesQuery(subject)).entries)  # type: ignore[arg-type]
            assert all(entitled(member, subject.repositories, entry) for entry in listed)
            assert {e.id for e in listed} == {e.id for e in stored.values()
                                              if entitled(member, subject.repositories, e)}
            for entry in stored.values():
                if entitled(member, subject.repositories, entry):
                    assert entry_of(rt._services, Call(Caller()), EntryQuery(entry.id, subject)).id == entry.id  # type: ignore[arg-type]
                else:
                    with pytest.raises(EntryNotFound):
                        entry_of(rt._services, Call(Caller()), EntryQuery(entry.id, subject))  # type: ignore[arg-type]
            try:
                served = prepared_context(rt._services, subject, project, repository, None)
            except NotVisible:
                served = []
            for item in served:
                entry = stored[item.id]
                assert entitled(member, subject.repositories, entry)
                assert (entry.project, entry.repository, entry.state) == (project, repository, "verified")

        check()
