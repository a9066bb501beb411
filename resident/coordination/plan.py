"""Run plans: the tasks `resident run` dispatches, read from TOML and checked before anything runs.

    name = "my plan"

    [[tasks]]
    id = "deven-build"
    member = "deven"
    role = "implement"
    steps = [
      { do = "remember", text = "build {i} of the payments service passed", repeat = 20, as = "build" },
      { do = "recall", query = "payments build", expect = "build" },
      { do = "supersede", ref = "build", text = "the last payments build was rolled back" },
    ]

Tasks run concurrently; the steps of one task run in order. Member steps are callbacks checked
against the member's grant, and delegated (the runtime marks what a session writes so, and Realm
refuses a delegated canonical promotion): `remember` (text, scope, counterpart, world, kind,
canonical, repeat, as), `recall` (query, k, expect, expect_absent), `supersede` (ref, text),
`forget` (ref), `reconcile` (ref, readmit | rollback, text, canonical), `expect-state` (ref, state),
`wait-for` (task, or ref with an optional state), `sync`. The coordinator's task may also drive the
run itself: `crash` (actor), `realm-outage` (seconds) and `invalidate` (ref, reason — the
governance side). `{i}` and `{member}` in texts are filled in.

A task may instead be real work: it names a `harness` (`claude-code`, `codex`, `pi`, `command`), the
`command` to run (a list; the harness's usual program when left out, but required for `command`),
the directory to run it in (`dir`; by default where `resident run` runs) and what to do (`text`,
the execution's task). The coordinator
dispatches it as a member session under the task's grant: the member is projected into `dir`, the
command runs, its transcript is recovered, and the execution ends with the command's status. Its
`steps`, if any, are played first (a `wait-for` another task, say). In `command` and `dir`,
`{python}` is this interpreter, `{plan_dir}` the plan's folder, `{scratch}` a scratch repository
made for the run, `{member}` and `{run}` as in texts.

    [[tasks]]
    id = "deven-greet"
    member = "deven"
    harness = "command"
    dir = "{scratch}"
    text = "write greet.py"
    command = ["{python}", "{plan_dir}/plan_member.py", "implement"]
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from resident.coordination.grants import ROLE_ACTIONS
from resident.errors import PlanInvalid
from resident.messages.sessions import HARNESSES
from resident.user_files import read_user_file

__all__ = ["HARNESS_STEPS", "MEMBER_STEPS", "Plan", "Step", "TaskPlan", "load_plan", "parse_plan", "render_plan"]

MEMBER_STEPS = frozenset(
    {"remember", "recall", "supersede", "forget", "reconcile", "expect-state", "wait-for", "sync"}
)
HARNESS_STEPS = frozenset({"crash", "realm-outage", "invalidate"})
STATES = ("pending", "pending_review", "synced", "conflict", "invalidated")
# A plan is a page of TOML; a file far larger is not one, and is not read whole.
MAX_PLAN_BYTES = 4 * 1024 * 1024

# Which keys each step accepts (beyond `do`), so a typo is an error instead of being ignored.
_KEYS: dict[str, frozenset[str]] = {
    "remember": frozenset(
        {"text", "scope", "counterpart", "world", "kind", "canonical", "repeat", "as", "summary"}
    ),
    "recall": frozenset({"query", "k", "expect", "expect_absent"}),
    "supersede": frozenset({"ref", "text", "as"}),
    "forget": frozenset({"ref"}),
    "reconcile": frozenset({"ref", "readmit", "rollback", "text", "canonical", "as"}),
    "expect-state": frozenset({"ref", "state"}),
    "wait-for": frozenset({"task", "ref", "state"}),
    "sync": frozenset(),
    "crash": frozenset({"actor"}),
    "realm-outage": frozenset({"seconds"}),
    "invalidate": frozenset({"ref", "reason"}),
}


@dataclass(frozen=True)
class Step:
    """One step of a task; unused fields keep their defaults."""

    do: str
    text: str = ""
    summary: str | None = None
    scope: str = "AGENT_CORE"
    counterpart: str | None = None
    world: str | None = None
    kind: str = "experience"
    canonical: bool | None = None
    repeat: int = 1
    as_: str | None = None
    ref: str | None = None
    query: str = ""
    k: int = 10
    expect: str | None = None
    expect_absent: str | None = None
    readmit: bool = False
    rollback: bool = False
    state: str | None = None
    task: str | None = None
    actor: str = ""
    seconds: float = 0.0
    reason: str = ""

    @property
    def writes(self) -> int:
        """How many records this step writes."""
        if self.do == "remember":
            return self.repeat
        return 1 if self.do == "supersede" or (self.do == "reconcile" and self.readmit) else 0


@dataclass(frozen=True)
class TaskPlan:
    id: str
    member: str
    role: str
    steps: tuple[Step, ...]
    # Real work (see the module docstring): the harness, its command and directory, the task's text.
    harness: str | None = None
    command: tuple[str, ...] = ()
    dir: str = "."
    text: str = ""

    @property
    def task(self) -> str:
        """The execution's task: the text of a harness task, else the task's id."""
        return self.text or self.id


@dataclass(frozen=True)
class Plan:
    name: str
    tasks: tuple[TaskPlan, ...]
    source: str = "<plan>"
    notes: tuple[str, ...] = field(default=())

    @property
    def writes(self) -> int:
        return sum(step.writes for task in self.tasks for step in task.steps)


def _where(source: str, task: int | str, step: int | None = None) -> str:
    return f"{source}: task {task}" + (f", step {step + 1}" if step is not None else "")


def _typed(value: Any, kind: type | tuple[type, ...], what: str, where: str) -> Any:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise PlanInvalid(f"{where}: {what} must be a number, not {value!r}")
    if not isinstance(value, kind):
        raise PlanInvalid(f"{where}: {what} has the wrong type ({type(value).__name__})")
    return value


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, Mapping):
        raise PlanInvalid(f"{where}: a step is a table like {{ do = \"remember\", text = \"...\" }}")
    do = raw.get("do")
    if do not in _KEYS:
        known = ", ".join(sorted(_KEYS))
        raise PlanInvalid(f"{where}: unknown step {do!r}; steps are: {known}")
    unknown = sorted(set(raw) - _KEYS[do] - {"do"})
    if unknown:
        takes = ", ".join(sorted(_KEYS[do])) or "nothing"
        raise PlanInvalid(f"{where}: a {do} step has no `{unknown[0]}`; it takes {takes}")
    values: dict[str, Any] = {"do": do}
    strings = ("text", "summary", "scope", "counterpart", "world", "kind", "ref", "query", "expect",
               "expect_absent", "state", "task", "actor", "reason")
    for key in strings:
        if key in raw:
            values[key] = _typed(raw[key], str, key, where)
    for key in ("canonical", "readmit", "rollback"):
        if key in raw:
            values[key] = _typed(raw[key], bool, key, where)
    if "as" in raw:
        values["as_"] = _typed(raw["as"], str, "as", where)
    if "repeat" in raw:
        values["repeat"] = _typed(raw["repeat"], int, "repeat", where)
        if not 1 <= values["repeat"] <= 100_000:
            raise PlanInvalid(f"{where}: repeat must be 1..100000")
    if "k" in raw:
        values["k"] = _typed(raw["k"], int, "k", where)
        if not 1 <= values["k"] <= 100:
            raise PlanInvalid(f"{where}: k must be 1..100")
    if "seconds" in raw:
        values["seconds"] = float(_typed(raw["seconds"], (int, float), "seconds", where))
        if not 0 < values["seconds"] <= 60:
            raise PlanInvalid(f"{where}: seconds must be more than 0 and at most 60")
    step = Step(**values)
    _check_step(step, where)
    return step


def _check_step(step: Step, where: str) -> None:
    needs = {
        "remember": ("text",), "recall": ("query",), "supersede": ("ref", "text"), "forget": ("ref",),
        "reconcile": ("ref",), "expect-state": ("ref", "state"), "crash": ("actor",),
        "realm-outage": ("seconds",), "invalidate": ("ref", "reason"),
    }.get(step.do, ())
    for key in needs:
        if not getattr(step, key):
            raise PlanInvalid(f"{where}: a {step.do} step needs `{key}`")
    if step.do == "reconcile" and step.readmit == step.rollback:
        raise PlanInvalid(f"{where}: a reconcile step needs exactly one of readmit = true or rollback = true")
    if step.do == "wait-for" and (step.task is None) == (step.ref is None):
        raise PlanInvalid(f"{where}: a wait-for step needs either `task` or `ref`")
    if step.state is not None and step.state not in STATES:
        raise PlanInvalid(f"{where}: state must be one of {', '.join(STATES)}")


_TASK_KEYS = frozenset({"id", "member", "role", "steps", "harness", "command", "dir", "text"})


def _harness_work(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A task's real work (harness, command, dir, text), checked; empty for a task of steps alone."""
    if "harness" not in raw:
        stray = sorted({"command", "dir", "text"} & set(raw))
        if stray:
            raise PlanInvalid(f"{where}: `{stray[0]}` belongs to a task that names a `harness`")
        return {}
    harness = _typed(raw["harness"], str, "harness", where)
    if harness not in HARNESSES:
        raise PlanInvalid(f"{where}: unknown harness {harness!r}; harnesses: {', '.join(HARNESSES)}")
    command = raw.get("command", [])
    if not isinstance(command, list) or not all(isinstance(part, str) and part for part in command):
        raise PlanInvalid(f"{where}: `command` is a list of non-empty strings, like [\"make\", \"test\"]")
    if harness == "command" and not command:
        raise PlanInvalid(f"{where}: the command harness needs the `command` to run")
    return {
        "harness": harness, "command": tuple(command), "dir": _typed(raw.get("dir", "."), str, "dir", where),
        "text": _typed(raw.get("text", ""), str, "text", where).strip(),
    }


