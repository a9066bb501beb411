"""What the knowledge operations do to the runtime: `resident knowledge …` and the MCP server's tool.

Every `knowledge …` operation is the owner's (the table's default), so a grant token never reaches
these handlers but the two of a session: `session.grant` (who the token stands for, and whether
knowledge is on) and `session.context` (context for the session's own member, held to the
repository of its work, never a subject the request names). Paths are the runtime machine's,
absolute (`resident.api.paths`). An ingest run in this process reports its files to the callback
`INGEST_PROGRESS` holds (`resident.api.local`); over the wire there is no one to report to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.api import routes, wire_knowledge
from resident.api.local import INGEST_PROGRESS
from resident.api.paths import absolute
from resident.errors import GrantInvalid
from resident.knowledge.visibility import Subject

if TYPE_CHECKING:
    from resident.api.handlers import Call, Handler
    from resident.runtime.coordination import Session

__all__ = ["KNOWLEDGE_HANDLERS"]


async def create_bank(call: Call) -> Any:
    body: wire_knowledge.CreateBank = call.body
    return await call.run(call.runtime.knowledge.create_bank, body.name, body.owner)


async def banks(call: Call) -> wire_knowledge.Banks:
    return wire_knowledge.Banks(banks=tuple(await call.run(call.runtime.knowledge.banks)))


async def ingest(call: Call) -> Any:
    paths = [absolute(path, "a path to ingest") for path in call.body.paths]
    return await call.run(call.runtime.knowledge.ingest, call.params["bank"], paths, progress=INGEST_PROGRESS.get())


async def search(call: Call) -> wire_knowledge.PageHits:
    body: wire_knowledge.PageQuery = call.body
    hits = await call.run(call.runtime.knowledge.search, call.params["bank"], body.query, body.k, state=body.state)
    return wire_knowledge.PageHits(hits=tuple(hits))


async def reindex(call: Call) -> Any:
    return await call.run(call.runtime.knowledge.reindex)


async def register_repository(call: Call) -> Any:
    body: wire_knowledge.RegisterRepository = call.body
    return await call.run(
        call.runtime.knowledge.register_repository, body.repository, absolute(body.path, "a work tree"),
        project=body.project, members=body.members,
    )


async def repositories(call: Call) -> wire_knowledge.Repositories:
    return wire_knowledge.Repositories(repositories=tuple(await call.run(call.runtime.knowledge.repositories)))


async def entries(call: Call) -> wire_knowledge.Entries:
    body: wire_knowledge.EntriesQuery = call.body
    found = await call.run(
        call.runtime.knowledge.entries, project=body.project, repository=body.repository, state=body.state
    )
    return wire_knowledge.Entries(entries=tuple(found))


async def promote(call: Call) -> Any:
    return await call.run(call.runtime.knowledge.promote, call.params["entry"])


async def context(call: Call) -> wire_knowledge.ContextEntries:
    body: wire_knowledge.ContextQuery = call.body
    found = await call.run(
        call.runtime.knowledge.context, body.member, body.project, body.repository, body.query, k=body.k
    )
    return wire_knowledge.ContextEntries(entries=tuple(found))


async def import_legacy(call: Call) -> wire_knowledge.LegacyImported:
    result = await call.run(call.runtime.knowledge.import_legacy, absolute(call.body.path, "the legacy file"))
    return wire_knowledge.LegacyImported(imported=result.imported, skipped=result.skipped)


def _session(call: Call) -> Session:
    """The session whose grant token the call presents; the owner has none to speak of."""
    if call.caller.session is None:
        raise GrantInvalid("this call is about a member session: present the session's grant token")
    return call.caller.session


async def session_grant(call: Call) -> wire_knowledge.GrantView:
    session = _session(call)
    return wire_knowledge.GrantView(
        member=session.member.name, execution=session.execution.id, knowledge=call.runtime.knowledge.enabled
    )


async def session_context(call: Call) -> wire_knowledge.ContextEntries:
    body: wire_knowledge.SessionContext = call.body
    session = _session(call)
    # The session's member, held to the repository of the work its execution was dispatched on.
    work = session.execution.work
    subject = Subject(
        member=session.execution.member, repositories=frozenset({work.repository}) if work is not None else frozenset()
    )
    found = await call.run(
        call.runtime.knowledge.context, subject, body.project_id, body.repository_id, body.query, k=body.k
    )
    return wire_knowledge.ContextEntries(entries=tuple(found))


KNOWLEDGE_HANDLERS: dict[str, Handler] = {
    routes.KNOWLEDGE_BANK_CREATE.name: create_bank,
    routes.KNOWLEDGE_BANKS.name: banks,
    routes.KNOWLEDGE_INGEST.name: ingest,
    routes.KNOWLEDGE_SEARCH.name: search,
    routes.KNOWLEDGE_REINDEX.name: reindex,
    routes.KNOWLEDGE_REPOSITORY_ADD.name: register_repository,
    routes.KNOWLEDGE_REPOSITORIES.name: repositories,
    routes.KNOWLEDGE_ENTRIES.name: entries,
    routes.KNOWLEDGE_PROMOTE.name: promote,
    routes.KNOWLEDGE_CONTEXT.name: context,
    routes.KNOWLEDGE_IMPORT_LEGACY.name: import_legacy,
    routes.SESSION_GRANT.name: session_grant,
    routes.SESSION_CONTEXT.name: session_context,
}
