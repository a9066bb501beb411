"""Who may import whom (ARCHITECTURE.md), checked on the source so a stray import fails a test.

Leaf utilities every layer may use: `resident.errors`, `resident.clock`, `resident.ids`,
`resident.loopback`, `resident.files` (private files written whole), `resident.user_files` (files a
user names, opened safely) and `resident.children` (child processes), which import nothing of the
project but other leaves. Beyond those, each package may reach only the packages below it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "resident"
LEAVES = {
    "resident.errors", "resident.clock", "resident.ids", "resident.loopback", "resident.files", "resident.children",
    "resident.processes", "resident.user_files",
}

# package -> the resident packages it may import (itself and the leaves always allowed)
ALLOWED: dict[str, set[str]] = {
    "resident.messages": set(),
    "resident.store": {"resident.messages"},
    "resident.supervisor": {"resident.messages"},
    "resident.memory": {"resident.messages"},
    "resident.coordination": {"resident.messages"},
    "resident.realm": {"resident.messages", "resident.web"},
    "resident.web": set(),
    # Evolution's domain: skills rank with recall's text analysis; the report reads skills' rules.
    "resident.evolution": {"resident.messages", "resident.skills"},
    "resident.skills": {"resident.messages", "resident.memory", "resident.evolution"},
    "resident.principles": {"resident.messages", "resident.evolution"},
    "resident.engagement": {"resident.messages", "resident.memory"},
    # Knowledge analyses text with memory's own analysis rather than a second one.
    "resident.knowledge": {"resident.messages", "resident.memory"},
    "resident.actors": {
        "resident.messages", "resident.store", "resident.supervisor", "resident.memory", "resident.coordination",
        "resident.realm", "resident.config", "resident.skills", "resident.principles", "resident.engagement",
        "resident.evolution", "resident.knowledge",
    },
}
# Third-party imports a package may not use (messages stay plain data; the domain does no I/O).
FORBIDDEN_THIRD_PARTY: dict[str, set[str]] = {
    "resident.messages": {"lmdb", "pykka", "numpy", "httpx", "starlette", "uvicorn", "click", "rich"},
    "resident.store": {"pykka", "httpx", "starlette", "uvicorn", "click", "rich"},
    "resident.supervisor": {"lmdb", "httpx", "starlette", "uvicorn", "click", "rich"},
    "resident.coordination": {"lmdb", "pykka", "httpx", "starlette", "uvicorn", "click", "rich"},
    "resident.realm": {"pykka", "click", "rich"},
    **{
        domain: {"lmdb", "pykka", "httpx", "starlette", "uvicorn", "click", "rich"}
        for domain in ("resident.skills", "resident.principles", "resident.engagement", "resident.evolution")
    },
    "resident.web": {"lmdb", "pykka", "numpy", "httpx", "click", "rich"},
    "resident.knowledge": {"lmdb", "pykka", "httpx", "starlette", "uvicorn", "click", "rich", "mcp"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "resident" else parts[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_the_architecture_allows(package: str) -> None:
    directory = PACKAGE / package.split(".")[1]
    allowed = ALLOWED[package] | LEAVES | {package}
    forbidden = FORBIDDEN_THIRD_PARTY.get(package, set())
    problems = []
    for path in sorted(directory.rglob("*.py")):
        for module in _imports(path):
            owner = _package_of(module)
            if owner.startswith("resident") and owner != "resident" and owner not in allowed:
                problems.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
            if owner in forbidden:
                problems.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert not problems, "\n".join(problems)


def test_the_memory_domain_does_no_storage_or_actor_work() -> None:
    # The llama client is the domain's one I/O adapter (an HTTP embedder); nothing in it opens LMDB.
    for path in (PACKAGE / "memory").rglob("*.py"):
        assert not {"lmdb", "pykka"} & {_package_of(m) for m in _imports(path)}, path


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_leaf_modules_import_nothing_of_the_project_but_other_leaves(leaf: str) -> None:
    name = leaf.split(".")[1]
    paths = sorted((PACKAGE / name).rglob("*.py")) if (PACKAGE / name).is_dir() else [PACKAGE / f"{name}.py"]
    problems = [
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for path in paths
        for module in _imports(path)
        if _package_of(module).startswith("resident.") and _package_of(module) not in LEAVES
    ]
    assert not problems, "\n".join(problems)


def test_the_api_client_loads_neither_the_runtime_nor_the_server_stack() -> None:
    # The CLI will talk to a running `resident up` through this client; its imports decide how
    # quickly a command starts.
    heavy = ["numpy", "lmdb", "pykka", "starlette", "uvicorn", "sse_starlette", "resident.runtime", "resident.store"]
    code = (
        "import sys, resident.api.client, resident.api.process; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
