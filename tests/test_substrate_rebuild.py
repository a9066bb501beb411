"""Rebuilding the recall index from stored terms and vectors: the same ranking as the live index.

`remember` stores each record's keyword term ids beside it (`resident.memory.stored_terms`), and a
rebuild reads them instead of analysing the texts. Records stored without terms (committed by
another path, or before terms were stored) or with an older analysis's tag are analysed again.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from resident import Runtime
from resident.actors.index_snapshot import snapshot_path
from resident.ids import new_id
from resident.memory.embedding import HashEmbedder
from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.rebuild import StoredColumns, rebuild_index
from resident.memory.records import indexed_text, make_record
from resident.memory.stored_terms import TERMS_TAG, decode_terms, encode_terms, is_current, split_terms
from resident.memory.stored_vectors import encode_vector, stored_vector, vector_key, vector_prefix
from resident.memory.text import term_ids, term_ids_batch
from resident.messages.memory import Activation, MemoryRecord, RecallHit, RecordAdmitted
from resident.messages.store import Commit
from resident.store.tables import TERMS
from tests.memory_helpers import open_runtime, wait_until
from tests.store_helpers import open_home

MEMORIES = (
    "the ledger export fails when the staging database is read-only",
    "la exportación del libro mayor falla cuando la base de datos de staging es de solo lectura",
    "账本导出在预发布数据库只读时失败",
    "rotate the ledger signing keys before the quarterly audit",
)
QUERIES = ("ledger export staging", "exportación libro mayor", "账本导出", "signing keys audit", "ledger")


def _scores(rt: Runtime) -> dict[str, list[tuple[str, float]]]:
    deven = rt.member("deven")
    found: dict[str, list[RecallHit]] = {query: deven.recall(query, k=10) for query in QUERIES}
    return {query: sorted((hit.id, hit.keyword) for hit in hits) for query, hits in found.items()}


def _approx(scores: dict[str, list[tuple[str, float]]]) -> dict[str, list[tuple[str, object]]]:
    # Segments merge in another order after a rebuild, so BM25 sums may differ in the last bits.
    return {query: [(record_id, pytest.approx(score)) for record_id, score in hits] for query, hits in scores.items()}


def test_remembered_records_get_their_terms_stored_and_a_rebuild_from_them_ranks_the_same(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        receipts = [rt.member("deven").remember(text) for text in MEMORIES]
        rt.memory.wait_indexed()
        with rt._internal.store.reader() as reader:
            stored = [reader.raw(TERMS, receipt.id) for receipt in receipts]
        live = _scores(rt)
    for text, raw in zip(MEMORIES, stored, strict=True):
        assert raw is not None
        assert raw.startswith(TERMS_TAG)
        assert sorted(np.frombuffer(raw[len(TERMS_TAG) :], dtype="<u8").tolist()) == sorted(term_ids(text).tolist())
    assert all(live[query] for query in QUERIES)
    # From the persisted index, then built from the stored terms.
    with open_runtime(home) as reopened:
        assert _scores(reopened) == _approx(live)
    _forget_index(home)
    with open_runtime(home) as rebuilt:
        assert _scores(rebuilt) == _approx(live)


def _commit_directly(rt: Runtime, bank: str, text: str) -> str:
    """Commit a record the way an import does: through the writer, with no vector and no terms."""
    now = time.time()
    record = make_record(
        record_id=new_id("mem"), owner="deven", scope="AGENT_CORE", bank=bank, text=text, summary=None,
        kind="experience", counterpart=None, world=None, importance=0.5, importance_reason="", confidence=1.0,
        activation=Activation(), supersedes=None, canonical=False, delegated=False, source="test",
        occurred_at=None, cites=(), now=now,
    )
    rt._internal.write(Commit(events=(RecordAdmitted(at=now, record=record),)))
    return record.id


def _terms_of(rt: Runtime, ids: list[str]) -> dict[str, bytes | None]:
    with rt._internal.store.reader() as reader:
        return {record_id: reader.raw(TERMS, record_id) for record_id in ids}


def _all_current(rt: Runtime, ids: list[str]) -> bool:
    return all(is_current(raw) for raw in _terms_of(rt, ids).values())


def _forget_terms(home: Path, ids: list[str]) -> None:
    """Make `home` look written before terms were stored, for `ids` (the runtime has no API for it)."""
    with open_home(home) as store, store._env.begin(write=True) as txn:
        for record_id in ids:
            assert txn.delete(record_id.encode(), db=store._dbs[TERMS.name])
    _forget_index(home)


def _forget_index(home: Path) -> None:
    """Drop the persisted recall index, so that the next start builds it from the store."""
    with open_home(home) as store:
        snapshot_path(store.path).unlink(missing_ok=True)


def test_records_stored_without_terms_get_them_and_missing_or_stale_terms_are_analysed_at_rebuild(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        first, second = (deven.remember(text) for text in MEMORIES[:2])
        imported = [_commit_directly(rt, first.bank, text) for text in MEMORIES[2:]]
        ids = [first.id, second.id, *imported]
        # Indexing what another writer committed stores its terms, so restarts need not analyse it.
        assert wait_until(lambda: _all_current(rt, ids), timeout=10.0), _terms_of(rt, ids)
        for record_id, text in zip(imported, MEMORIES[2:], strict=True):
            raw = _terms_of(rt, [record_id])[record_id]
            assert raw is not None
            assert sorted(np.frombuffer(raw[len(TERMS_TAG) :], dtype="<u8").tolist()) == sorted(term_ids(text).tolist())
        # Terms of an older analysis: the tag differs, so they must not be trusted.
        rt._internal.write(Commit(events=(), terms=((second.id, b"terms-v0" + np.arange(5, dtype="<u8").tobytes()),)))
        # The committed records' vectors are filled in behind; compare rankings once they are stored.
        assert rt.memory.wait_vectors(timeout=10.0)
        live = _scores(rt)
    assert sum(len(hits) for hits in live.values()) >= len(MEMORIES)
    _forget_terms(home, imported)
    with open_runtime(home) as reopened:
        assert _scores(reopened) == _approx(live)
        # What the rebuild had to analyse is stored again, for the next rebuild.
        assert wait_until(lambda: _all_current(reopened, ids), timeout=10.0), _terms_of(reopened, ids)
    with open_runtime(home) as again:
        assert _scores(again) == _approx(live)


def test_stored_terms_round_trip_and_values_of_another_tag_or_a_torn_length_are_skipped() -> None:
    texts = list(MEMORIES)
    docs, terms = term_ids_batch(texts)
    values = [encode_terms(own) for own in split_terms((docs, terms), len(texts))]
    values[1] = b"terms-v0" + values[1][len(TERMS_TAG) :]
    values[2] = values[2][:-3]
    rows = [3, 2, 1, 0]  # value i belongs to row rows[i]: the table's order need not be the rows'
    (got_docs, got_terms), covered = decode_terms(rows, values, len(texts) + 1)
    assert covered.tolist() == [True, False, False, True, False]
    expected = sorted((rows[i], term) for i in (0, 3) for term in terms[docs == i].tolist())
    assert sorted(zip(got_docs.tolist(), got_terms.tolist(), strict=True)) == expected
    empty, nothing = decode_terms([], [], 2)
    assert (len(empty[0]), len(empty[1]), nothing.tolist()) == (0, 0, [False, False])


# What homes store depends on these: term ids (in the terms table) and hash-embedder vectors (in
# the vectors table, tagged "hash"). If either digest changes, records stored by earlier releases
# no longer match what queries are analysed into. Change the analysis only on purpose: bump
# `TERMS_TAG` (stored terms are then analysed again) and give the hash embedder a new name
# (stored vectors are then embedded again), then update the digests here.
PINNED_SAMPLE = [
    "Deploying to staging needs the migration first",
    "la exportación del libro mayor falla",
    "账本导出在预发布数据库只读时失败",
    "Ünïcödé \uff26\uff35\uff2c\uff2c \ufb01 ß 😀",  # full-width FULL, the fi ligature
]
PINNED_TERMS = "ddcd6899ce3e80290f3b77911208ab28df177b6b1340b9bdec14d005f0e9c7b9"
# Signs only: float32 `log` may differ in its last bit between CPUs, the features' cells and signs may not.
PINNED_VECTOR_SIGNS = "cd779d0c5e7e916db8fde2a49f6abd2cc2b1e06cfefb4a8318587c040a8b40b3"


def test_the_analysis_and_the_hash_embedding_that_homes_store_have_not_changed() -> None:
    docs, terms = term_ids_batch(PINNED_SAMPLE)
    pairs = sorted(zip(docs.tolist(), terms.tolist(), strict=True))
    assert hashlib.sha256(repr(pairs).encode()).hexdigest() == PINNED_TERMS, "bump TERMS_TAG, see above"
    signs = np.sign(HashEmbedder().embed(PINNED_SAMPLE)).astype(np.int8)
    assert hashlib.sha256(signs.tobytes()).hexdigest() == PINNED_VECTOR_SIGNS, "rename the hash embedder"


def test_the_analysis_tables_are_built_while_the_substrate_starts_not_by_the_first_request(tmp_path: Path) -> None:
    # A fresh process, so no other test has built the (process-wide, cached) tables already.
    code = (
        "import sys\n"
        "from resident.memory import text\n"
        "from resident.messages.memory import GetSubstrateStatus\n"
        "from resident.runtime import Runtime\n"
        "with Runtime.open(sys.argv[1], realm='none') as rt:\n"
        "    rt._internal.wiring.substrate.ask(GetSubstrateStatus(), 60.0)  # answered once setup is done\n"
        "    print(text._tables.cache_info().currsize)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home")], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "1"


# -- the rebuild as a pure function of stored columns ---------------------------------------------


def _shaped(text: str, number: int) -> MemoryRecord:
    return make_record(
        record_id=f"mem_{number:04d}", owner="deven", scope="AGENT_CORE", bank="agent_core/deven", text=text,
        summary=None, kind="experience", counterpart=None, world=None, importance=0.5, importance_reason="",
        confidence=1.0, activation=Activation(), supersedes=None, canonical=False, delegated=False,
        source="test", occurred_at=1_700_000_000.0 + number, cites=(), now=1_700_000_000.0 + number,
    )


def _columns(records: list[MemoryRecord], vectors: dict[str, bytes], terms: dict[str, bytes]) -> StoredColumns:
    """The columns a reader gives: every table in key order (the vectors' keys without their prefix)."""
    ordered = sorted(records, key=lambda record: record.id)
    term_ids_ = sorted(terms)
    vector_ids = sorted(vectors)
    return StoredColumns(
        record_keys=[record.id.encode() for record in ordered],
        records=[msgspec.msgpack.encode(record) for record in ordered],
        term_keys=[record_id.encode() for record_id in term_ids_],
        terms=[terms[record_id] for record_id in term_ids_],
        vector_keys=[record_id.encode() for record_id in vector_ids],
        vectors=[vectors[record_id] for record_id in vector_ids],
    )


def _ranked(index: RecallIndex, embedder: HashEmbedder) -> dict[str, list[tuple[str, object]]]:
    found: dict[str, list[tuple[str, object]]] = {}
    for query in QUERIES:
        hits = index.search(query, embedder.embed([query])[0], ["agent_core/deven"], None, None, 1.8e9, k=10)
        found[query] = [(hit.id, pytest.approx(hit.score)) for hit in hits]
    return found


def test_a_rebuild_from_stored_columns_ranks_like_the_index_built_as_records_arrived() -> None:
    embedder = HashEmbedder()
    records = [_shaped(text, number) for number, text in enumerate(MEMORIES * 3)]
    texts = [indexed_text(record) for record in records]
    vectors = embedder.embed(texts)
    live = RecallIndex()
    for record, text, vector in zip(records, texts, vectors, strict=True):
        live.add([IndexEntry(id=record.id, bank=record.bank, lifecycle=record.lifecycle,
                             replication=record.replication, occurred_at=record.occurred_at,
                             recorded_at=record.recorded_at, text=text)], vector[None, :])
    stored_terms = split_terms(term_ids_batch(texts), len(texts))
    # Some records without stored terms (an import), one with an older analysis's tag.
    terms = {record.id: encode_terms(own) for record, own in zip(records, stored_terms, strict=True)}
    del terms[records[1].id], terms[records[5].id]
    terms[records[2].id] = b"terms-v0" + terms[records[2].id][len(TERMS_TAG) :]
    stored = {record.id: encode_vector(embedder.name, vector) for record, vector in zip(records, vectors, strict=True)}
    rebuilt = rebuild_index(_columns(records, stored, terms), embedder.name)
    assert _ranked(rebuilt.index, embedder) == _ranked(live, embedder)
    assert rebuilt.index.missing_vector_count() == 0
    unstored = sorted(record_id for record_id, _ in rebuilt.unstored_terms)
    assert unstored == sorted(r.id for r in [*records[1:3], records[5]])


def test_a_rebuild_counts_another_embedders_vectors_as_missing() -> None:
    records = [_shaped(text, number) for number, text in enumerate(MEMORIES)]
    vector = np.ones(8, dtype=np.float32)
    stored = {records[0].id: encode_vector("llama:http://127.0.0.1:8080", vector),
              records[1].id: encode_vector("hash", np.ones(256, dtype=np.float32))}
    rebuilt = rebuild_index(_columns(records, stored, {}), "llama:http://127.0.0.1:8080")
    assert rebuilt.index.missing_vector_ids() == [r.id for r in records[1:]]


def test_each_embedders_vectors_have_their_own_key_prefix_in_record_order() -> None:
    prefixes = {vector_prefix(name) for name in ("hash", "local:multilingual-e5-small-q4", "llama:http://127.0.0.1:1")}
    assert len(prefixes) == 3
    assert all(prefix.endswith(b"\0") and len(prefix) == 17 for prefix in prefixes)
    keys = [vector_key("hash", record_id).encode() for record_id in ("mem_b", "mem_a", "mem_c")]
    assert sorted(keys) == [vector_key("hash", record_id).encode() for record_id in ("mem_a", "mem_b", "mem_c")]
    assert stored_vector(encode_vector("hash", np.ones(4, dtype=np.float32)), "local:x") is None
