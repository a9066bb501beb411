"""The whole in-memory recall index the substrate keeps: metadata plus three retrieval channels.

Every record is a row. Its metadata (bank, lifecycle, replication, activation, time) sit in numpy
columns, so a search first knows the rows it may return at all, and only then ranks: keyword
(BM25 with relevance feedback) and semantic (cosine) channels each pick their best allowed rows,
a time window in the query adds the rows inside it, and a weighted sum of the channels' scores
ranks them (`resident.memory.fusion`). Filtering inside each channel (the keyword channel's
postings, the vector graph's walk) means a withheld or invisible record can never push an
allowed one out of a channel's candidates.

Which rows a recall may return is kept per filter (`resident.memory.allowed`) and updated as rows
come and change, so a recall does not read every row's metadata; nor, from `ANN_MIN_ROWS` rows on,
every vector (`resident.memory.vectors`), nor more than its terms' postings (`resident.memory.keyword`).

Fail-closed: rows whose replication is `conflict` or `invalidated` are never returned, whatever
the caller asks. The substrate calls the index from one thread only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, tzinfo
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput, RecordNotFound
from resident.memory.allowed import AllowedRows
from resident.memory.fusion import (
    by_max,
    min_max,
    parse_time_window,
    recency_rank,
    temporal_rank,
    weighted_sum,
)
from resident.memory.keyword import KeywordIndex
from resident.memory.record_ids import RecordIds
from resident.memory.text import Terms
from resident.memory.vectors import VectorIndex
from resident.messages.memory import Activation, Lifecycle, ReplicationState

__all__ = ["DEFAULT_SEMANTIC_WEIGHT", "MAX_K", "Hit", "IndexEntry", "RecallIndex"]

MAX_K = 100
_LIFECYCLES: dict[str, int] = {"active": 0, "superseded": 1, "retracted": 2}
# Served states come first: a row is served while its code is at most `_LAST_SERVED`.
_REPLICATIONS: dict[str, int] = {"pending": 0, "synced": 1, "conflict": 2, "invalidated": 3, "pending_review": 4}
_ACTIVE = _LIFECYCLES["active"]
_LAST_SERVED = _REPLICATIONS["synced"]
_NONE = -1
_MIN_CAPACITY = 1024
# The per-row metadata columns (attributes `_<name>`), as persisted.
_COLUMNS = ("bank", "lifecycle", "replication", "domain", "project", "occurred_at")
# Adds of at least this many rows store their vectors on a second thread (see `add`).
_PARALLEL_ROWS = 20_000
# Fusion weights, the keyword channel's being 1. How much the semantic channel counts depends on the
# embedder (the caller says); this is the hash embedder's. A row inside a time window the query
# names gains as much as a best keyword match; recency alone only breaks near-ties.
DEFAULT_SEMANTIC_WEIGHT = 0.05
_KEYWORD_WEIGHT = 1.0
_RECENCY_WEIGHT = 0.02
_WINDOW_WEIGHT = 1.0
# Each channel's best rows that become candidates (min-max of cosine is over these).
_CANDIDATES = 100
# The allowed rows of this many recent filters are kept (a member's recalls share one filter).
_FILTERS_KEPT = 16

# A recall's filter: the banks, the domain and project asked, and whether inactive rows count.
_Filter = tuple[frozenset[str], str | None, str | None, bool]


class IndexEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What the index keeps of a memory record; `text` is its summary, a newline, and its body.

    A msgspec struct rather than a dataclass: a rebuild makes one per record, and at 100k records
    the dataclass's per-field `__setattr__` alone took a third of a second. Its fields carry the
    names and types of `MemoryRecord`'s, so a rebuild decodes stored records straight into entries
    (msgspec skips the fields an entry does not have); `text` is then left empty, and the record's
    keyword terms come with the entries instead.

    Time ranking uses `occurred_at` (when it happened), not `recorded_at` (when it was written down).
    """

    id: str
    bank: str
    lifecycle: Lifecycle
    replication: ReplicationState
    activation: Activation = msgspec.field(default_factory=Activation)
    occurred_at: float
    recorded_at: float
    text: str = ""


class Hit(msgspec.Struct, frozen=True):
    """One search result: the fused score and each channel's own score (0 if it missed the row)."""

    id: str
    score: float
    semantic: float
    keyword: float
    temporal: float


