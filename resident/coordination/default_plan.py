"""The built-in plan `resident run` uses without a plan file (`resident run --show-plan` prints it).

Every member other than the coordinator writes and recalls notes of its trade in English, Spanish
and Chinese, supersedes one, forgets one, and writes dyadic and world-shared memories; one member
asks Realm to promote a delegated memory to canonical (a conflict it then reconciles), another
writes a fact that the governance side invalidates. Meanwhile the coordinator crashes the
substrate and a member actor and takes Realm down for a moment.

`writes` notes per member are split into four bulk series (English, Spanish, Chinese, and a late
English one after the recalls). Every recall that expects a record looks for one written once and
named by the run's own tag (`{run}`, filled in by the harness): hundreds of bulk notes of the same
trade would otherwise crowd it out of the results, and in a home that kept earlier runs its twin
from the last run would tie with it. So the check is exact at every size: that record, by id.
"""

# The notes are real Chinese text; its full-width punctuation is intended.
# ruff: noqa: RUF001 - the plan's tasks are written in Chinese and Spanish on purpose

from __future__ import annotations

from collections.abc import Sequence

from resident.coordination.plan import Plan, Step, TaskPlan

__all__ = ["MAX_WRITES", "PLAN_ROLES", "default_plan"]

# The largest `--writes` the built-in plan is tested at (tests/test_run_sizes.py): every size
# the option allows must pass, so the option allows no more than what is proven.
MAX_WRITES = 10_000

# The roster's roles (resident.toml) mapped to the grant role their tasks run under.
PLAN_ROLES = {
    "planning": "coordinate",
    "development": "implement",
    "testing": "test",
    "operations": "operate",
    "trading": "research",
}

_NOTES: dict[str, tuple[str, str, str, str]] = {
    # role: (English, Spanish, Chinese, a recall query that matches them)
    "implement": (
        "build {i}: the payments service compiles after pinning the protobuf version",
        "compilación {i}: el servicio de pagos compila tras fijar la versión de protobuf",
        "第{i}次构建：固定 protobuf 版本后支付服务编译通过",
        "payments service build protobuf",
    ),
    "test": (
        "test run {i}: the checkout flow fails when the coupon field is empty",
        "prueba {i}: el flujo de pago falla cuando el campo del cupón está vacío",
        "第{i}次测试：优惠券字段为空时结账流程失败",
        "checkout coupon test failure",
    ),
    "operate": (
        "deploy {i}: the staging database migration must run before the web rollout",
        "despliegue {i}: la migración de la base de datos de staging debe ir antes del despliegue web",
        "第{i}次部署：预发布数据库迁移必须在网站发布之前运行",
        "staging database migration deploy",
    ),
    "research": (
        "signal {i}: the euro dollar spread widens after the central bank statement",
        "señal {i}: el diferencial euro dólar se amplía tras el comunicado del banco central",
        "第{i}个信号：央行声明后欧元美元价差扩大",
        "euro dollar spread central bank",
    ),
}


def _member_steps(member: str, role: str, peer: str, writes: int) -> list[Step]:
    english, spanish, chinese, query = _NOTES.get(role, _NOTES["implement"])
    quarter = max(1, writes // 4)
    reference = english.replace("{i}", "reference {run}")
    return [
        Step(do="remember", text=english, repeat=quarter, as_=f"{member}-bulk-en"),
        Step(do="remember", text=spanish, repeat=quarter, as_=f"{member}-note-es"),
        Step(do="remember", text=chinese, repeat=quarter, as_=f"{member}-note"),
        Step(do="remember", text=reference, as_=f"{member}-note-en"),
        Step(do="remember", text=f"scratch idea of {member} to drop later", as_=f"{member}-scratch"),
        Step(do="remember", text=f"{peer} prefers written handovers over calls", scope="AGENT_DYADIC",
             counterpart=peer),
        Step(do="remember", text=f"team rule noted by {member}: no deploys on Friday afternoons",
             scope="WORLD_SHARED", world="team"),
        Step(do="recall", query=f"reference {{run}} {query}", k=10, expect=f"{member}-note-en"),
        Step(do="supersede", ref=f"{member}-note-en", text=f"{english.format(i='final')} (corrected)",
             as_=f"{member}-note-v2"),
        Step(do="forget", ref=f"{member}-scratch"),
        Step(do="recall", query=f"scratch idea of {member}", expect_absent=f"{member}-scratch"),
        Step(do="remember", text=english, repeat=quarter, as_=f"{member}-late"),
    ]


def default_plan(
    members: Sequence[tuple[str, str]], coordinator: str, *, writes: int = 30, with_realm: bool = True,
    with_invalidation: bool = True,
) -> Plan:
    """The demo plan for `members` (name, roster role); `writes` notes per member, about.

    Without a Realm nothing is ever withheld, so the conflict, invalidation and outage parts
    are left out rather than expected to fail; without Realm's admin token (`with_invalidation`
    false) the invalidation alone is left out.
    """
    invalidating = with_realm and with_invalidation
    workers = [(name, PLAN_ROLES.get(role, "implement")) for name, role in members if name != coordinator]
    if not workers:
        return Plan(name="default", tasks=(), source="<default plan>")
    names = [name for name, _ in workers]
    conflicted = "victor" if "victor" in names else names[-1]
    invalidated = "alice" if "alice" in names else names[0]
    tasks = []
    for index, (name, role) in enumerate(workers):
        peer = names[(index + 1) % len(names)] if len(names) > 1 else coordinator
        steps = _member_steps(name, role, peer, writes)
        if name == conflicted and with_realm:
            steps += [
                Step(do="remember", text="the hedging playbook is the canonical reference for the desk",
                     canonical=True, as_="promotion"),
                Step(do="wait-for", ref="promotion", state="conflict"),
                Step(do="recall", query="hedging playbook canonical reference", expect_absent="promotion"),
                Step(do="reconcile", ref="promotion", readmit=True, canonical=False, as_="promotion-v2"),
                Step(do="wait-for", ref="promotion-v2", state="synced"),
                Step(do="expect-state", ref="promotion", state="conflict"),
            ]
        if name == invalidated and invalidating:
            steps += [
                Step(do="remember", text="the on-call runbook lives in the old wiki under ops/oncall",
                     kind="world", as_="stale-fact"),
                Step(do="wait-for", ref="stale-fact", state="invalidated"),
                Step(do="recall", query="on-call runbook old wiki", expect_absent="stale-fact"),
            ]
        tasks.append(TaskPlan(id=f"{name}-work", member=name, role=role, steps=tuple(steps)))
    first = names[0]
    invalidation = (
        Step(do="wait-for", ref="stale-fact", state="synced"),
        Step(do="invalidate", ref="stale-fact", reason="governance: the runbook moved to the handbook"),
    )
    realm_steps = (
        Step(do="realm-outage", seconds=1.5),
        Step(do="crash", actor=f"members/{first}"),
        *(invalidation if invalidating else ()),
    )
    coordination = (
        Step(do="remember", text="plan {run} for the week: payments release, checkout fixes, staging migration",
             as_="weekly-plan"),
        Step(do="wait-for", ref=f"{first}-note-es"),
        Step(do="crash", actor="substrate"),
        *(realm_steps if with_realm else (Step(do="crash", actor=f"members/{first}"),)),
        Step(do="recall", query="plan {run} for the week payments release", expect="weekly-plan"),
    )
    tasks.insert(0, TaskPlan(id=f"{coordinator}-coordination", member=coordinator, role="coordinate",
                             steps=coordination))
    return Plan(name="default", tasks=tuple(tasks), source="<default plan>")
