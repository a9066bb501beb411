"""Keyword index of recall: incremental BM25 over rows 0..n-1, with numpy postings.

Postings live in a few immutable segments (`resident.memory.postings`), each a CSR table (sorted
unique terms, offsets, then rows and term frequencies grouped by term). New rows collect in a
small tail that is sealed into a segment when it grows; neighbouring segments of similar size are
merged, like a binary counter, so there are O(log n) segments and every posting is merged O(log n)
times. Rows only ever grow, and a row's text never changes, so nothing is ever deleted.

Building a segment never uses `argsort` (slow in numpy at millions of postings): each (term, row)
pair is packed into one uint64 and the packed values are sorted, which numpy does with SIMD.

Every row's own terms are kept too (a forward index), for query feedback: a search can take the
best few rows of a first BM25 pass, add their most telling terms to the query (RM3-style relevance
feedback) and rank again, which finds the turns that answer a question in other words than it
asked. The first pass's best row keeps its place: feedback finds neighbours of the best match and
must not push it down. Measured on the LoCoMo development conversations (383 questions), feedback
from 3 rows and 20 terms at 0.3 of the query's weight lifted recall@5 from 0.58 to 0.60 and
recall@10 from 0.65 to 0.69, with recall@1 unchanged; without keeping the best row, recall@1 fell
from 0.37 to 0.33.

BM25 runs with k1 = 1.2 and b = 0.4: memories are short and of similar length, and less length
normalisation than the textbook 0.75 measured better there (recall@5 0.58 against 0.57).

A search's work is bounded by its terms' postings, not by the rows: scores are summed over the
rows the postings name (sorted, not scattered into an array of every row), and the caller's mask
is read at those rows only. At a million rows the dense arrays (a score per row, the mask applied
to every row, the best rows by argmax over all) cost more than the postings themselves.

A search with many postings is pruned, exactly (MaxScore, Turtle & Flood): each segment keeps every
term's largest tf-part (`tf / (tf + norm)` of its postings, raised for a mean length that grew since),
so idf times it bounds what the term adds to any row of the segment. Terms are read whole in the
order of bound per posting until the bounds of the unread ones sum below the current k-th score;
only the rows read (the candidates) can then reach the best, and each candidate's other terms are
looked up at its row (a binary search in the term's ascending rows, or one pass over a term's
postings for many rows), dropping it as soon as its gains and the bounds left fall short. Rows that
may reach the best are scored again in the exhaustive order, so rows, order and scores are those of
scoring every posting (tests/test_memory_keyword_pruned.py). Feedback's second pass reads only the
added terms whole: a row none of them names keeps its first-pass score, under the first pass's best.
Measured with `bench/keyword_choice.py` (its Zipf mix, half the rows masked, best 100, load average
about 4 on 2 CPUs): at 1M rows the median query reads 336k postings, not 721k, and takes 9.4 / 41.7
ms p50 / p99 (15.5 / 55.8 with feedback), against 19.1 / 98.0 (26.6 / 99.7) scoring every posting
and tantivy's 9.1 / 20.5 (no feedback, the bank a filter clause). The slowest queries are all
common terms (a dozen Chinese terms, each in a third of the rows): nothing bounds one out, and they
read about 2M postings, so p99 stays twice tantivy's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.fusion import top_k
from resident.memory.postings import K1, Segment, length_norm, peaks_of, run_starts, spread
from resident.memory.text import Terms, term_ids, term_ids_batch

__all__ = ["KeywordIndex"]

_T = TypeVar("_T", bound=np.generic)

# Relevance feedback: rows read, terms added, and the added terms' weight beside the query's.
FEEDBACK_ROWS = 3
FEEDBACK_TERMS = 20
FEEDBACK_WEIGHT = 0.3
# At most this many postings are read for the added terms. In 100k synthetic memories of a Zipf
# vocabulary, twenty added terms read 124k postings (median; up to 360k) and doubled the keyword
# channel's time; a budget of 30k keeps feedback to about a third of it, and an index of a few
# thousand memories never reaches it.
FEEDBACK_POSTINGS = 30_000
# Scores are summed sparsely (sorted postings) while a search's postings are under 1/8 of the
# rows; measured at 100k rows, a dense bincount over every row is cheaper above that.
_SPARSE_SHARE = 8
# A query whose terms have fewer postings than this reads them all (the pruned search's steps cost
# more than they save); LoCoMo-sized indexes always do.
_PRUNED_FROM = 1 << 15
# A term's postings are looked up at rows by binary search while the rows are fewer than 1/8 of
# the postings, else read in one pass.
_SEARCH_SHARE = 8
# Bounds are raised by this share before they prune, against the rounding of sums in another order.
_SLACK = 1e-9
_TAIL_PAIRS = 1 << 14
_MIN_CAPACITY = 1024


@dataclass(slots=True)
class _Query:
    """What one pruned search pass works with."""

    weight: npt.NDArray[np.float64]  # each term's idf x its weight x (k1 + 1)
    limit: int
    split: int  # the gains of the first `split` terms are summed before the others are added
    partial: npt.NDArray[np.float64]  # each row's gains from the terms read whole so far; -inf if masked
    average: float  # the rows' mean length
    floor: float  # `limit` rows score at least this much
    # -1 for every row, made when first needed; `_look_up` writes rows' places in and takes them out.
    places: npt.NDArray[np.int32] | None = None
    # The first pass's best rows, when this is feedback's second pass (which adds terms from `split` on).
    seeds: npt.NDArray[np.int64] | None = None


class KeywordIndex:
    """BM25 (k1=1.2, b=0.4) over rows appended in order; a row's text never changes."""

    def __init__(self) -> None:
        self._segments: list[Segment] = []
        self._tail_rows: list[npt.NDArray[np.int32]] = []
        self._tail_terms: list[npt.NDArray[np.uint64]] = []
        self._tail_pairs = 0
        self._tail: Segment | None = None
        self._lengths = np.zeros(_MIN_CAPACITY, dtype=np.float32)
        self._count = 0
        self._total_length = 0.0
        # The forward index: row r's terms are `_row_terms[_row_starts[r]:_row_starts[r + 1]]`.
        self._row_starts = np.zeros(_MIN_CAPACITY + 1, dtype=np.int64)
        self._row_terms = np.zeros(_MIN_CAPACITY * 16, dtype=np.uint64)
        # Each row's BM25 length normalisation, kept between adds (every search pass needs it).
        self._norm: npt.NDArray[np.float32] | None = None
        # How many postings searches have read (whole, or one by binary search): a test's measure.
        self._postings_read = 0

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays that `from_state` makes the same index of again: its postings as one segment, the
        rows' lengths and the forward index (a persisted index's keyword channel)."""
        if self._tail_pairs:
            self._segments.append(self._seal_tail())
        # One segment is what a search reads fastest anyway; merging here changes no score.
        while len(self._segments) > 1:
            newer = self._segments.pop()
            self._segments[-1] = Segment.merge(self._segments[-1], newer, self._average())
        if self._segments:
            segment = self._segments[0]
        else:
            segment = Segment.from_pairs(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64), self._lengths, 0.0)
        used = int(self._row_starts[self._count])
        return {
            "terms": segment.terms,
            "starts": segment.starts,
            "rows": segment.rows,
            "tf": segment.tf,
            "peaks": segment.peaks,
            "peaks_average": np.array([segment.average]),
            "lengths": self._lengths[: self._count],
            "row_starts": self._row_starts[: self._count + 1],
            "row_terms": self._row_terms[:used],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, npt.NDArray[Any]]) -> KeywordIndex:
        index = cls()
        count = len(state["lengths"])
        index._reserve(count)
        index._lengths[:count] = state["lengths"]
        index._row_starts[: count + 1] = state["row_starts"]
        row_terms = state["row_terms"]
        if len(row_terms) >= _MIN_CAPACITY * 16:
            # Kept as given (a memory map of a persisted index): full, so the next add copies it to grow.
            index._row_terms = row_terms
        else:
            index._row_terms = np.zeros(_MIN_CAPACITY * 16, dtype=np.uint64)
            index._row_terms[: len(row_terms)] = row_terms
        index._count = count
        index._total_length = float(np.sum(state["lengths"], dtype=np.float64))
        if len(state["rows"]):
            terms, starts, rows, tf = state["terms"], state["starts"], state["rows"], state["tf"]
            if "peaks" in state:
                peaks, average = state["peaks"], float(state["peaks_average"][0])
            else:
                # Saved before segments kept their peaks: one pass over the postings finds them.
                average = index._total_length / count
                peaks = peaks_of(starts, rows, tf, index._lengths, average)
            index._segments = [Segment(terms, starts, rows, tf, peaks, average, 0, count - 1)]
        return index

    @classmethod
    def build(cls, texts: Sequence[str]) -> KeywordIndex:
        """An index of `texts` as rows 0..len(texts)-1 (the bulk path used at rebuild)."""
        index = cls()
        index.add(texts)
        return index

    def __len__(self) -> int:
        return self._count

    def add(self, texts: Sequence[str], analysed: Terms | None = None) -> None:
        """Append `texts` as the next rows; large batches go straight into a segment.

        `analysed`, when given, is `term_ids_batch(texts)` computed already (it is not checked).
        """
        if not texts:
            return
        docs, terms = term_ids_batch(texts) if analysed is None else (analysed[0].copy(), analysed[1])
        counts = np.bincount(docs, minlength=len(texts))
        lengths = counts.astype(np.float32)
        first = self._count
        self._reserve(first + len(texts))
        self._lengths[first : first + len(texts)] = lengths
        self._store_rows(first, docs, terms, counts)
        self._count += len(texts)
        self._total_length += float(lengths.sum())
        self._norm = None
        if first:
            docs += np.int32(first)
        self._tail_rows.append(docs)
        self._tail_terms.append(terms)
        self._tail_pairs += len(terms)
        self._tail = None
        if self._tail_pairs >= _TAIL_PAIRS:
            self._segments.append(self._seal_tail())
            self._compact()

    def search(
        self, query: str, mask: npt.NDArray[np.bool_] | None, limit: int, *, feedback: bool = False
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The `limit` best BM25 rows for `query` among those where `mask` is True, best first.

        Only rows sharing a term with the query (score > 0) are returned. Document frequencies
        and the average length are over all rows, masked or not. With `feedback`, the terms of
        the best rows of a first pass join the query (see the module's docstring); the feedback
        rows come from the masked rows only, so a row the caller may not see never shapes a query.
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if mask is not None and len(mask) < self._count:
            raise InvalidInput(f"mask has {len(mask)} rows, the index {self._count}")
        query_terms, query_counts = np.unique(term_ids(query), return_counts=True)
        if limit <= 0 or self._count == 0 or not len(query_terms):
            return empty
        weights = query_counts.astype(np.float64)
        if self.document_frequencies(query_terms).sum() < _PRUNED_FROM:
            return self._exhaustive(query_terms, weights, mask, limit, feedback=feedback)
        if not feedback:
            return self._best(query_terms, weights, mask, limit)
        # The first pass's best `limit` rows: the feedback's rows are its first few, and as feedback
        # only adds to a score, the second pass's best are above the last of them.
        plain_rows, plain_scores = self._best(query_terms, weights, mask, max(limit, FEEDBACK_ROWS))
        if not len(plain_rows):
            return empty
        best_rows, best_scores = plain_rows[:FEEDBACK_ROWS], plain_scores[:FEEDBACK_ROWS]
        terms, added = self._feedback_terms(best_rows, best_scores, query_terms)
        if not len(terms):
            return plain_rows[:limit], plain_scores[:limit]
        floor = float(plain_scores[limit - 1]) if len(plain_scores) >= limit else 0.0
        rows, scores = self._best(
            np.concatenate((query_terms, terms)),
            np.concatenate((weights, added)),
            mask,
            limit,
            split=len(query_terms),
            floor=floor,
            seeds=plain_rows[:limit],
        )
        # The first pass's best row goes first, just above the best score of all, as `_with_feedback` has it.
        others = rows != best_rows[0]
        first = np.nextafter(scores[0], np.inf)
        return np.append(best_rows[:1], rows[others][: limit - 1]), np.append(first, scores[others][: limit - 1])

    def _exhaustive(
        self,
        query_terms: npt.NDArray[np.uint64],
        weights: npt.NDArray[np.float64],
        mask: npt.NDArray[np.bool_] | None,
        limit: int,
        *,
        feedback: bool,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """`search` by scoring every posting of the query's terms (and of the feedback's)."""
        scored = self._scores(query_terms, weights, mask)
        if scored is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if feedback:
            scored = self._with_feedback(scored, query_terms, mask)
        rows, scores = scored
        matched = scores > 0
        return top_k(rows[matched], scores[matched], limit)

    def _best(
        self,
        terms: npt.NDArray[np.uint64],
        weights: npt.NDArray[np.float64],
        mask: npt.NDArray[np.bool_] | None,
        limit: int,
        *,
        split: int | None = None,
        floor: float = 0.0,
        seeds: npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The `limit` best rows for `terms` (weighing `weights`) that `mask` allows, best first: what
        `top_k` over `_scores` gives, without reading every posting (MaxScore, see the module's docstring).

        A row's score adds its gains in the order of `terms`, the first `split` and then the rest, as
        `_scores` and `_with_feedback` add them, so the scores are the same to the last bit. The
        caller may know that `limit` rows score `floor` or more. With `seeds`, the first `split` terms'
        best `limit` rows (by `top_k`), this is feedback's second pass, which adds the other terms.
        """
        segments = [segment for segment in self._all_segments() if len(segment.terms)]
        # The largest segment first: its best rows set a threshold the smaller ones mostly stay under.
        segments.sort(key=len, reverse=True)
        places = [segment.find(terms) for segment in segments]
        df = np.zeros(len(terms))
        for segment, (found, at) in zip(segments, places, strict=True):
            df += np.where(found, segment.starts[at + 1] - segment.starts[at], 0)
        weight = _idf(self._count, df) * weights * (K1 + 1)
        split = len(terms) if split is None else split
        # Rows the mask hides start at -inf: adding gains keeps them there, and they are never taken
        # for candidates (at 0), which costs less than leaving their postings out of every read.
        partial = np.zeros(self._count) if mask is None else np.where(mask[: self._count], 0.0, -np.inf)
        query = _Query(weight, limit, split, partial, self._average(), floor, seeds=seeds)
        kept: list[tuple[Segment, npt.NDArray[np.bool_], npt.NDArray[np.intp], npt.NDArray[np.int64]]] = []
        # Scores summed in another order than `_scores` sums them, lowered a little below the exact.
        kept_scores: list[npt.NDArray[np.float64]] = []
        for segment, (found, at) in zip(segments, places, strict=True):
            if found.any():
                rows, scores = self._segment_best(segment, found, at, query, kept_scores)
                kept.append((segment, found, at, rows))
                kept_scores.append(scores * (1 - _SLACK))
        # Only the rows that may be among the best are scored exactly (in `_scores`'s order).
        cut = _kth(kept_scores, query.limit)
        best_rows: list[npt.NDArray[np.int64]] = []
        best_scores: list[npt.NDArray[np.float64]] = []
        for (segment, found, at, rows), scores in zip(kept, kept_scores, strict=True):
            near = rows[scores * (1 + 3 * _SLACK) >= cut]
            best_rows.append(near)
            best_scores.append(self._exact(segment, found, at, query, near))
        if not best_rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return top_k(np.concatenate(best_rows), np.concatenate(best_scores), query.limit)

    def _segment_best(
        self,
        segment: Segment,
        found: npt.NDArray[np.bool_],
        at: npt.NDArray[np.intp],
        query: _Query,
        kept_scores: list[npt.NDArray[np.float64]],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The rows of `segment` that may be among the query's best, given scores no higher than
        those of rows of other segments `kept_scores`: every row of the best and few others, and
        their scores (summed in another order than `_exact` sums them)."""
        present = np.flatnonzero(found)
        bounds = query.weight[present] * segment.peaks_at(query.average, at[present])
        # Terms are read whole in the order of their bound per posting: a rare term is read first
        # for little and takes its bound off what unread terms can add. Any order is exact; this
        # one reads the twenty-odd rare terms feedback adds before the query's common ones.
        sizes = segment.starts[at[present] + 1] - segment.starts[at[present]]
        seeds = query.seeds
        # Feedback's second pass reads its added terms whole, first: a row none of them names
        # scores what the first pass gave it, under the first pass's best (`seeds`, candidates too).
        forced = present >= query.split if seeds is not None else np.zeros(len(present), dtype=np.bool_)
        by_bound = np.lexsort((-bounds / sizes, ~forced))
        present, bounds = present[by_bound], bounds[by_bound]
        # rest[j]: the most a row can score from the terms after the first j, so the most a row
        # scores that none of the first j names. Raised a little against rounding.
        rest = np.append(np.cumsum(bounds[::-1])[::-1], 0.0) * (1 + _SLACK)
        threshold = max(query.floor, _kth(kept_scores, query.limit))
        essential = int(forced.sum()) if seeds is not None else _essential(rest, threshold, 1)
        partial = query.partial
        found_rows: list[npt.NDArray[np.int32]] = []
        probed_rows = np.zeros(0, dtype=np.int64)
        probed_scores = np.zeros(0)
        read = 0
        while True:
            # Read the essential terms' postings (each once): their rows are the candidates.
            for term in present[read:essential].tolist():
                lo, hi = int(segment.starts[at[term]]), int(segment.starts[at[term] + 1])
                rows, tf = segment.rows[lo:hi], segment.tf[lo:hi]
                self._postings_read += hi - lo
                # Every gain is positive, so an allowed row still at 0 is one no term read so far names.
                found_rows.append(rows[partial[rows] == 0])
                partial[rows] += query.weight[term] * tf / (tf + self._length_norm()[rows])
            read = essential
            if seeds is not None:
                mine = seeds[(seeds >= segment.low) & (seeds <= segment.high)]
                found_rows.append(mine[partial[mine] == 0])
            candidates = np.concatenate(found_rows).astype(np.int64)
            reached = partial[candidates]
            # A candidate scores at most its essential terms' gains and the other terms' bounds; in
            # feedback's second pass, a row outside the first pass's best scored at most `floor`
            # there, so at most its added terms' gains (all read) and `floor`.
            caps = np.full(len(candidates), np.inf)
            if seeds is not None:
                outside = ~np.isin(candidates, seeds)
                caps[outside] = reached[outside] + query.floor
            # The candidates of the highest bounds, scored (the other terms looked up), set the threshold.
            best = _best_few(np.minimum(reached + rest[essential], caps), query.limit)
            fresh = ~np.isin(candidates[best], probed_rows)
            if fresh.any():
                probe, scores = candidates[best][fresh], reached[best][fresh].copy()
                for term in present[essential:].tolist():
                    self._add_gains(segment, int(at[term]), query.weight[term], probe, scores, query=query)
                probed_rows = np.append(probed_rows, probe)
                probed_scores = np.append(probed_scores, scores * (1 - _SLACK))
            threshold = max(threshold, _kth([*kept_scores, probed_scores], query.limit))
            if seeds is not None or essential == len(present) or rest[essential] < threshold:
                break
            essential = _essential(rest, threshold, essential + 1)
        # Rows no essential term names score under the threshold. A candidate is dropped once its
        # gains so far and the bounds of the terms not yet looked up stay under it too.
        alive, scores = candidates, reached
        for place in range(essential, len(present)):
            keep = np.minimum(scores + rest[place], caps) * (1 + _SLACK) >= threshold
            alive, scores, caps = alive[keep], scores[keep], caps[keep]
            term = int(present[place])
            self._add_gains(segment, int(at[term]), query.weight[term], alive, scores, query=query)
        keep = scores * (1 + _SLACK) >= threshold
        return alive[keep], scores[keep]

    def _add_gains(
        self,
        segment: Segment,
        term_at: int,
        weight: np.float64,
        rows: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64],
        *,
        query: _Query,
    ) -> None:
        """Add to `scores` (of `rows`) the gains of `segment`'s term `term_at` (of `weight`) at those rows."""
        hit, posting = self._look_up(segment, term_at, rows, query)
        tf = segment.tf[posting]
        scores[hit] += weight * tf / (tf + self._length_norm()[rows[hit]])

    def _look_up(
        self, segment: Segment, term_at: int, rows: npt.NDArray[np.int64], query: _Query
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        """Which of `rows` (distinct) have a posting of `segment`'s term `term_at`, and where that
        posting is: a binary search in the term's rows (ascending) for each of a few rows, or, for
        many, a pass over the term's postings reading each one's place in `rows` from an array."""
        lo, hi = int(segment.starts[term_at]), int(segment.starts[term_at + 1])
        term_rows = segment.rows[lo:hi]
        if len(rows) * _SEARCH_SHARE < hi - lo:
            self._postings_read += len(rows)
            place = np.minimum(np.searchsorted(term_rows, rows), hi - lo - 1)
            hit = np.flatnonzero(term_rows[place] == rows)
            return hit, place[hit] + lo
        self._postings_read += hi - lo
        if query.places is None:
            query.places = np.full(self._count, -1, dtype=np.int32)
        query.places[rows] = np.arange(len(rows), dtype=np.int32)
        places = query.places[term_rows]
        query.places[rows] = -1
        postings = np.flatnonzero(places >= 0)
        return places[postings].astype(np.intp), postings + lo

    def _exact(
        self,
        segment: Segment,
        found: npt.NDArray[np.bool_],
        at: npt.NDArray[np.intp],
        query: _Query,
        rows: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.float64]:
        """The scores of `rows` (all in `segment`): the gains added in the terms' order, the first
        `query.split` terms apart, as `_scores` and `_with_feedback` add them."""
        places: list[npt.NDArray[np.intp]] = []
        postings: list[npt.NDArray[np.int64]] = []
        owners: list[npt.NDArray[np.intp]] = []
        for term in np.flatnonzero(found).tolist():
            hit, posting = self._look_up(segment, int(at[term]), rows, query)
            places.append(hit)
            postings.append(posting)
            owners.append(np.full(len(hit), term))
        place, posting, owner = np.concatenate(places), np.concatenate(postings), np.concatenate(owners)
        tf = segment.tf[posting]
        gains = query.weight[owner] * tf / (tf + self._length_norm()[rows[place]])
        # A weighted bincount adds in array order, term by term, as `_by_row` does.
        first = owner < query.split
        before: npt.NDArray[np.float64] = np.bincount(place[first], weights=gains[first], minlength=len(rows))  # type: ignore[assignment]
        after: npt.NDArray[np.float64] = np.bincount(place[~first], weights=gains[~first], minlength=len(rows))  # type: ignore[assignment]
        return before + after

    def _scores(
        self, terms: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The BM25 scores for `terms` (each counted `weights` times) of the rows `mask` allows that
        have any of them: rows ascending, and their scores; None when no row has any of the terms."""
        rows, tf, owner = self._postings(terms)
        if not len(rows):
            return None
        df = np.bincount(owner, minlength=len(terms)).astype(np.float64)
        weight = _idf(self._count, df) * weights * (K1 + 1)
        gains = weight[owner] * tf / (tf + self._length_norm()[rows])
        if mask is not None:
            kept = mask[rows]
            rows, gains = rows[kept], gains[kept]
        return self._by_row(rows, gains)

    def _by_row(
        self, rows: npt.NDArray[np.int32], gains: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Each row's sum of its `gains`: the rows ascending, and their sums, each summed in posting order.

        Postings few beside the rows are sorted (a row packed above its posting's place, so a plain
        value sort, not an argsort, groups them); many are scattered into an array of every row.
        """
        if len(rows) * _SPARSE_SHARE >= self._count:
            # A weighted bincount gives float64 (numpy's stubs say intp whatever the weights).
            dense: npt.NDArray[np.float64] = np.bincount(rows, weights=gains, minlength=self._count)  # type: ignore[assignment]
            present = np.flatnonzero(np.bincount(rows, minlength=self._count))
            return present.astype(np.int64), dense[present]
        packed = (rows.astype(np.uint64) << np.uint64(32)) | np.arange(len(rows), dtype=np.uint64)
        packed.sort()
        ordered_rows = packed >> np.uint64(32)
        starts = np.flatnonzero(run_starts(ordered_rows))
        sums: npt.NDArray[np.float64] = np.add.reduceat(gains[(packed & np.uint64(0xFFFFFFFF)).astype(np.intp)], starts)
        return ordered_rows[starts].astype(np.int64), sums

    def _length_norm(self) -> npt.NDArray[np.float32]:
        """`k1 * (1 - b + b * length / average length)` of every row."""
        if self._norm is None:
            self._norm = length_norm(self._lengths[: self._count], self._average())
        return self._norm

    def _with_feedback(
        self,
        scored: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]],
        query_terms: npt.NDArray[np.uint64],
        mask: npt.NDArray[np.bool_] | None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """`scored` plus the scores of the terms the best rows add to the query; the best row stays first."""
        rows, scores = scored
        best_rows, best_scores = top_k(rows[scores > 0], scores[scores > 0], FEEDBACK_ROWS)
        if not len(best_rows):
            return scored
        terms, weights = self._feedback_terms(best_rows, best_scores, query_terms)
        if not len(terms):
            return scored
        added = self._scores(terms, weights, mask)
        if added is None:
            return scored
        both, inverse = np.unique(np.concatenate((rows, added[0])), return_inverse=True)
        total = np.zeros(len(both))
        # First the first pass's scores, then the added ones: the sum a dense array would hold.
        total[inverse[: len(rows)]] = scores
        total[inverse[len(rows) :]] += added[1]
        total[np.searchsorted(both, best_rows[0])] = np.nextafter(total.max(), np.inf)
        return both, total

    def _feedback_terms(
        self, rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], query_terms: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]:
        """The terms `rows` (scored `scores`) add to a query, and their weights (at most `FEEDBACK_WEIGHT`).

        A term weighs as much as it makes up of each row's text, by how well that row matched,
        times its rarity; the query's own terms are not added again.
        """
        starts, ends = self._row_starts[rows], self._row_starts[rows + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
        picked = np.concatenate([self._row_terms[lo:hi] for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)])
        share = np.repeat(scores / scores[0] / np.maximum(lengths, 1), lengths)
        terms, inverse = np.unique(picked, return_inverse=True)
        weights: npt.NDArray[np.float64] = np.bincount(inverse, weights=share, minlength=len(terms))  # type: ignore[assignment]
        df = self.document_frequencies(terms)
        weights *= _idf(self._count, df)
        # Both are sorted and unique: a binary search finds the query's own terms.
        at = np.searchsorted(terms, query_terms)
        weights[at[terms.take(at, mode="clip") == query_terms]] = 0.0
        order = _within_budget(np.argsort(-weights, kind="stable"), weights, df)
        if not len(order):
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
        return terms[order], FEEDBACK_WEIGHT * weights[order] / weights[order[0]]

    def document_frequencies(self, terms: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
        """In how many rows each of `terms` occurs."""
        df = np.zeros(len(terms))
        for segment in self._all_segments():
            found, lo, hi = segment.lookup(terms)
            df += np.where(found, hi - lo, 0)
        return df

    def _postings(
        self, terms: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32], npt.NDArray[np.intp]]:
        """Every posting of `terms` in every segment, as three aligned arrays: its row, its term
        frequency, and which of `terms` it belongs to.

        One gather per segment rather than a slice per term and segment: a search with feedback
        asks for twenty-odd terms in a dozen segments, and the slices alone cost a millisecond.
        """
        rows: list[npt.NDArray[np.int32]] = []
        tfs: list[npt.NDArray[np.float32]] = []
        owners: list[npt.NDArray[np.intp]] = []
        for segment in self._all_segments():
            found, lo, hi = segment.lookup(terms)
            present = np.flatnonzero(found)
            if not len(present):
                continue
            sizes = hi[present] - lo[present]
            self._postings_read += int(sizes.sum())
            # Posting i of the gathered run of term t lies at lo[t] + i: `spread` maps each run.
            at = spread(lo[present], np.concatenate(([0], np.cumsum(sizes))))
            rows.append(segment.rows[at])
            tfs.append(segment.tf[at])
            owners.append(np.repeat(present, sizes))
        if not rows:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.intp)
        return np.concatenate(rows), np.concatenate(tfs), np.concatenate(owners)

    def _all_segments(self) -> list[Segment]:
        if self._tail is None and self._tail_pairs:
            self._tail = self._tail_segment()
        return [*self._segments, self._tail] if self._tail is not None else self._segments

    def _seal_tail(self) -> Segment:
        segment = self._tail
        if segment is None:
            segment = self._tail_segment()
        self._tail_rows, self._tail_terms, self._tail_pairs, self._tail = [], [], 0, None
        return segment

    def _tail_segment(self) -> Segment:
        rows, terms = _joined(self._tail_rows), _joined(self._tail_terms)
        return Segment.from_pairs(rows, terms, self._lengths, self._average())

    def _average(self) -> float:
        return self._total_length / self._count if self._count else 0.0

    def _compact(self) -> None:
        """Merge the newest segments while the older of the two is less than twice the newer."""
        while len(self._segments) > 1 and len(self._segments[-2]) < 2 * len(self._segments[-1]):
            newer = self._segments.pop()
            older = self._segments.pop()
            self._segments.append(Segment.merge(older, newer, self._average()))

    def _store_rows(
        self, first: int, docs: npt.NDArray[np.int32], terms: npt.NDArray[np.uint64], counts: npt.NDArray[np.intp]
    ) -> None:
        """Append the new rows' terms to the forward index, grouped by row."""
        used = int(self._row_starts[first])
        self._row_starts[first + 1 : first + 1 + len(counts)] = used + np.cumsum(counts)
        # Stored terms arrive grouped by row already (a rebuild); a fresh analysis does not.
        if len(docs) > 1 and not bool((docs[1:] >= docs[:-1]).all()):
            terms = terms[np.argsort(docs, kind="stable")]
        if not used and len(terms) > len(self._row_terms):
            # The first bulk add (a rebuild) keeps its array rather than copying it (tens of MB at
            # 100k records); the index never writes into it, and a later add copies it to grow.
            self._row_terms = terms
            return
        room = len(self._row_terms)
        if used + len(terms) > room:
            while room < used + len(terms):
                room *= 2
            grown = np.zeros(room, dtype=np.uint64)
            grown[:used] = self._row_terms[:used]
            self._row_terms = grown
        self._row_terms[used : used + len(terms)] = terms

    def _reserve(self, rows: int) -> None:
        capacity = len(self._lengths)
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        lengths = np.zeros(capacity, dtype=np.float32)
        lengths[: self._count] = self._lengths[: self._count]
        self._lengths = lengths
        starts = np.zeros(capacity + 1, dtype=np.int64)
        starts[: self._count + 1] = self._row_starts[: self._count + 1]
        self._row_starts = starts


