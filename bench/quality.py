"""Recall quality on long conversations (LoCoMo format), with plain BM25 over the same turns in the same run.

For every conversation file in `--data`, a fresh home is opened and every dialog turn is remembered
by one member (deven) as one memory, its text `(DATE) SPEAKER: TEXT [shares a photo: CAPTION]` and
its `occurred_at` the session's date. Each question (category 5, the unanswerable ones, and those
without evidence left out) is then recalled with `k`; a question scores the fraction of its evidence
turns in the top 1/3/5/10 (recall@k) and whether any of them is there (any@k). The figures are
per embedder (`--embedder`, repeatable: `hash`, `local`, or a loopback llama URL), by question
category, with the recall latency seen by the caller (p50/p99) and the pace of `remember` (one
caller, one call at a time) and of the vectors that follow it.

The baseline is plain BM25 over the same texts and questions: rank_bm25's `BM25Okapi` over
lower-cased word tokens minus a short English stop-word list, as the data's README measures it.

    python bench/quality.py --data DIR [--k 10] [--json] [--embedder hash] [--embedder local]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from resident import Runtime

CUTS = (1, 3, 5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
UNANSWERABLE = 5
MEMBER = "deven"
TIMEOUT = 60.0
# How long the vectors of a conversation may take to follow its turns (a slow model on 2 cores).
VECTORS_DEADLINE = 1_800.0
# The README's baseline: word tokens, lower-cased, minus a short English stop-word list.
_BM25_STOPWORD_TEXT = (
    "a an the of to in on at for by with from and or but is are was were be been being it its this that these "
    "those as if then than so not no do does did i you he she we they me him her us them my your his our their "
    "what which who whom when where why how"
)
BM25_STOPWORDS = frozenset(_BM25_STOPWORD_TEXT.split())
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    occurred_at: float


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class Scores:
    """Recall@k and any@k summed over questions, overall and by category, plus latencies."""

    questions: int = 0
    recall: dict[int, float] = field(default_factory=lambda: dict.fromkeys(CUTS, 0.0))
    any_hit: dict[int, float] = field(default_factory=lambda: dict.fromkeys(CUTS, 0.0))
    by_category: dict[int, dict[str, Any]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        self.questions += 1
        category = self.by_category.setdefault(question.category, {"questions": 0, "recall": dict.fromkeys(CUTS, 0.0)})
        category["questions"] += 1
        evidence = set(question.evidence)
        for cut in CUTS:
            found = len(evidence & set(ranked[:cut]))
            self.recall[cut] += found / len(evidence)
            self.any_hit[cut] += found > 0
            category["recall"][cut] += found / len(evidence)

    def report(self) -> dict[str, Any]:
        count = max(1, self.questions)
        report: dict[str, Any] = {
            "questions": self.questions,
            **{f"recall@{cut}": round(self.recall[cut] / count, 4) for cut in CUTS},
            **{f"any@{cut}": round(self.any_hit[cut] / count, 4) for cut in CUTS},
            "by_category": {
                CATEGORIES.get(number, str(number)): {
                    "questions": category["questions"],
                    **{f"recall@{cut}": round(category["recall"][cut] / category["questions"], 4) for cut in CUTS},
                }
                for number, category in sorted(self.by_category.items())
            },
        }
        if self.latencies:
            report["recall_p50_ms"] = round(1000 * float(np.percentile(self.latencies, 50)), 2)
            report["recall_p99_ms"] = round(1000 * float(np.percentile(self.latencies, 99)), 2)
        return report


def _session_time(when: str) -> float:
    """LoCoMo's session stamps read like "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(when, "%I:%M %p on %d %B, %Y").timestamp()


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    session = 1
    while f"session_{session}_date_time" in data:
        when = data[f"session_{session}_date_time"]
        for turn in data.get(f"session_{session}", []):
            text = f"({when}) {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], text, _session_time(when)))
        session += 1
    questions = []
    for item in data["qa"]:
        # A few evidence entries hold two ids in one string ("D8:6; D9:17").
        parts = (part.strip() for entry in item.get("evidence", []) for part in entry.split(";"))
        evidence = tuple(part for part in parts if part)
        if item.get("category") == UNANSWERABLE or not evidence:
            continue
        questions.append(Question(str(item["question"]), evidence, int(item["category"])))
    return Conversation(path.stem, tuple(turns), tuple(questions))


def load_conversations(directory: Path) -> list[Conversation]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise SystemExit(f"no conversation files (*.json) in {directory}")
    return [load_conversation(path) for path in paths]


# -- the baseline ---------------------------------------------------------------------------------


def bm25_tokens(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in BM25_STOPWORDS]