def parse_plan(text: str, source: str, *, members: Sequence[str], coordinator: str) -> Plan:
    """A checked plan; every error names the file, task and step, before anything runs."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PlanInvalid(f"{source} is not valid TOML: {error}") from None
    unknown = sorted(set(data) - {"name", "tasks"})
    if unknown:
        raise PlanInvalid(f"{source}: unknown key `{unknown[0]}`; a plan has `name` and [[tasks]]")
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise PlanInvalid(f"{source}: a plan needs at least one [[tasks]] entry")
    tasks = []
    for index, raw in enumerate(raw_tasks):
        where = _where(source, index + 1)
        if not isinstance(raw, Mapping):
            raise PlanInvalid(f"{where}: a task is a table with id, member, role and steps")
        extra = sorted(set(raw) - _TASK_KEYS)
        if extra:
            raise PlanInvalid(f"{where}: unknown key `{extra[0]}`; a task has {', '.join(sorted(_TASK_KEYS))}")
        task_id = _typed(raw.get("id", f"task-{index + 1}"), str, "id", where)
        member = _typed(raw.get("member"), str, "member", where)
        role = _typed(raw.get("role", "implement"), str, "role", where)
        work = _harness_work(raw, where)
        steps = raw.get("steps", [] if work else None)
        if not isinstance(steps, list) or (not steps and not work):
            raise PlanInvalid(f"{where}: task {task_id} needs a non-empty `steps` list (or a `harness` to run)")
        tasks.append(
            TaskPlan(
                id=task_id, member=member, role=role,
                steps=tuple(_step(s, _where(source, task_id, i)) for i, s in enumerate(steps)), **work,
            )
        )
    plan = Plan(name=str(data.get("name", Path(source).stem)), tasks=tuple(tasks), source=source)
    check_plan(plan, members=members, coordinator=coordinator)
    return plan


def check_plan(plan: Plan, *, members: Sequence[str], coordinator: str) -> None:
    """Cross-task checks: members exist, ids are unique, refs and waits point somewhere."""
    ids = [task.id for task in plan.tasks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise PlanInvalid(f"{plan.source}: task id {duplicates[0]} is used twice")
    defined = {step.as_ for task in plan.tasks for step in task.steps if step.as_}
    for task in plan.tasks:
        if task.member not in members:
            raise PlanInvalid(
                f"{_where(plan.source, task.id)}: unknown member {task.member!r}; the roster is: {', '.join(members)}"
            )
        if task.role not in ROLE_ACTIONS:
            raise PlanInvalid(
                f"{_where(plan.source, task.id)}: unknown role {task.role!r}; roles: {', '.join(sorted(ROLE_ACTIONS))}"
            )
        for index, step in enumerate(task.steps):
            where = _where(plan.source, task.id, index)
            if step.do in HARNESS_STEPS and task.member != coordinator:
                raise PlanInvalid(f"{where}: only the coordinator ({coordinator}) drives {step.do} steps")
            for ref in (step.ref, step.expect, step.expect_absent):
                if ref is not None and ref not in defined:
                    raise PlanInvalid(f"{where}: {ref!r} is not defined by any step's `as`")
            if step.task is not None and step.task not in ids:
                raise PlanInvalid(f"{where}: wait-for names unknown task {step.task!r}")
            if step.task == task.id:
                raise PlanInvalid(f"{where}: a task cannot wait for itself")


def load_plan(path: Path, *, members: Sequence[str], coordinator: str) -> Plan:
    data = read_user_file(path, limit=MAX_PLAN_BYTES, what="plan file", error=PlanInvalid)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PlanInvalid(f"{path} is not valid UTF-8 (byte {error.start})") from None
    return parse_plan(text, str(path), members=members, coordinator=coordinator)


def _toml_value(value: Any) -> str:
    import json  # noqa: PLC0415 - only rendering needs it

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def render_plan(plan: Plan) -> str:
    """The plan as TOML (what `resident run --show-plan` prints, ready to edit and pass back)."""
    defaults = Step(do="")
    lines = [f"name = {_toml_value(plan.name)}", ""]
    for task in plan.tasks:
        lines += ["[[tasks]]", f"id = {_toml_value(task.id)}", f"member = {_toml_value(task.member)}",
                  f"role = {_toml_value(task.role)}"]
        if task.harness is not None:
            lines += [f"harness = {_toml_value(task.harness)}", f"dir = {_toml_value(task.dir)}",
                      f"text = {_toml_value(task.text)}",
                      "command = [" + ", ".join(_toml_value(part) for part in task.command) + "]"]
        lines.append("steps = [")
        for step in task.steps:
            parts = [f"do = {_toml_value(step.do)}"]
            for item in fields(Step):
                if item.name == "do":
                    continue
                value = getattr(step, item.name)
                if value != getattr(defaults, item.name):
                    key = "as" if item.name == "as_" else item.name
                    parts.append(f"{key} = {_toml_value(value)}")
            lines.append("  { " + ", ".join(parts) + " },")
        lines += ["]", ""]
    return "\n".join(lines)
