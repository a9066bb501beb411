"""The SKILL.md format of a team skill, and a member's native skills in its soul.md.

A skill is a folder whose `SKILL.md` starts with YAML front matter: `name` (kebab-case, at most 64
characters, the folder's own name) and `description` (what it does and when to use it, at most
1,024 characters); the Markdown body after it holds the instructions a member reads. Other front
matter fields (`license`, `allowed-tools`, `metadata`, ...) are allowed and not kept.

A member's `soul.md` may list its native skills in its front matter (`native_skills: [a, b]`);
those are never forgotten and do not count toward the size of its set.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from resident.errors import SkillInvalid
from resident.skills.front_matter import check_printable, decode_text, split_front_matter

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "MAX_SKILL_FILE",
    "MAX_SOUL_FILE",
    "ParsedSkill",
    "check_skill_name",
    "parse_natives",
    "parse_skill",
]

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_FILE = 256 * 1024
MAX_SOUL_FILE = 64 * 1024
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class ParsedSkill:
    """A well-formed SKILL.md: its fields, body and the SHA-256 of its bytes."""

    name: str
    description: str
    body: str
    digest: str


def check_skill_name(name: object, what: str = "a skill name") -> str:
    """`name` if it is kebab-case and at most 64 characters, else `SkillInvalid`."""
    if not isinstance(name, str) or len(name) > MAX_NAME or _KEBAB.fullmatch(name) is None:
        shown = repr(name)[:80] if isinstance(name, str) else type(name).__name__
        raise SkillInvalid(
            f"{what} must be kebab-case (lower-case letters and digits joined by single hyphens) "
            f"and at most {MAX_NAME} characters, not {shown}"
        )
    return name


def parse_skill(folder: str, data: bytes) -> ParsedSkill:
    """Check the bytes of `folder`/SKILL.md and return its fields."""
    what = f"{check_skill_name(folder, 'the skill folder name')}/SKILL.md"
    if len(data) > MAX_SKILL_FILE:
        raise SkillInvalid(f"{what} is over {MAX_SKILL_FILE // 1024} KiB; move long material into separate files")
    fields, body = split_front_matter(decode_text(data, what), what)
    name = check_skill_name(fields.get("name"), f"{what}: `name`")
    if name != folder:
        raise SkillInvalid(f"{what}: `name` is {name!r} but the folder is {folder!r}; they must be the same")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillInvalid(f"{what}: `description` is required: say what the skill does and when to use it")
    if len(description) > MAX_DESCRIPTION:
        raise SkillInvalid(f"{what}: `description` is {len(description)} characters; at most {MAX_DESCRIPTION}")
    check_printable(description, f"{what}: `description`")
    if not body.strip():
        raise SkillInvalid(f"{what} has no body; write the skill's instructions after the front matter")
    return ParsedSkill(name=name, description=description.strip(), body=body, digest=hashlib.sha256(data).hexdigest())


def parse_natives(member: str, data: bytes) -> tuple[str, ...]:
    """The native skills a member's soul.md lists (sorted, without repeats)."""
    what = f"soul.md of {member}"
    if len(data) > MAX_SOUL_FILE:
        raise SkillInvalid(f"{what} is over {MAX_SOUL_FILE // 1024} KiB")
    text = decode_text(data, what)
    if not text.startswith("---"):
        # A soul.md of prose alone declares no native skills.
        check_printable(text, what)
        return ()
    fields, _ = split_front_matter(text, what)
    listed = fields.get("native_skills", [])
    if listed is None:
        return ()
    if not isinstance(listed, list):
        raise SkillInvalid(f"{what}: `native_skills` must be a list of skill names")
    return tuple(sorted({check_skill_name(name, f"{what}: a native skill") for name in listed}))