def bm25_baseline(conversations: Sequence[Conversation], k: int) -> dict[str, Any]:
    scores = Scores()
    for conversation in conversations:
        ids = [turn.dia_id for turn in conversation.turns]
        index = BM25Okapi([bm25_tokens(turn.text) for turn in conversation.turns])
        for question in conversation.questions:
            started = time.perf_counter()
            points = index.get_scores(bm25_tokens(question.text))
            ranked = [ids[row] for row in np.argsort(-points, kind="stable")[:k]]
            scores.latencies.append(time.perf_counter() - started)
            scores.add(question, ranked)
    return scores.report()


# -- the runtime ----------------------------------------------------------------------------------


def _wait_for_vectors(rt: Runtime, deadline: float) -> None:
    """Until every memory has its vector (an embedder other than `hash` fills them in after `remember`)."""
    while True:
        status = rt.memory.status()
        if status.missing_vectors == 0:
            return
        if time.perf_counter() > deadline:
            raise SystemExit(f"vectors still missing after {VECTORS_DEADLINE:.0f} s: {status.missing_vectors}")
        time.sleep(0.2)


def runtime_recall(
    conversations: Sequence[Conversation], embedder: str, k: int, base: Path, progress: Callable[[str], None]
) -> dict[str, Any]:
    scores = Scores()
    remembered = 0
    remember_seconds = 0.0
    vector_seconds = 0.0
    for number, conversation in enumerate(conversations):
        home = base / f"{embedder.replace('/', '_').replace(':', '_')}-{number}"
        rt = Runtime.open(home, realm="none")
        try:
            rt.memory.enable(embedder=embedder)
            member = rt.member(MEMBER)
            dia_of: dict[str, str] = {}
            started = time.perf_counter()
            for turn in conversation.turns:
                receipt = member.remember(turn.text, occurred_at=turn.occurred_at, timeout=TIMEOUT)
                dia_of[receipt.id] = turn.dia_id
            remembered += len(conversation.turns)
            remember_seconds += time.perf_counter() - started
            _wait_for_vectors(rt, started + VECTORS_DEADLINE)
            vector_seconds += time.perf_counter() - started
            progress(f"{embedder}: {conversation.name} remembered ({len(conversation.turns)} turns)")
            for question in conversation.questions:
                asked = time.perf_counter()
                hits = member.recall(question.text, k=k, timeout=TIMEOUT)
                scores.latencies.append(time.perf_counter() - asked)
                scores.add(question, [dia_of[hit.id] for hit in hits])
        finally:
            rt.close()
            shutil.rmtree(home, ignore_errors=True)
    report = scores.report()
    report["remember_per_s"] = round(remembered / remember_seconds, 1) if remember_seconds else 0.0
    report["remembered_and_embedded_per_s"] = round(remembered / vector_seconds, 1) if vector_seconds else 0.0
    return report


def _table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| retriever | recall@1 | recall@3 | recall@5 | recall@10 | any@5 | recall p50 / p99 | remember/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        latency = ""
        if "recall_p50_ms" in result:
            latency = f"{result['recall_p50_ms']:.1f} / {result['recall_p99_ms']:.1f} ms"
        pace = f"{result['remember_per_s']:.0f}" if "remember_per_s" in result else ""
        lines.append(
            f"| {name} | {result['recall@1']:.3f} | {result['recall@3']:.3f} | {result['recall@5']:.3f} | "
            f"{result['recall@10']:.3f} | {result['any@5']:.3f} | {latency} | {pace} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder of LoCoMo-format conversations (*.json)")
    parser.add_argument("--k", type=int, default=10, help="memories recalled per question (default 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument(
        "--embedder", action="append", help="hash (default), local, or a loopback llama URL; repeat to compare"
    )
    args = parser.parse_args(argv)
    if args.k < max(CUTS):
        parser.error(f"--k must be at least {max(CUTS)}: recall@{max(CUTS)} is reported")
    conversations = load_conversations(args.data)
    embedders = args.embedder or ["hash"]

    def progress(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {"plain BM25 (rank_bm25)": bm25_baseline(conversations, args.k)}
    base = Path(tempfile.mkdtemp(prefix="resident-quality-"))
    try:
        for embedder in embedders:
            results[f"resident, {embedder}"] = runtime_recall(conversations, embedder, args.k, base, progress)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    baseline = results["plain BM25 (rank_bm25)"]
    for name, result in results.items():
        if name.startswith("resident"):
            result["vs_bm25"] = {
                f"recall@{cut}": round(result[f"recall@{cut}"] - baseline[f"recall@{cut}"], 4) for cut in CUTS
            }
    report = {
        "data": args.data.name,
        "conversations": len(conversations),
        "questions": baseline["questions"],
        "k": args.k,
        "seconds": round(time.perf_counter() - started, 1),
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(conversations)} conversations, {baseline['questions']} questions, k = {args.k}")
        print(_table(results))


if __name__ == "__main__":
    main()
