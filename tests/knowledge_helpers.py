"""Helpers of the knowledge tests: homes with knowledge on, documents in three languages, and the
full chain of real execution records that verifies a candidate (implement, review, audit, accept).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from resident import Runtime
from resident.messages.coordination import Execution, Grant, WorkItem
from resident.messages.knowledge import KnowledgeEntry, PageAdmitted
from resident.messages.store import Commit
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context
from resident.store.tables import KNOWLEDGE_ENTRIES, PAGES

__all__ = [
    "DOCS",
    "Chain",
    "admit_copy",
    "candidate",
    "enable_knowledge",
    "entries_of",
    "evidence_chain",
    "killed_ingest",
    "open_knowledge",
    "owner_grant",
    "work_item",
    "write_docs",
]

DOCS: dict[str, str] = {
    "deploy.md": (
        "# Deploy guide\n\nRun the database migration before the deployment; skipping it crash-looped the API.\n\n"
        "## Rollback\n\nUse the rollback target to return to the previous release within minutes.\n"
    ),
    "despliegue.md": (
        "# Despliegue\n\nLa migración de la base de datos se ejecuta antes del despliegue a producción.\n\n"
        "## Reversión\n\nUna reversión devuelve la versión anterior en pocos minutos.\n"
    ),
    "bushu.md": (
        "# 部署指南\n\n部署前必须先迁移数据库，否则服务会崩溃。\n\n"  # noqa: RUF001 - Chinese punctuation, on purpose
        "## 回滚\n\n回滚会在几分钟内恢复上一个版本。\n"
    ),
}


def enable_knowledge(home: Path, extra: str = "") -> Path:
    """Write a resident.toml (default team) with `[knowledge] enabled = true` into `home`."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "resident.toml").write_text(f"[knowledge]\nenabled = true\n{extra}", encoding="utf-8")
    return home


def open_knowledge(home: Path, **kwargs: Any) -> Runtime:
    """A runtime with knowledge on and no Realm."""
    enable_knowledge(home)
    return Runtime.open(home, realm="none", **kwargs)


def write_docs(folder: Path, docs: dict[str, str] = DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def admit_copy(rt: Runtime, query: str, bank: str, page_id: str) -> None:
    """Copy the handbook's best page for `query` into a new `bank` as `page_id`, written straight to
    LMDB as a crashed ingest leaves it: nothing tells the indexer."""
    [hit] = rt.knowledge.search("handbook", query, 1)
    with rt._internal.store.reader() as reader:
        page = reader.get(PAGES, hit.id)
    assert page is not None
    rt.knowledge.create_bank(bank)
    copy = msgspec.structs.replace(page, id=page_id, bank=bank)
    rt._internal.write(Commit(events=(PageAdmitted(at=0.0, page=copy),)))


def killed_ingest(tmp_path: Path, script: str) -> tuple[Path, str]:
    """Run `script` (argv: a home with knowledge on, a folder of `DOCS`) in a child process that
    ingests and then kills itself with SIGKILL; the home and what the child printed."""
    home = enable_knowledge(tmp_path / "home")
    docs = write_docs(tmp_path / "docs")
    child = subprocess.run(
        [sys.executable, "-c", script, str(home), str(docs)], capture_output=True, text=True, timeout=60, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    return home, child.stdout


def entries_of(rt: Runtime) -> dict[str, KnowledgeEntry]:
    """Every entry as stored, whatever its visibility (straight from the store)."""
    with rt._internal.store.reader() as reader:
        return dict(reader.items(KNOWLEDGE_ENTRIES))


def work_item(repository: str = "resident", *, project: str | None = None, tree: str = "tree-1",
              model: str = "model-1", item: str = "issue-17", scope: str = "writer") -> WorkItem:
    return WorkItem(project=project or repository, repository=repository, item=item, tree=tree, model=model,
                    scope=scope, provider="provider-1")


def owner_grant(rt: Runtime) -> Grant:
    return rt.coordinator.issue_grant(
        actions={"remember", "recall", "review", "push", "write_back", "forget", "supersede", "reconcile"}
    )


def candidate(title: str = "One writer per worktree", *, visibility: str = "project", kind: str = "fact",
              body: str = "The coordinator keeps a single active writer.") -> dict[str, str]:
    return {"kind": kind, "title": title, "body": body, "visibility": visibility}


@dataclass
class Chain:
    """The records of one candidate's evidence, as real sessions made them."""

    grant: Grant
    implementation: Execution
    entry: KnowledgeEntry | None
    review: Session | None = None
    audit: Session | None = None


def evidence_chain(
    rt: Runtime,
    *,
    member: str = "deven",
    reviewer: str | None = "alice",
    auditor: str | None = "oliver",
    files: Sequence[str] = ("writer.py",),
    proposal: dict[str, str] | None = None,
    work: WorkItem | None = None,
    verdicts: tuple[str, str] = ("approved", "approved"),
    accept: bool = True,
) -> Chain:
    """Implement (with a candidate), review, audit and accept, as the coordinator records them."""
    grant = owner_grant(rt)
    session = dispatch_session(host_context(rt), "implement it", member, role="implement", parent_grant=grant,
                                      work=work or work_item())
    implementation = session.finish("succeeded", result="complete", files=files,
                                    knowledge_candidate=proposal or candidate())
    proposed = [e for e in entries_of(rt).values() if e.execution == implementation.id]
    chain = Chain(grant=grant, implementation=implementation, entry=proposed[0] if proposed else None)
    for role, examiner, verdict in (("review", reviewer, verdicts[0]), ("audit", auditor, verdicts[1])):
        if examiner is None:
            continue
        examination = dispatch_session(host_context(rt), role, examiner, role=role, parent_grant=grant,
                                              reviews=implementation.id)
        examination.finish("succeeded", result="complete", verdict=verdict)  # type: ignore[arg-type]
        setattr(chain, role, examination)
    if accept:
        chain.implementation = rt.coordinator.accept(implementation.id)
    if chain.entry is not None:
        chain.entry = entries_of(rt)[chain.entry.id]
    return chain
