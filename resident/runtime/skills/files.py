"""Reading a skill folder's SKILL.md and a member's soul.md from disk, carefully.

Both are read with bounded size, never through a symbolic link (a SKILL.md that links to a
private file elsewhere would otherwise copy that file into the team library for every member to
read), and only when they are regular files. A member's soul.md lives in the home:
`members/<member>/soul.md`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from resident.errors import SkillInvalid
from resident.skills.skill_file import MAX_SKILL_FILE, MAX_SOUL_FILE, ParsedSkill, parse_skill
from resident.user_files import open_user_file

__all__ = ["SKILL_FILE", "SOUL_FILE", "read_skill_file", "read_skill_folder", "read_soul", "soul_path"]

SKILL_FILE = "SKILL.md"
SOUL_FILE = "soul.md"


def soul_path(home: Path, member: str) -> Path:
    return home / "members" / member / SOUL_FILE


def _read_regular(path: Path, limit: int, what: str) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path`, opened without following a link.

    Opened non-blocking, so a FIFO planted in its place is refused instead of hanging the reader.
    """
    with open_user_file(path, what=what, error=SkillInvalid) as file:
        return file.read(limit + 1)


def read_skill_file(path: str | os.PathLike[str]) -> tuple[str, bytes]:
    """The name of the skill folder `path` (or, given a SKILL.md itself, of its folder) and its SKILL.md's bytes."""
    # Lexical, not resolved: a folder reached through a link keeps the name the caller gave it.
    folder = Path(os.path.abspath(path))  # noqa: PTH100 - abspath keeps a symlinked folder's own name, which resolve() would replace
    if folder.name == SKILL_FILE and not folder.is_dir():
        folder = folder.parent
    if not folder.is_dir():
        raise SkillInvalid(f"{folder} is not a skill folder; give the folder that holds {SKILL_FILE}")
    return folder.name, _read_regular(folder / SKILL_FILE, MAX_SKILL_FILE, SKILL_FILE)


def read_skill_folder(path: str | os.PathLike[str]) -> ParsedSkill:
    """The skill in folder `path` (or, given a SKILL.md itself, in its folder)."""
    return parse_skill(*read_skill_file(path))


def read_soul(home: Path, member: str) -> tuple[bytes, str] | None:
    """The bytes of `member`'s soul.md and their digest, or None when it has none."""
    path = soul_path(home, member)
    if not path.exists() and not path.is_symlink():
        return None
    data = _read_regular(path, MAX_SOUL_FILE, f"soul.md of {member}")
    return data, hashlib.sha256(data).hexdigest()

