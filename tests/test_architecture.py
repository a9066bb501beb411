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
    "resident.processes", "resident.user_files", "resident.terminal", "resident.checks", "resident.content",
}

# package (or top-level module) -> the resident packages it may import (itself and the leaves always allowed).
# Every package and module under resident/ has a row (or is a leaf): a new one must be placed.
ALLOWED: dict[str, set[str]] = {
    # The data every layer speaks.
    "resident.messages": set(),
    # Storage, supervision and the domain's pure rules, on the messages.
    "resident.store": {"resident.messages"},
    "resident.supervisor": {"resident.messages"},
    "resident.memory": {"resident.messages"},
    "resident.coordination": {"resident.messages"},
    "resident.sessions": {"resident.messages"},
    "resident.principles": {"resident.messages"},
    "resident.web": set(),
    "resident.realm": {"resident.messages", "resident.web"},
    # Skills rank with recall's text analysis; evolution's report reads skills' rules.
    "resident.skills": {"resident.messages", "resident.memory"},
    "resident.evolution": {"resident.messages", "resident.skills"},
    "resident.engagement": {"resident.messages", "resident.memory"},
    # Knowledge analyses text with memory's own analysis rather than a second one.
    "resident.knowledge": {"resident.messages", "resident.memory"},
    # Cognition's pure rules (one scale, the bridge's settings, breaker and offer); engagement narrows its banks
    # as it narrows memory.
    "resident.cognition": {"resident.messages", "resident.engagement"},
    # resident.toml: its sections are the domains' and Realm's settings.
    "resident.config": {
        "resident.messages", "resident.store", "resident.realm", "resident.engagement", "resident.cognition",
    },
    "resident.actors": {
        "resident.messages", "resident.store", "resident.supervisor", "resident.memory", "resident.coordination",
        "resident.realm", "resident.config", "resident.skills", "resident.principles", "resident.engagement",
        "resident.evolution", "resident.knowledge",
    },
    # Each operation declared once; light (no runtime): the client and the command load it.
    # A started session's harness runs in the caller's process (`resident.sessions.launch`).
    "resident.operations": {"resident.messages", "resident.memory", "resident.web", "resident.sessions"},
    # The in-process runtime: the actor tree's wiring and the services.
    "resident.runtime": {
        "resident.messages", "resident.store", "resident.supervisor", "resident.actors", "resident.memory",
        "resident.coordination", "resident.realm", "resident.config", "resident.skills", "resident.principles",
        "resident.engagement", "resident.evolution", "resident.knowledge", "resident.sessions",
        "resident.operations", "resident.cognition",
    },
    # The surfaces, on the operations and the runtime.
    "resident.api": {
        "resident.messages", "resident.operations", "resident.runtime", "resident.store", "resident.coordination",
        "resident.web",
    },
    "resident.benchmarks": {
        "resident.messages", "resident.runtime", "resident.store", "resident.memory", "resident.realm",
        "resident.config",
    },
    "resident.runner": {
        "resident.messages", "resident.runtime", "resident.api", "resident.actors", "resident.store",
        "resident.memory", "resident.coordination", "resident.realm", "resident.config", "resident.sessions",
    },
    "resident.cli": {
        "resident.messages", "resident.operations", "resident.runtime", "resident.api", "resident.runner",
        "resident.benchmarks", "resident.store", "resident.memory", "resident.coordination", "resident.knowledge",
        "resident.realm", "resident.config", "resident.sessions",
    },
    # `resident.Runtime`: the runtime's `open` and the client's `connect` in one class.
    "resident.facade": {"resident.runtime", "resident.api"},
}
# The file-level circles still to break, each with the reason it is here (the list only shrinks).
KNOWN_CIRCLES: list[set[str]] = []
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
    "resident.cognition": {"lmdb", "pykka", "numpy", "httpx", "starlette", "uvicorn", "click", "rich"},
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
    name = package.split(".")[1]
    directory = PACKAGE / name
    paths = sorted(directory.rglob("*.py")) if directory.is_dir() else [PACKAGE / f"{name}.py"]
    assert paths, f"{package} has no source to check"
    allowed = ALLOWED[package] | LEAVES | {package}
    forbidden = FORBIDDEN_THIRD_PARTY.get(package, set())
    problems = []
    for path in paths:
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path) -> set[str]:
    """The modules `path` imports when it runs (top-level and inside functions); `TYPE_CHECKING` blocks are
    only read by type checkers and never run, so they make no circle."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checked_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            checked_only.update(id(inner) for inner in ast.walk(node))
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in checked_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one node (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start, first_targets in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(first_targets)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(group)
    return found


def _module_graph() -> dict[str, set[str]]:
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets = {resolve(name) for name in _runtime_imports(path) if name.startswith("resident")}
        # A module reaching its own package's __init__ (or the project's) is no circle of two files.
        graph[module] = {t for t in targets if t and t != module and not module.startswith(f"{t}.")}
    return graph


def test_every_package_and_module_has_a_place_in_the_table() -> None:
    placed = set(ALLOWED) | LEAVES
    units = {f"resident.{path.stem}" for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    units |= {f"resident.{path.name}" for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert sorted(units - placed) == [], "place each in ALLOWED (or LEAVES) in this test"


def test_no_package_imports_another_in_a_circle() -> None:
    graph: dict[str, set[str]] = {}
    for module, targets in _module_graph().items():
        owner = _package_of(module)
        graph.setdefault(owner, set()).update(_package_of(t) for t in targets if _package_of(t) != owner)
    graph.pop("resident", None)
    for targets in graph.values():
        targets.discard("resident")
    assert _circles(graph) == []


def test_no_files_import_one_another_in_a_circle_but_the_ones_known() -> None:
    circles = _circles(_module_graph())
    unknown = [sorted(circle) for circle in circles if circle not in KNOWN_CIRCLES]
    assert unknown == [], "a new circle of imports between files"
    assert all(known in circles for known in KNOWN_CIRCLES), "a known circle is gone: take it off KNOWN_CIRCLES"
