"""The facade as a whole: every surface, built on one executor, the same for `Runtime.open` and `Runtime.connect`.

`Facade` is the root surface (the home, the roster) holding the capability surfaces; the in-process runtime
and the connected client are both one. `with_grant(token)` is the same facade acting as the member session the
grant token stands for: every call is then checked against that session's grant, as a harness's calls are.
"""

from __future__ import annotations

from resident.operations.apps import AppsSurface
from resident.operations.cognition import CognitionSurface
from resident.operations.coordination import CoordinatorSurface
from resident.operations.engagement import EngagementSurface
from resident.operations.evolution import EvolutionSurface
from resident.operations.facade import Executor
from resident.operations.home import RootSurface
from resident.operations.knowledge import KnowledgeSurface, SessionSurface
from resident.operations.memory import MemberSurface, MemorySurface
from resident.operations.portability import PortabilitySurface
from resident.operations.principles import PrinciplesSurface
from resident.operations.replication import ReplicationSurface
from resident.operations.sessions import SessionsSurface
from resident.operations.skills import SkillsSurface

__all__ = ["Facade"]


class Facade(RootSurface, PortabilitySurface):
    """Every surface of the runtime, on one executor."""

    def __init__(self, executor: Executor) -> None:
        super().__init__(executor)
        self.memory = MemorySurface(executor)
        self.replication = ReplicationSurface(executor)
        self.apps = AppsSurface(executor)
        self.principles = PrinciplesSurface(executor)
        self.skills = SkillsSurface(executor)
        self.engagement = EngagementSurface(executor)
        self.evolution = EvolutionSurface(executor)
        self.coordinator: CoordinatorSurface = CoordinatorSurface(executor)
        self.knowledge = KnowledgeSurface(executor)
        self.session = SessionSurface(executor)
        self.sessions = SessionsSurface(executor)
        self.cognition = CognitionSurface(executor)

    def member(self, name: str) -> MemberSurface:
        """The memory surface of one member of the roster (`UnknownMember` otherwise)."""
        return MemberSurface(self._executor, name)

    def with_grant(self, token: str) -> Facade:
        """This runtime as the member session whose grant token is `token` (`GrantInvalid` at the first call
        when it stands for no running session)."""
        return Facade(self._executor.with_grant(token))
