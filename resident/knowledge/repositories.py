"""Repositories and projects: how they are named, and the registration that authorizes members.

A project or repository id is 1-128 characters of letters, digits and `._/-`, starting with a
letter or digit (`resident`, `acme/payments`). A registered repository names its project, the
absolute path of its work tree (what probes read) and the members authorized for the project
through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from resident.errors import InvalidInput
from resident.memory.banks import check_part
from resident.messages.knowledge import Repository

__all__ = ["check_ref", "repository"]

_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")


def check_ref(kind: str, value: str) -> str:
    """`value` if it may name a project or repository; `InvalidInput` naming `kind` otherwise."""
    if not isinstance(value, str) or _REF.fullmatch(value) is None or ".." in value.split("/"):
        raise InvalidInput(
            f"{kind} {value!r} is not valid: use 1-128 letters, digits, '.', '_', '/' or '-', "
            "starting with a letter or digit"
        )
    return value


def repository(repository_id: str, project: str, path: Path, members: Iterable[str], *, at: float) -> Repository:
    """A checked registration: valid ids and member names, an absolute work tree path."""
    if not path.is_absolute():
        raise InvalidInput(f"the work tree of repository {repository_id} must be an absolute path, not {path}")
    return Repository(
        id=check_ref("repository", repository_id),
        project=check_ref("project", project),
        path=str(path),
        members=tuple(sorted({check_part("member", member) for member in members})),
        registered_at=at,
    )
