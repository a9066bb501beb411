"""What a member looks like inside a harness: the files a session projects into the working directory.

* `AGENTS.md` — who the member is, the work package (the task, what it remembers about it under its
  current engagement, its approved principles, its projected skills) and how to call back into
  the runtime. A repository's own `AGENTS.md` is kept at the top: the harness still reads the
  project's instructions, and the file is restored when the session ends.
* `CLAUDE.md` (Claude Code only) — the repository's own, if any, then `@AGENTS.md`, Claude Code's
  import, so both harness families read one text.
* `.mcp.json` (Claude Code only, where the repository has none) — the runtime's MCP server
  (`resident mcp serve`, read-only: `knowledge_context`), run by the harness with the session's environment,
  so the grant token reaches it without being written into the repository.
* `.claude/skills/<name>/SKILL.md` and `.agents/skills/<name>/SKILL.md` for at most ten skills — the
  front matter the harness chooses by (name, description) and a body that loads the skill through
  `resident skills read NAME`. The runtime holds the skill's text: a use counts only when a session
  reads the body, and reading it through the runtime is what records that (a harness reading a
  projected copy on its own would leave no trace).

Everything here is text made from stored values; control characters in them are shown as escapes,
never written raw into a file a harness will read.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime

from resident.messages.sessions import Harness
from resident.terminal import printable

__all__ = [
    "AGENTS_FILE",
    "CLAUDE_FILE",
    "MARKER",
    "MCP_FILE",
    "MCP_SERVER",
    "SKILL_DIRS",
    "ProjectedFile",
    "Remembered",
    "WorkPackage",
    "plan_projection",
]

AGENTS_FILE = "AGENTS.md"
CLAUDE_FILE = "CLAUDE.md"
MCP_FILE = ".mcp.json"
# The name the runtime's MCP server has in a harness's configuration.
MCP_SERVER = "resident"
SKILL_DIRS = (".claude/skills", ".agents/skills")
MARKER = "<!-- resident: projected for this session; removed when it ends -->"


@dataclass(frozen=True)
class Remembered:
    """A memory recalled for the task."""

    id: str
    summary: str
    recorded_at: float


@dataclass(frozen=True)
class WorkPackage:
    """Everything a session is told about its member and its work."""

    member: str
    role: str
    harness: Harness
    session: str
    execution: str
    task: str
    memories: tuple[Remembered, ...] = ()
    memory_note: str = ""
    principles: tuple[str, ...] = ()
    skills: tuple[tuple[str, str], ...] = ()
    actions: tuple[str, ...] = ()
    # The repository's own instruction files (name → text), kept above what is projected.
    originals: dict[str, str] = field(default_factory=dict)
    # The command line of this `resident` (an absolute path): what the member calls back with, whatever the
    # harness's PATH holds.
    resident: tuple[str, ...] = ("resident",)


@dataclass(frozen=True)
class ProjectedFile:
    """A file to write, by its path relative to the working directory (POSIX separators)."""

    path: str
    data: bytes


def _line(text: str) -> str:
    """One stored value as one line of Markdown."""
    return printable(" ".join(text.split()))


def _date(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _memories(package: WorkPackage) -> list[str]:
    if not package.memories:
        return [package.memory_note or "Nothing you remember matches this task."]
    return [f"- {_line(m.summary)} ({m.id}, {_date(m.recorded_at)})" for m in package.memories]


def _skills(package: WorkPackage) -> list[str]:
    if not package.skills:
        return ["No skill of yours matches this task; `resident skills search QUERY` searches the team library."]
    lines = [
        f"These are in `{SKILL_DIRS[0]}` and `{SKILL_DIRS[1]}`. Load one with `resident skills read NAME`: that is",
        "what counts as using it. `resident skills search QUERY` finds the others.",
        "",
    ]
    return lines + [f"- `{name}` — {_line(description)}" for name, description in package.skills]


def command_line(argv: tuple[str, ...]) -> str:
    """`argv` as one shell command line (each part quoted where it needs to be)."""
    return " ".join(shlex.quote(printable(part)) for part in argv)


# The harnesses that start the runtime's MCP server from what the projection configures (`.mcp.json`, Codex's
# config.toml); the others (pi speaks no MCP) reach the same tool through `resident mcp call`.
MCP_HARNESSES = frozenset({"claude-code", "codex"})


def _knowledge_line(package: WorkPackage, resident: str) -> str:
    call = f"`{resident} mcp call knowledge_context " + """'{"project_id": "P", "repository_id": "R", "query": "Q"}'`"""
    if package.harness in MCP_HARNESSES:
        return f"- MCP tool `knowledge_context` (server `{MCP_SERVER}`), or {call} — verified knowledge for this work"
    return f"- {call} — verified knowledge for this work (the runtime's MCP tool, from the shell)"


def _callbacks(package: WorkPackage) -> list[str]:
    member = package.member
    allowed = ", ".join(package.actions) or "nothing"
    resident = command_line(package.resident)
    lines = [
        "`$RESIDENT_GRANT_TOKEN` (or, where your shell drops it, the file `$RESIDENT_GRANT_FILE`) and",
        f"`$RESIDENT_HOME` are set: this command acts as {member}, within this session's grant (it allows: {allowed}).",
        "Call it by this exact path (your PATH may not have it):",
        "",
        f"    {resident}",
        "",
        f'- `{resident} recall {member} "QUERY"` — what you remember',
        f'- `{resident} remember {member} "WHAT YOU LEARNED"` — remember it',
        f"- `{resident} skills read NAME`, `{resident} skills search QUERY` — your skills",
        f"- `{resident} engagement show`, `{resident} engage --domain work --project NAME` — what you are engaged in",
        f'- `{resident} principles propose "RULE" --basis "WHY"` — propose a principle (the owner decides)',
        _knowledge_line(package, resident),
    ]
    if "dispatch" in package.actions:
        lines += [
            "",
            "You coordinate: you may dispatch work to members within your own grant, and settle what comes back.",
            "",
            f'- `{resident} dispatch MEMBER --task "TEXT" --harness pi --dir DIR` — prints the execution id',
            f"- `{resident} executions`, `{resident} await EXECUTION --timeout 600` — progress and outcomes",
            f'- `{resident} accept EXECUTION`, `{resident} reject EXECUTION --reason "WHY" --reassign MEMBER`',
        ]
    return lines


def mcp_text(package: WorkPackage) -> str:
    """The projected `.mcp.json`: the runtime's MCP server, started by the harness with the session's environment."""
    program, *arguments = package.resident
    servers = {MCP_SERVER: {"type": "stdio", "command": program, "args": [*arguments, "mcp", "serve"]}}
    return json.dumps({"mcpServers": servers}, indent=2) + "\n"


def agents_text(package: WorkPackage) -> str:
    """The text of the projected AGENTS.md (the repository's own first, if it had one)."""
    sections = [
        MARKER,
        f"# {package.member} ({package.role})",
        "",
        f"You are {package.member}, a member of this team. Your memories, skills and principles are kept by the",
        "resident runtime across sessions; this session is recorded as your experience when it ends.",
        f"Session `{package.session}`, execution `{package.execution}`.",
        "",
        "## Task",
        "",
        printable(package.task.strip()),
        "",
        "## What you remember about it",
        "",
        *_memories(package),
        "",
        "## Your principles",
        "",
        *([f"- {_line(text)}" for text in package.principles] or ["None approved yet."]),
        "",
        "## Your skills",
        "",
        *_skills(package),
        "",
        "## Calling back",
        "",
        *_callbacks(package),
        "",
    ]
    own = package.originals.get(AGENTS_FILE, "")
    return (own.rstrip("\n") + "\n\n" if own.strip() else "") + "\n".join(sections)


def claude_text(package: WorkPackage) -> str:
    """The projected CLAUDE.md: the repository's own, then Claude Code's import of AGENTS.md."""
    own = package.originals.get(CLAUDE_FILE, "")
    return (own.rstrip("\n") + "\n\n" if own.strip() else "") + f"{MARKER}\n@{AGENTS_FILE}\n"


def skill_text(member: str, name: str, description: str) -> str:
    """A projected SKILL.md: the front matter a harness chooses by, and how to load the body."""
    # A JSON string is a valid YAML double-quoted scalar, whatever the description holds.
    quoted = json.dumps(printable(" ".join(description.split())), ensure_ascii=False)
    return (
        f"---\nname: {name}\ndescription: {quoted}\n---\n\n"
        f"The instructions of this skill are held by the resident runtime for {member}. Load them with:\n\n"
        f"    resident skills read {name}\n\n"
        "Reading them that way records that this session used the skill.\n"
    )


def plan_projection(package: WorkPackage) -> list[ProjectedFile]:
    """Every file the session projects, in the order they are written."""
    files = [ProjectedFile(AGENTS_FILE, agents_text(package).encode("utf-8"))]
    if package.harness == "claude-code":
        files.append(ProjectedFile(CLAUDE_FILE, claude_text(package).encode("utf-8")))
        if not package.originals.get(MCP_FILE):
            files.append(ProjectedFile(MCP_FILE, mcp_text(package).encode("utf-8")))
    for name, description in package.skills:
        data = skill_text(package.member, name, description).encode("utf-8")
        files += [ProjectedFile(f"{folder}/{name}/SKILL.md", data) for folder in SKILL_DIRS]
    return files
