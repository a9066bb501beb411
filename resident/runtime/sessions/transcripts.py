"""Where harnesses keep their transcripts, and reading them from disk without trusting the disk.

A session gives its harness a home of the member's own under the resident home, so its transcript
lands where the runtime will look (`HOME/harness/<member>/<harness>`): Claude Code's
`$CLAUDE_CONFIG_DIR` (transcripts in `projects/<dir>/<uuid>.jsonl`), Codex's `$CODEX_HOME`
(`sessions/YYYY/MM/DD/rollout-*.jsonl`), and pi's `$PI_CODING_AGENT_SESSION_DIR` (moves pi's
sessions only, so its login stays where it is; `--<dir>--/<time>_<uuid>.jsonl`). Claude Code and
Codex keep their login in that home too: a member's harness is logged in once, in its own home, or
given an API key in the environment. The `command` harness writes wherever `$RESIDENT_TRANSCRIPT`
says.

Before the harness starts the transcript files of its home are listed (size, time, inode); at the
end, the new ones and the ones that grew are the session's — a grown file (a resumed conversation)
from the length it had. A file that names another working directory is another session's (the
same member at work elsewhere at the same time). Walks never follow a symbolic link and stop at a
bounded number of files; reads refuse anything but a regular file.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from resident.errors import InvalidInput
from resident.files import private_dir, read_private_file, write_private_file
from resident.messages.sessions import Harness
from resident.sessions.transcript import MAX_FILE_BYTES, TranscriptFile

__all__ = [
    "HARNESS_ENV",
    "MAX_SCAN",
    "Snapshot",
    "TranscriptLayout",
    "file_cwd",
    "harness_home",
    "layout",
    "read_transcript",
    "redaction_key",
    "scan",
    "session_files",
    "walk",
]

# The environment variable that points each harness at the member's home for it.
HARNESS_ENV: dict[Harness, str] = {
    "claude-code": "CLAUDE_CONFIG_DIR",
    "codex": "CODEX_HOME",
    "pi": "PI_CODING_AGENT_SESSION_DIR",
    "command": "RESIDENT_TRANSCRIPT",
}
# A walk looks at no more files than this: a home with more is not a transcript folder.
MAX_SCAN = 20_000
# The files of one session: more than this is not one session's transcript.
MAX_SESSION_FILES = 32
_HEAD = 256 * 1024
_KEY_FILE = "redaction.key"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
Snapshot = dict[str, tuple[int, int, int]]


@dataclass(frozen=True)
class TranscriptLayout:
    """Where a harness's transcripts are below its home, and what their files look like."""

    folder: str
    prefix: str
    depth: int


_LAYOUTS: dict[Harness, TranscriptLayout] = {
    "claude-code": TranscriptLayout("projects", "", 2),
    "codex": TranscriptLayout("sessions", "rollout-", 4),
    "pi": TranscriptLayout("", "", 2),
    "command": TranscriptLayout("", "", 1),
}


def layout(harness: Harness) -> TranscriptLayout:
    return _LAYOUTS[harness]


def harness_home(home: Path, member: str, harness: Harness) -> Path:
    """The member's own home for `harness` (created private)."""
    path = home / "harness" / member / harness
    for folder in (home / "harness", home / "harness" / member, path):
        private_dir(folder)
        if folder.is_symlink() or not folder.is_dir():
            raise InvalidInput(f"{folder} is not a folder of this home (a symbolic link or a file); remove it")
    return path


def _walk(root: Path, harness: Harness, limit: int, depth: int | None = None) -> Iterator[tuple[Path, os.stat_result]]:
    """Transcript files below `root` (never through a link, `depth` levels at most), at most `limit` looked at."""
    shape = layout(harness)
    levels = shape.depth if depth is None else depth
    seen = 0
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        folder, level = pending.pop()
        try:
            items = list(os.scandir(folder))
        except OSError:
            continue
        for item in sorted(items, key=lambda i: i.name):
            seen += 1
            if seen > limit:
                return
            if item.is_dir(follow_symlinks=False) and level + 1 < levels:
                pending.append((Path(item.path), level + 1))
            elif (
                item.is_file(follow_symlinks=False) and item.name.endswith(".jsonl")
                and item.name.startswith(shape.prefix)
            ):
                yield Path(item.path), item.stat(follow_symlinks=False)


def scan(root: Path, harness: Harness, limit: int = MAX_SCAN) -> Snapshot:
    """The transcript files below `root`: relative path → (size, modification time, inode)."""
    return {
        str(path.relative_to(root)): (info.st_size, info.st_mtime_ns, info.st_ino)
        for path, info in _walk(root, harness, limit)
    }


def walk(root: Path, harness: Harness, *, depth: int | None = None) -> list[tuple[Path, os.stat_result]]:
    """The transcript files below `root` with their status (see `scan`), `depth` levels deep at most."""
    return list(_walk(root, harness, MAX_SCAN, depth))


def session_files(before: Mapping[str, tuple[int, int, int]], after: Snapshot) -> list[tuple[str, int]]:
    """The files a session wrote: new ones from 0, grown ones from their old length; oldest change first."""
    changed: list[tuple[int, str, int]] = []
    for path, (size, modified, inode) in after.items():
        old = before.get(path)
        if old is None or old[2] != inode or size < old[0]:
            changed.append((modified, path, 0))
        elif size > old[0]:
            changed.append((modified, path, old[0]))
    return [(path, offset) for _, path, offset in sorted(changed)[:MAX_SESSION_FILES]]


def read_transcript(path: Path, offset: int = 0, limit: int = MAX_FILE_BYTES) -> TranscriptFile | None:
    """At most `limit` bytes of the regular file `path` from `offset`; None when it is not one."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    # Checked on the descriptor before it becomes a file object: a harness may have made the path a
    # folder or a FIFO, and neither may stop the session from ending (it would stay "running").
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as file:
        file.seek(offset)
        data = file.read(limit + 1)
    truncated = len(data) > limit
    return TranscriptFile(str(path), data[:limit], offset=offset, truncated=truncated)


def file_cwd(path: Path) -> str:
    """The working directory a transcript names near its start ("" when it names none)."""
    head = read_transcript(path, 0, _HEAD)
    if head is None:
        return ""
    for chunk in head.data.split(b"\n")[:200]:
        try:
            line = msgspec.json.decode(chunk)
        except msgspec.DecodeError:
            continue
        if not isinstance(line, dict):
            continue
        payload = line.get("payload")
        for holder in (line, payload if isinstance(payload, dict) else {}):
            cwd = holder.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
    return ""


def redaction_key(home: Path) -> bytes:
    """The home's private key for redaction marks, made on first use (two first uses agree on one key)."""
    path = home / _KEY_FILE
    with contextlib.suppress(FileNotFoundError):
        return _checked_key(read_private_file(path, 64), path)
    fresh = home / f".{_KEY_FILE}.{os.getpid()}.tmp"
    write_private_file(fresh, os.urandom(32))
    try:
        os.link(fresh, path)  # fails if another process made the key first: then that one is the key
    except FileExistsError:
        pass
    finally:
        fresh.unlink(missing_ok=True)
    return _checked_key(read_private_file(path, 64), path)


def _checked_key(key: bytes, path: Path) -> bytes:
    if len(key) != 32:
        raise InvalidInput(f"{path} is not a redaction key (32 bytes); remove it and a new one is made")
    return key
