"""What the session operations do to the runtime: `resident session …` and `resident curate`.

Starting and ending a session are two operations with the harness run between them by the process
that asked (`resident session start`), never by the runtime: the start answers the command, the
directory and the session's own environment variables, the end takes the harness's status. Only
`sessions.list`, `sessions.show` and `sessions.raw` may be called by a member session, and it sees
only its own sessions (the caller's member is the viewer), under its grant's `recall`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.api import routes, wire_sessions
from resident.api.paths import absolute

if TYPE_CHECKING:
    from resident.api.handlers import Call, Handler

__all__ = ["SESSION_HANDLERS"]


async def start(call: Call) -> wire_sessions.Launched:
    body: wire_sessions.StartSession = call.body
    launch = await call.run(
        call.runtime.sessions.start, body.member, harness=body.harness, command=body.command,
        directory=str(absolute(body.directory, "the session's directory")), task=body.task, role=body.role,
        ttl=body.ttl, process=body.process, search_path=body.search_path,
    )
    return wire_sessions.Launched(
        session=launch.session, member=launch.member, harness=launch.harness, execution=launch.execution,
        argv=launch.argv, directory=str(launch.directory), variables=launch.variables, token=launch.token,
    )


async def end(call: Call) -> wire_sessions.Ended:
    body: wire_sessions.EndSession = call.body
    injected = () if body.token is None else (body.token,)
    record = await call.run(
        call.runtime.sessions.end, call.params["session"], body.exit_code, interrupted=body.interrupted,
        injected=injected,
    )
    return wire_sessions.Ended(session=record)


async def recover(call: Call) -> wire_sessions.Recovered:
    return wire_sessions.Recovered(recovered=tuple(await call.run(call.runtime.sessions.recover, call.body.session)))


async def sessions(call: Call) -> wire_sessions.SessionList:
    body: wire_sessions.ListSessions = call.body
    call.caller.authorize("recall")
    found = await call.run(call.runtime.sessions.list, member=body.member, state=body.state, viewer=call.caller.member)
    return wire_sessions.SessionList(sessions=tuple(found))


async def show(call: Call) -> wire_sessions.SessionView:
    body: wire_sessions.TurnsQuery = call.body
    call.caller.authorize("recall")
    control, session, viewer = call.runtime.sessions, call.params["session"], call.caller.member
    record = await call.run(control.get, session, viewer=viewer)
    turns = await call.run(control.turns, session, viewer=viewer, start=body.start, limit=body.limit)
    return wire_sessions.SessionView(session=record, turns=tuple(turns))


async def raw(call: Call) -> wire_sessions.RawPart:
    call.caller.authorize("recall")
    data = await call.run(call.runtime.sessions.raw, call.params["session"], call.body.part, viewer=call.caller.member)
    return wire_sessions.RawPart(data=data)


async def candidates(call: Call) -> wire_sessions.Candidates:
    body: wire_sessions.CandidatesQuery = call.body
    where = str(absolute(body.path, "the harness's history"))
    return wire_sessions.Candidates(candidates=tuple(await call.run(call.runtime.sessions.candidates, body.harness,
                                                                    where)))


async def import_sessions(call: Call) -> wire_sessions.SessionsImported:
    body: wire_sessions.ImportSessions = call.body
    report = await call.run(
        call.runtime.sessions.import_sessions, body.ids, member=body.member, harness=body.harness,
        path=str(absolute(body.path, "the harness's history")),
    )
    return wire_sessions.SessionsImported(
        imported=tuple(report.imported),
        skipped=tuple(wire_sessions.SkippedSession(id=found, why=why) for found, why in report.skipped),
    )


async def excerpts(call: Call) -> wire_sessions.Excerpts:
    body: wire_sessions.ExcerptsQuery = call.body
    found = await call.run(call.runtime.sessions.excerpts, call.params["member"], session=body.session,
                           limit=body.limit)
    return wire_sessions.Excerpts(excerpts=tuple(found))


async def admit(call: Call) -> Any:
    body: wire_sessions.Admit = call.body
    return await call.run(
        call.runtime.sessions.admit, call.params["member"], call.params["excerpt"], text=body.text,
        summary=body.summary, importance=body.importance,
    )


SESSION_HANDLERS: dict[str, Handler] = {
    routes.SESSION_START.name: start,
    routes.SESSION_END.name: end,
    routes.SESSION_RECOVER.name: recover,
    routes.SESSIONS.name: sessions,
    routes.SESSION_SHOW.name: show,
    routes.SESSION_RAW.name: raw,
    routes.SESSION_CANDIDATES.name: candidates,
    routes.SESSION_IMPORT.name: import_sessions,
    routes.EXCERPTS.name: excerpts,
    routes.EXCERPT_ADMIT.name: admit,
}
