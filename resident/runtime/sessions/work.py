"""The work item of a session's execution: what the member works on, so its knowledge answers for that repository.

A session started in a directory (`resident session start --task TEXT`, or a dispatch that names a harness)
works on the repository registered for that directory (`resident knowledge repos add`): the innermost
registration whose work tree holds it. Its execution then carries a work item for that repository, and the
member's `knowledge_context` tool answers for it. A directory no registration holds gets a work item named
after the directory itself, so the step is still evidence of something; knowledge has nothing to say about it
until the owner registers it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from resident.messages.coordination import WorkItem
from resident.messages.knowledge import Repository
from resident.runtime.context import Context
from resident.store.tables import KNOWLEDGE_REPOSITORIES

__all__ = ["work_item"]

_FIELD = 256
_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_WORKING_TREE = "working-tree"


def _holding(context: Context, directory: Path) -> Repository | None:
    """The registered repository whose work tree holds `directory` (the innermost one)."""
    with context.store.reader() as reader:
        registered = [repository for _, repository in reader.items(KNOWLEDGE_REPOSITORIES)]
    holding = [r for r in registered if directory == Path(r.path) or Path(r.path) in directory.parents]
    return max(holding, key=lambda r: len(r.path), default=None)


def _tree(directory: Path) -> str:
    """The commit the work tree is at, read from its `.git` (never by running git: a repository's own config could
    make git run its commands); else that it is a working tree with no commit known."""
    for folder in (directory, *directory.parents):
        git = folder / ".git"
        if git.is_dir():
            return _head(git) or _WORKING_TREE
        if git.exists():
            return _WORKING_TREE  # a worktree's or submodule's `.git` file: not followed
    return _WORKING_TREE


def _head(git: Path) -> str | None:
    try:
        head = (git / "HEAD").read_text(encoding="ascii").strip()
        if not head.startswith("ref: "):
            return head if _COMMIT.fullmatch(head) else None
        ref = head[5:]
        loose = git / ref
        if loose.is_file():
            commit = loose.read_text(encoding="ascii").strip()
            return commit if _COMMIT.fullmatch(commit) else None
        for line in (git / "packed-refs").read_text(encoding="ascii").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref and _COMMIT.fullmatch(commit):
                return commit
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _slug(name: str) -> str:
    slug = _UNSAFE.sub("-", name).strip("-./") or "work"
    return slug[:128] if slug[0].isalnum() else f"w{slug[:127]}"


def work_item(context: Context, directory: Path, task: str, harness: str) -> WorkItem:
    """The work item of a session in `directory` on `task`, run by `harness` (see the module docstring)."""
    repository = _holding(context, directory)
    if repository is None:
        project = name = _slug(directory.name)
        scope = "."
    else:
        project, name = repository.project, repository.id
        scope = os.path.relpath(directory, repository.path)
    item = " ".join(task.split())[:_FIELD] or f"a {harness} session"
    return WorkItem(
        project=project, repository=name, item=item, tree=_tree(directory), model=harness, scope=scope[:_FIELD],
    )