class _Names:
    """Interns names to small ints, so filters compare int arrays instead of strings."""

    def __init__(self) -> None:
        self._codes: dict[str | None, int] = {None: _NONE}

    def __len__(self) -> int:
        """How many names have a code (None is not a name)."""
        return len(self._codes) - 1

    def names(self) -> list[str]:
        """Every name, in the order of its code."""
        return [name for name in self._codes if name is not None]

    @classmethod
    def of(cls, names: Sequence[str]) -> _Names:
        """Names with codes 0, 1, ... in the order given (what `names()` returned)."""
        interned = cls()
        interned.intern_all(list(names))
        return interned

    def intern_all(self, names: list[str | None]) -> npt.NDArray[np.int32]:
        """The code of each name (`_NONE` for None), giving new names the next codes."""
        for name in dict.fromkeys(names):
            self._codes.setdefault(name, len(self._codes) - 1)
        return np.fromiter(map(self._codes.__getitem__, names), dtype=np.int32, count=len(names))

    def find(self, name: str) -> int | None:
        return self._codes.get(name)


class RecallIndex:
    """Rows of records with their metadata, keyword postings and vectors; searched with filters."""

    def __init__(self, *, tz: tzinfo = UTC) -> None:
        self._tz = tz
        self._ids = RecordIds()
        self._bank_names = _Names()
        self._domain_names = _Names()
        self._project_names = _Names()
        self._bank = np.zeros(_MIN_CAPACITY, dtype=np.int32)
        self._lifecycle = np.zeros(_MIN_CAPACITY, dtype=np.int8)
        self._replication = np.zeros(_MIN_CAPACITY, dtype=np.int8)
        self._domain = np.zeros(_MIN_CAPACITY, dtype=np.int32)
        self._project = np.zeros(_MIN_CAPACITY, dtype=np.int32)
        self._occurred_at = np.zeros(_MIN_CAPACITY, dtype=np.float64)
        self._keyword = KeywordIndex()
        self._vectors = VectorIndex()
        self._filters: OrderedDict[_Filter, AllowedRows] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._ids

    def add(
        self,
        entries: Sequence[IndexEntry],
        vectors: npt.NDArray[np.floating] | None,
        has_vector: npt.NDArray[np.bool_] | None = None,
        terms: Terms | None = None,
    ) -> None:
        """Index new records; `vectors` rows align with `entries`, `has_vector` marks the real ones.

        `terms` are the entries' texts' `term_ids_batch`, when the caller has them already.

        Nothing is indexed if any entry is invalid (an id already indexed or repeated, an unknown
        lifecycle or replication state, vectors of the wrong shape).
        """
        if not entries:
            return
        ids = [entry.id for entry in entries]
        if len(set(ids)) != len(ids) or not self._ids.isdisjoint(ids):
            raise InvalidInput("every record id must be new to the index and appear once per add")
        lifecycle = _codes(_LIFECYCLES, "lifecycle", [entry.lifecycle for entry in entries])
        replication = _codes(_REPLICATIONS, "replication", [entry.replication for entry in entries])
        real = self._vectors.check(len(entries), vectors, has_vector)
        texts = [entry.text for entry in entries]
        if vectors is not None and len(entries) >= _PARALLEL_ROWS:
            # A bulk add (a rebuild): storing vectors is copying, which lets go of the interpreter
            # lock, so it runs on the other core while this thread builds the keyword postings.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="resident-index") as pool:
                stored = pool.submit(self._vectors.store, len(entries), vectors, real)
                self._keyword.add(texts, terms)
                stored.result()
        else:
            self._vectors.store(len(entries), vectors, real)
            self._keyword.add(texts, terms)

        first, count = len(self._ids), len(entries)
        self._reserve(first + count)
        rows = slice(first, first + count)
        self._bank[rows] = self._bank_names.intern_all([entry.bank for entry in entries])
        self._domain[rows] = self._domain_names.intern_all([entry.activation.domain for entry in entries])
        self._project[rows] = self._project_names.intern_all([entry.activation.project for entry in entries])
        self._lifecycle[rows] = lifecycle
        self._replication[rows] = replication
        self._occurred_at[rows] = [entry.occurred_at for entry in entries]
        self._ids.extend(ids)
        for key, allowed in self._filters.items():
            allowed.extend(self._passes(key, slice(first, first + count)))

    def state(self) -> tuple[dict[str, npt.NDArray[Any]], dict[str, list[str]]]:
        """What `from_state` makes the same index of again: arrays (metadata columns, the record ids,
        and the keyword and vector channels' arrays under `keyword.` and `vectors.`), and the names
        in code order.

        Later changes to the index do not reach the arrays, so another thread may write them out: the
        columns that change (a record's lifecycle, its replication) are copied, a few bytes a row; the
        large arrays are not, because what they hold of these rows never changes (postings, ids, the
        graph's bytes) or is only ever written for rows `vectors.present` says have no vector yet.
        Copying those would hold a second copy of the index, 1-2 GB at a million records, per save.
        """
        count = len(self)
        arrays: dict[str, npt.NDArray[Any]] = {name: getattr(self, f"_{name}")[:count].copy() for name in _COLUMNS}
        arrays.update(self._ids.state())
        arrays.update({f"keyword.{key}": value for key, value in self._keyword.state().items()})
        arrays.update({f"vectors.{key}": value for key, value in self._vectors.state().items()})
        names = {
            "banks": self._bank_names.names(),
            "domains": self._domain_names.names(),
            "projects": self._project_names.names(),
        }
        return arrays, names

    @classmethod
    def from_state(
        cls, arrays: Mapping[str, npt.NDArray[Any]], names: Mapping[str, list[str]], *, tz: tzinfo = UTC
    ) -> RecallIndex:
        """The index `state()` described; InvalidInput if its parts do not fit together.

        The ids are arrays (kept as given, so a load costs nothing per record), or, from an index
        persisted before they were, a list under `names["ids"]`.
        """
        index = cls(tz=tz)
        if "ids" in arrays:
            ids = RecordIds.from_state(arrays)
        else:
            listed = names["ids"]
            if len(set(listed)) != len(listed):
                raise InvalidInput("a persisted recall index names a record id twice")
            ids = RecordIds.of(listed)
        count = len(ids)
        channels = {
            part: {key.partition(".")[2]: value for key, value in arrays.items() if key.startswith(f"{part}.")}
            for part in ("keyword", "vectors")
        }
        sizes = {len(arrays[name]) for name in _COLUMNS} | {
            len(channels["keyword"]["lengths"]),
            len(channels["vectors"]["present"]),
        }
        if sizes != {count}:
            raise InvalidInput(f"a persisted recall index does not fit together: {count} ids, columns of {sizes}")
        index._reserve(count)
        for name in _COLUMNS:
            getattr(index, f"_{name}")[:count] = arrays[name]
        index._ids = ids
        index._bank_names = _Names.of(names["banks"])
        index._domain_names = _Names.of(names["domains"])
        index._project_names = _Names.of(names["projects"])
        index._keyword = KeywordIndex.from_state(channels["keyword"])
        index._vectors = VectorIndex.from_state(channels["vectors"])
        return index

    def set_vectors(self, ids: Sequence[str], vectors: npt.NDArray[np.floating]) -> None:
        """Store vectors for indexed records (those written while the embedder was down)."""
        self._vectors.set([self._row(record_id) for record_id in ids], vectors)

    def missing_vector_ids(self, limit: int | None = None, exclude: Collection[str] = ()) -> list[str]:
        """Ids of records that have no vector yet, in the order they were added: the first `limit`
        of them not in `exclude`."""
        rows = self._vectors.missing()
        if limit is not None:
            rows = rows[: limit + len(exclude)]
        ids = [self._ids[row] for row in rows.tolist()]
        if exclude:
            ids = [record_id for record_id in ids if record_id not in exclude]
        return ids[:limit] if limit is not None else ids

    def missing_vector_count(self) -> int:
        """How many records have no vector yet."""
        return len(self) - self._vectors.count_present()

    @property
    def vector_dim(self) -> int | None:
        """The width of the indexed vectors, or None while there are none."""
        return self._vectors.dim

    def has_vectors(self) -> bool:
        """Whether any record has a vector (a query vector is of no use otherwise)."""
        return self._vectors.count_present() > 0

    def set_lifecycle(self, record_id: str, lifecycle: Lifecycle) -> None:
        """Record that a record was superseded or retracted (or is active again)."""
        row = self._row(record_id)
        self._lifecycle[row] = _codes(_LIFECYCLES, "lifecycle", [lifecycle])[0]
        self._changed(row)

    def set_replication(self, record_id: str, state: ReplicationState) -> None:
        """Record a record's replication state; `conflict` and `invalidated` withhold it from search."""
        row = self._row(record_id)
        self._replication[row] = _codes(_REPLICATIONS, "replication", [state])[0]
        self._changed(row)

    def wait_vectors_indexed(self, timeout: float | None = None) -> bool:
        """Wait until the vector graph holds every row it will (True), or `timeout` passes (False).

        Searches never need this (rows not in the graph yet are scored exactly); tests and
        benchmarks do, to measure the graph itself.
        """
        return self._vectors.wait_built(timeout)

    def stop_building(self, timeout: float | None = None) -> None:
        """Stop adding to the vector graph (after the current chunk) and wait: for an index let go of."""
        self._vectors.stop_building(timeout)

    def graph_rows(self) -> int:
        """How many rows the vector graph holds (0 while there is none)."""
        return self._vectors.graph_rows()

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """How many records are in each lifecycle, and in each replication state (for status)."""
        lifecycle = np.bincount(self._lifecycle[: len(self)], minlength=len(_LIFECYCLES))
        replication = np.bincount(self._replication[: len(self)], minlength=len(_REPLICATIONS))
        return (
            {name: int(lifecycle[code]) for name, code in _LIFECYCLES.items()},
            {name: int(replication[code]) for name, code in _REPLICATIONS.items()},
        )

    def search(  # noqa: PLR0917 - the substrate passes the filters positionally, in this order
        self,
        query: str,
        query_vector: npt.ArrayLike | None,
        banks: Collection[str],
        domain: str | None,
        project: str | None,
        now: float,
        k: int,
        include_inactive: bool = False,
        semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
        candidates: int = _CANDIDATES,
        exact: bool = False,
    ) -> list[Hit]:
        """The best `k` (at most `MAX_K`) records for `query` among those the filters allow.

        A record is allowed when its bank is in `banks`, it is active (or `include_inactive`), its
        replication is not `conflict`/`invalidated` (always), and its activation matches: a record
        with domain X is recalled only when `domain` is None or X, one with no domain for any
        `domain`; the same for `project`. Each channel contributes its best `candidates` rows; the
        semantic channel runs only with a `query_vector`, whose dimension must match the index's,
        and counts `semantic_weight` beside keyword's 1. With `exact`, the semantic channel scans
        every vector instead of asking the graph (what the graph's answers are measured against).
        """
        k = max(0, min(k, MAX_K))
        if k == 0:
            return []
        permitted = self._allowed_rows(banks, domain, project, include_inactive)
        if not permitted.allowed:
            return []
        allowed = permitted.flags
        keyword_rows, keyword_scores = self._keyword.search(query, allowed, candidates, feedback=True)
        nearest = (
            self._vectors.nearest(query_vector, permitted, candidates, exact=exact)
            if query_vector is not None
            else None
        )
        found = [keyword_rows]
        if nearest is not None:
            found.append(nearest[0])
        window = parse_time_window(query, now, tz=self._tz)
        rows = np.unique(np.concatenate(found))
        temporal_rows, temporal_scores = self._temporal(rows, allowed, now, window, candidates)
        if window is not None:
            rows = np.union1d(rows, temporal_rows)
        if not len(rows):
            return []
        keyword = np.zeros(len(rows))
        keyword[np.searchsorted(rows, keyword_rows)] = keyword_scores
        semantic = (
            self._vectors.cosines(query_vector, rows).astype(np.float64)
            if nearest is not None and query_vector is not None
            else np.zeros(len(rows))
        )
        temporal = np.zeros(len(rows))
        temporal[np.searchsorted(rows, temporal_rows)] = temporal_scores
        # Within a window only the rows inside it count as recent; without one, every candidate does.
        timed = temporal > 0 if window is not None else np.ones(len(rows), dtype=np.bool_)
        recency = np.zeros(len(rows))
        recency[timed] = recency_rank(self._occurred_at[rows[timed]])
        channels: list[tuple[npt.ArrayLike, float]] = [(by_max(keyword), _KEYWORD_WEIGHT), (recency, _RECENCY_WEIGHT)]
        if nearest is not None:
            channels.append((min_max(semantic), semantic_weight))
        if window is not None:
            channels.append((timed, _WINDOW_WEIGHT))
        ranked, fused = weighted_sum(np.arange(len(rows)), channels)
        return [
            Hit(
                id=self._ids[int(rows[at])],
                score=score,
                semantic=float(semantic[at]),
                keyword=float(keyword[at]),
                temporal=float(temporal[at]),
            )
            for at, score in zip(ranked[:k].tolist(), fused[:k].tolist(), strict=True)
        ]

    def _temporal(
        self,
        found: npt.NDArray[np.int64],
        allowed: npt.NDArray[np.bool_],
        now: float,
        window: tuple[float, float] | None,
        limit: int,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """How close in time rows are to what the query asks about (see `temporal_rank`).

        Without a time in the query, the rows the content channels `found`, by recency. With a
        window, the rows found inside it, then up to `limit` other allowed rows inside it, so
        "last month's supplier meeting" can reach a supplier record of last month that no content
        channel ranked high.
        """
        first = temporal_rank(found, self._occurred_at[found], now, window, len(found))
        if window is None:
            return first
        outside_found = allowed.copy()
        outside_found[found] = False
        others = np.flatnonzero(outside_found)
        rest = temporal_rank(others, self._occurred_at[others], now, window, limit)
        return np.concatenate((first[0], rest[0])), np.concatenate((first[1], rest[1]))

    def _allowed_rows(
        self, banks: Collection[str], domain: str | None, project: str | None, include_inactive: bool
    ) -> AllowedRows:
        """The rows a recall with these filters may return: kept from an earlier recall with the same
        filters (updated since), or computed over every row once and kept."""
        key: _Filter = (frozenset(banks), domain, project, include_inactive)
        allowed = self._filters.get(key)
        if allowed is None:
            allowed = AllowedRows(self._passes(key, slice(0, len(self))))
            self._filters[key] = allowed
            if len(self._filters) > _FILTERS_KEPT:
                self._filters.popitem(last=False)
        else:
            self._filters.move_to_end(key)
        return allowed

    def _passes(self, key: _Filter, at: slice | npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Whether each row `at` passes the filter `key` (fail-closed: never a withheld row)."""
        banks, domain, project, include_inactive = key
        wanted = np.zeros(len(self._bank_names), dtype=np.bool_)
        for name in banks:
            code = self._bank_names.find(name)
            if code is not None:
                wanted[code] = True
        passes: npt.NDArray[np.bool_] = wanted[self._bank[at]] & (self._replication[at] <= _LAST_SERVED)
        if not include_inactive:
            passes &= self._lifecycle[at] == _ACTIVE
        for column, names, asked in (
            (self._domain, self._domain_names, domain),
            (self._project, self._project_names, project),
        ):
            if asked is not None:
                values = column[at]
                code = names.find(asked)
                passes &= (values == _NONE) | (values == code) if code is not None else values == _NONE
        return passes

    def _changed(self, row: int) -> None:
        """Row `row`'s state changed: update every kept filter's answer for it."""
        rows = np.array([row], dtype=np.int64)
        for key, allowed in self._filters.items():
            allowed.update(rows, self._passes(key, rows))

    def _row(self, record_id: str) -> int:
        row = self._ids.row(record_id)
        if row is None:
            raise RecordNotFound(f"record {record_id!r} is not in the recall index")
        return row

    def _reserve(self, rows: int) -> None:
        capacity = len(self._bank)
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        used = len(self._ids)
        for name in ("_bank", "_lifecycle", "_replication", "_domain", "_project", "_occurred_at"):
            old: npt.NDArray[np.generic] = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[:used] = old[:used]
            setattr(self, name, new)


def _codes(codes: dict[str, int], field: str, values: list[str]) -> npt.NDArray[np.int8]:
    try:
        return np.fromiter(map(codes.__getitem__, values), dtype=np.int8, count=len(values))
    except KeyError as unknown:
        raise InvalidInput(f"unknown {field} {unknown.args[0]!r}; expected one of {', '.join(codes)}") from None
