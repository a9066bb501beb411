"""Benchmark of projection choice: which skills a session gets, with 1,000 skills in the team library.

The library holds 1,000 synthetic skills whose descriptions are `bench/recall_index.py`'s mix of
English, Spanish and Chinese (about 195 characters each). For each of 400 synthetic tasks it times,
side by side in one run:

* the work itself: the keyword search over the library (`KeywordIndex.search`, masked to the held
  skills), which projection choice cannot do without;
* the choice alone (`SkillIndex.choose`: search, relevance bands, weight order, top 10), for a
  member holding 40 skills (30 plus 10 natives: the most a set keeps) and for one holding all 1,000;
* the choice through the runtime: the member actor reads its set and current weights, the skill
  library actor ranks (`ChooseSkills` asked of the member), and the public call
  `rt.skills.choose`, which also re-reads the member's soul.md for native skills.

The target is a p99 of at most 5 ms for the choice through the runtime.

Each latency is timed over three passes through the tasks; the p99 reported is the median pass's.

    python bench/skills.py [--json] [--tasks N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from resident import Runtime
from resident.memory.text import term_ids
from resident.messages.skills import ChooseSkills, RankCandidate, SkillAdded, TeamSkill
from resident.messages.store import Commit
from resident.skills.relevance import SkillIndex, indexed_text

if not __package__:
    # Run as `python bench/skills.py`: make the repository root importable for the sibling module.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import synthetic_queries, synthetic_texts

LIBRARY = 1_000
HELD = 30
NATIVES = 10
TASKS = 400
TARGET_P99_MS = 5.0
ROUNDS = 3


def library(size: int) -> list[TeamSkill]:
    descriptions = synthetic_texts(size, seed=23)
    return [
        TeamSkill(
            name=f"skill-{n:04d}", description=" ".join(text.split())[:1024], body=f"# skill {n}\n\n{text}\n",
            digest=f"{n:064x}", added_at=0.0, added_by="bench",
        )
        for n, text in enumerate(descriptions)
    ]


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))], 3)


def timed(calls: Sequence[Callable[[], object]], rounds: int = ROUNDS) -> dict[str, Any]:
    """Wall p50/p99 and CPU p99 in milliseconds over `rounds` passes through `calls`, after a warm-up.

    On a shared two-core machine one descheduling can land in any pass, so each pass's wall p99 is
    kept and the median pass is the figure; the CPU time of each call (all threads of the process:
    the actors' work counts) shows what the call costs when it is not waiting for a core.
    """
    for call in calls[:20]:
        call()
    walls: list[float] = []
    cpus: list[float] = []
    tails: list[float] = []
    for _ in range(rounds):
        this_round = []
        for call in calls:
            cpu, started = time.process_time(), time.perf_counter()
            call()
            this_round.append((time.perf_counter() - started) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        tails.append(_p99(this_round))
        walls += this_round
    return {
        "p50_ms": round(statistics.median(walls), 3),
        "p99_ms": statistics.median(tails),
        "p99_ms_by_round": tails,
        "cpu_p50_ms": round(statistics.median(cpus), 3),
        "cpu_p99_ms": _p99(cpus),
    }


def pure(skills: list[TeamSkill], tasks: list[str]) -> dict[str, Any]:
    term_ids("warm the analysis tables")  # built once per process; not part of an index's cost
    started = time.perf_counter()
    index = SkillIndex(skills)
    build_ms = (time.perf_counter() - started) * 1000
    keyword = index._keyword
    held = [RankCandidate(name=s.name, weight=1.0 + (n % 7) / 10) for n, s in enumerate(skills[: HELD + NATIVES])]
    everything = [RankCandidate(name=s.name, weight=1.0 + (n % 7) / 10) for n, s in enumerate(skills)]
    mask = np.zeros(len(skills), dtype=np.bool_)
    mask[: HELD + NATIVES] = True
    search_alone = timed([partial(keyword.search, task, mask, HELD + NATIVES) for task in tasks])
    set_of_40 = timed([partial(index.choose, task, held, 10) for task in tasks])
    whole_library = timed([partial(index.choose, task, everything, 10) for task in tasks])
    return {
        "build_ms": round(build_ms, 2),
        "indexed_chars": sum(len(indexed_text(s)) for s in skills),
        "search_alone_40": search_alone,
        "choose_40": set_of_40,
        "choose_1000": whole_library,
        "choose_over_search_p50": round(set_of_40["p50_ms"] / search_alone["p50_ms"], 2),
    }


def through_runtime(skills: list[TeamSkill], tasks: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="resident-bench-skills-") as scratch, \
            Runtime.open(Path(scratch) / "home", realm="none") as rt:
        rt._internal.write(Commit(events=tuple(SkillAdded(at=0.0, skill=s) for s in skills)))
        soul = rt.home / "members" / "deven" / "soul.md"
        soul.parent.mkdir(parents=True)
        natives = ", ".join(s.name for s in skills[HELD : HELD + NATIVES])
        soul.write_text(f"---\nnative_skills: [{natives}]\n---\nDeven.\n", encoding="utf-8")
        for skill in skills[:HELD]:
            rt.skills.give(skill.name, "deven")
        ask = rt._services.ask_member
        actor = timed([partial(ask, "deven", ChooseSkills(task=task, limit=10), None) for task in tasks])
        facade = timed([partial(rt.skills.choose, "deven", task) for task in tasks])
        held = len(rt.skills.skill_set("deven").skills)
    return {"held": held, "member_and_library_actors": actor, "rt_skills_choose": facade}


def _print(name: str, figures: dict[str, Any]) -> None:
    print(f"{name:>28}: wall p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms "
          f"(passes {figures['p99_ms_by_round']}); CPU p50 {figures['cpu_p50_ms']} ms, p99 {figures['cpu_p99_ms']} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    parser.add_argument("--tasks", type=int, default=TASKS, help="how many tasks to time")
    args = parser.parse_args()
    skills = library(LIBRARY)
    tasks = synthetic_queries(args.tasks, seed=29)
    report: dict[str, Any] = {
        "library": LIBRARY, "tasks": len(tasks), "target_p99_ms": TARGET_P99_MS,
        "pure": pure(skills, tasks), "runtime": through_runtime(skills, tasks),
    }
    runtime = report["runtime"]["member_and_library_actors"]
    report["target_met"] = runtime["p99_ms"] <= TARGET_P99_MS
    if args.json:
        print(json.dumps(report, indent=2))
        return
    pure_figures = report["pure"]
    print(f"library of {LIBRARY} skills; index built in {pure_figures['build_ms']} ms")
    for name in ("search_alone_40", "choose_40", "choose_1000"):
        _print(name, pure_figures[name])
    for name, figures in report["runtime"].items():
        if isinstance(figures, dict):
            _print(name, figures)
    print(f"target p99 <= {TARGET_P99_MS} ms through the actors: {'met' if report['target_met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