def _within_budget(
    ranked: npt.NDArray[np.intp], weights: npt.NDArray[np.float64], df: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp]:
    """The first `FEEDBACK_TERMS` of the `ranked` terms of positive weight whose postings fit the budget.

    The second pass reads every posting of the added terms, so a term too common to fit what is
    left of `FEEDBACK_POSTINGS` is passed over for the next one: a common word adds little to a
    query and costs a large index much.
    """
    chosen: list[int] = []
    left = FEEDBACK_POSTINGS
    for term in ranked.tolist():
        if len(chosen) == FEEDBACK_TERMS or weights[term] <= 0:
            break
        if df[term] <= left:
            chosen.append(term)
            left -= int(df[term])
    return np.array(chosen, dtype=np.intp)


def _essential(rest: npt.NDArray[np.float64], threshold: float, least: int) -> int:
    """How many terms (by bound, highest first) must be read whole, at least `least`: the fewest
    whose followers' bounds `rest` sum under `threshold` (MaxScore's essential terms). Without a
    threshold yet, `least`: the first terms read give one."""
    if threshold <= 0:
        return least
    under = np.flatnonzero(rest < threshold)
    return max(least, int(under[0]) if len(under) else len(rest) - 1)


def _best_few(values: npt.NDArray[np.float64], count: int) -> npt.NDArray[np.intp]:
    """The places of `count` of the largest `values` (all when there are no more), in place order."""
    if len(values) <= count:
        return np.arange(len(values))
    return np.sort(np.argpartition(values, len(values) - count)[len(values) - count :])


def _kth(scores: list[npt.NDArray[np.float64]], k: int) -> float:
    """The k-th largest of all `scores`, or 0 when there are fewer than k."""
    joined = np.concatenate(scores) if scores else np.zeros(0)
    if len(joined) < k:
        return 0.0
    return float(np.partition(joined, len(joined) - k)[len(joined) - k])


def _idf(rows: int, df: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """BM25's inverse document frequency, never negative: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    idf: npt.NDArray[np.float64] = np.log1p((rows - df + 0.5) / (df + 0.5))
    return idf


def _joined(parts: list[npt.NDArray[_T]]) -> npt.NDArray[_T]:
    """The parts as one array, without copying a single part (bulk adds come as one)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
