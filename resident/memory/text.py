"""Text normalisation and tokenisation for recall, alike for Chinese, Spanish and English.

Normalising is NFKC, case folding and, for Latin letters, dropping accents, so "Canción" and
"cancion" are the same word; CJK text is kept as it is. Tokens are runs of letters and digits
(Latin, Cyrillic, Greek, ...) minus a short English and Spanish stopword list and, for Han, Kana
and Hangul, which do not put spaces between words, every character plus every pair of adjacent
characters.

Keyword terms are words cut to their stems by a light suffix stripper for English and Spanish
(see `_stem_ends`): "painted", "painting" and "paints" all count as "paint", "viajes" and "viajar"
as "viaj". It strips, it never rewrites, and it keeps at least four letters, so short words are
left alone. On the LoCoMo development conversations it lifted keyword recall@5 from 0.55 to 0.58,
as much as the Snowball English stemmer did (0.59), and it is language-blind, so Spanish gains
too (recall@5 0.58 to 0.61 on the labeled Spanish conversation in `tests/data/conversations`).

A token's id is a 64-bit polynomial hash of its codepoints finished by the SplitMix64 mixer, so an
id is the same in every process (Python's `hash()` is salted per process). Batches never loop over
characters in Python: texts are joined into slices of about 130 thousand codepoints, decoded to
numpy arrays, folded through lookup tables, and hashed through prefix sums, which turn the hash of
any span into two lookups and a multiplication.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "STOPWORDS",
    "Analysis",
    "Terms",
    "analyse",
    "normalize",
    "prefix_hash",
    "span_hashes",
    "term_id",
    "term_ids",
    "term_ids_batch",
    "terms_of",
]

# English (normalised: lower case; "s" and "t" are what "team's" and "don't" leave behind), then
# Spanish (normalised: no accents, so "más" is "mas" and "qué" is "que").
_STOPWORD_TEXT = (
    "a an the of to in on at for by with from and or but is are was were be been being it its this "
    "that these those as if then than so not no do does did we our us you your i me my he she they "
    "them their his her what which who whom whose when where why how there here about into onto over "
    "after before s t has have had will would shall should can could just also all any some more most "
    "very"
    " de la el y en que los las un una unos unas del al por para con sin se su sus lo le les es son "
    "fue era como mas pero o u e ni si ya muy nos nuestro nuestra nuestros nuestras este esta esto "
    "estos estas ese esa eso esos esas hay ha han he hemos sobre entre cuando donde quien cual me mi "
    "mis tu te yo ella ellos ellas"
)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

# Inflection suffixes the stemmer strips (normalised, so without accents): English, then Spanish
# verb endings and participles. Plurals ("s", "es") serve both languages.
_SUFFIXES = (
    "ing", "ed", "ies", "es", "s",
    "ando", "iendo", "ado", "ada", "ados", "adas", "ido", "ida", "idos", "idas", "ar", "er", "ir",
    "amos", "emos", "imos", "aron", "ieron", "aba", "aban", "mente",
)  # fmt: skip
_MIN_STEM = 4
_STRIP_ROUNDS = 2
# A lone "s" is kept after these; the vowel table says which codepoints a stem may lose at its end.
_S = np.array(ord("s"), dtype=np.uint32)
_U = np.array(ord("u"), dtype=np.uint32)
_FINAL_VOWEL = np.zeros(128, dtype=np.bool_)
_FINAL_VOWEL[[ord(vowel) for vowel in "aeoy"]] = True
# The stem cache (`_known_stems`): 65,536 slots by the word id's low bits. An empty slot's key has
# bit 4 of the slot flipped, so no word of that slot can match it.
_STEM_SLOTS = np.array((1 << 16) - 1, dtype=np.uint64)
_STEM_IDS = np.zeros(1 << 16, dtype=np.uint64)
_STEM_KEYS = np.arange(1 << 16, dtype=np.uint64) ^ np.uint64(1 << 4)

_MASK64 = (1 << 64) - 1
# The polynomial base and the length salt only need to be odd (so the base is invertible mod 2^64)
# and to look random; these are the MurmurHash2 and wyhash multipliers.
_BASE = 0x5BD1E9955BD1E995
_BASE_INV = pow(_BASE, -1, 1 << 64)
_LEN_SALT = 0xA0761D6478BD642F
# Constants that meet arrays are 0-d arrays of the array's type: a ufunc call takes one in about
# half the time of a numpy scalar and a quarter of that of a Python int, which matters when the
# arrays are a single short text's.
_MIX1 = np.array(0xBF58476D1CE4E5B9, dtype=np.uint64)
_MIX2 = np.array(0x94D049BB133111EB, dtype=np.uint64)
_MIX_SHIFTS = tuple(np.array(shift, dtype=np.uint64) for shift in (30, 27, 31))
_BASE_U64 = np.array(_BASE, dtype=np.uint64)
_LEN_SALT_U64 = np.array(_LEN_SALT, dtype=np.uint64)
_PAIR_SALT = np.array((2 * _LEN_SALT) & _MASK64, dtype=np.uint64)

_SEP = "\x00"
_SLICE_CHARS = 1 << 17  # measured: slices that stay in cache beat bigger ones
# Batches this large (a rebuild) are analysed on two threads; smaller ones are not worth a pool.
_PARALLEL_TEXTS = 20_000
_FOLD_LIMIT = 0x2000  # every precomposed Latin letter and the combining diacritics lie below this
_DROP = -1
_UNSAFE = 0xFFFFFFFF
_UNICODE = 0x110000
_BMP = 0x10000
_PLANES_0_1 = 0x20000

# A codepoint's token class is stored in the two bits above it (codepoints need 21), so one table
# lookup gives both: as int32, a word character is negative and a CJK one at least `_CJK_BIT`.
_CJK, _WORD = 1, 2
_CLASS_SHIFT = 30
_CJK_BIT = np.array(_CJK << _CLASS_SHIFT, dtype=np.int32)
_CODEPOINT_BITS = np.array((1 << 21) - 1, dtype=np.uint32)
_NUL = np.array(0, dtype=np.uint32)
_ZERO_INT32 = np.array(0, dtype=np.int32)
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # iteration mark, closing mark, ideographic zero
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # Han extension A
    (0x4E00, 0x9FFF),  # Han
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xD7B0, 0xD7FF),  # Hangul Jamo extended B
    (0xF900, 0xFAFF),  # Han compatibility
    (0x20000, 0x3FFFF),  # Han extensions B and later
)


# `(doc_index, term_id)` pairs, one per token of a batch of texts, as two aligned arrays.
Terms = tuple[npt.NDArray[np.int32], npt.NDArray[np.uint64]]


@dataclass(frozen=True, slots=True)
class Analysis:
    """One slice of a batch after normalisation: its codepoints and where its tokens are.

    Positions index `codepoints`, in which documents are separated by NUL (a NUL inside a text is
    read as a space). `*_doc` are batch-wide document indexes, from `first_doc` to
    `first_doc + n_docs - 1`; `codepoint_doc` gives one for every codepoint (a NUL counts with the
    document after it; no token is at a NUL). `prefix` is `prefix_hash(codepoints)`, kept so that
    the hash embedder's n-grams need not compute it again. Words are the ones kept (stopwords
    removed), each with its term id; every CJK character is listed, and every adjacent pair of them
    by the position of its first. `stem_id` is the term id of each kept word's stem (the word's own
    id when nothing was stripped): keyword terms are stems, the hash embedder's features are words.
    """

    first_doc: int
    n_docs: int
    codepoints: npt.NDArray[np.uint32]
    codepoint_doc: npt.NDArray[np.int32]
    prefix: npt.NDArray[np.uint64]
    word_start: npt.NDArray[np.intp]
    word_end: npt.NDArray[np.intp]
    word_doc: npt.NDArray[np.int32]
    word_id: npt.NDArray[np.uint64]
    stem_id: npt.NDArray[np.uint64]
    cjk_pos: npt.NDArray[np.intp]
    cjk_doc: npt.NDArray[np.int32]
    cjk_id: npt.NDArray[np.uint64]
    pair_pos: npt.NDArray[np.intp]
    pair_doc: npt.NDArray[np.int32]
    pair_id: npt.NDArray[np.uint64]


def normalize(text: str) -> str:
    """Fold `text` to the form tokens are made from: NFKC, case-folded, Latin letters unaccented.

    Combining diacritics (U+0300-U+036F) left after NFKC are dropped too: they only follow letters
    NFKC could not compose with them, and matching ignores accents anyway.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).translate(_fold_map())


def term_id(token: str) -> int:
    """The id of one token that is already normalised (as `term_ids` would compute it)."""
    value, power = 0, 1
    for char in token:
        value = (value + ord(char) * power) & _MASK64
        power = (power * _BASE) & _MASK64
    return int(_mix(np.array([(value + len(token) * _LEN_SALT) & _MASK64], dtype=np.uint64))[0])


def term_ids(text: str) -> npt.NDArray[np.uint64]:
    """The term ids of every token of `text`: its word stems, then its CJK characters, then CJK pairs."""
    return term_ids_batch([text])[1]


def term_ids_batch(texts: Sequence[str]) -> Terms:
    """`(doc_index, term)` for every token of every text, in no particular order.

    (In fact slice by slice, a slice being a run of texts, and within a slice word stems first,
    then CJK characters, then CJK pairs; callers should not rely on it.)
    """
    if len(texts) >= _PARALLEL_TEXTS:
        return _term_ids_in_parallel(texts)
    return terms_of(analyse(texts))


def terms_of(parts: Iterable[Analysis]) -> Terms:
    """`(doc_index, term)` for every token of analysed slices (what `term_ids_batch` returns).

    For a caller that has analysed a batch already (the hash embedder's input), so the keyword
    index does not analyse the same texts a second time.
    """
    docs: list[npt.NDArray[np.int32]] = []
    terms: list[npt.NDArray[np.uint64]] = []
    for part in parts:
        docs += (part.word_doc, part.cjk_doc, part.pair_doc)
        terms += (part.stem_id, part.cjk_id, part.pair_id)
    if not docs:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64)
    return np.concatenate(docs), np.concatenate(terms)


def _term_ids_in_parallel(texts: Sequence[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint64]]:
    """`term_ids_batch` of a large batch (an index rebuild) on two threads.

    Most of the work is numpy, which lets go of the interpreter lock, so two halves analysed at
    once finish in about two thirds of the time on a 2-core machine.
    """
    middle = len(texts) // 2
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="resident-terms") as pool:
        (first_docs, first_terms), (second_docs, second_terms) = pool.map(
            term_ids_batch, (texts[:middle], texts[middle:])
        )
    return np.concatenate((first_docs, second_docs + np.int32(middle))), np.concatenate((first_terms, second_terms))


def analyse(texts: Sequence[str]) -> Iterator[Analysis]:
    """Normalise and tokenise `texts` slice by slice (shared by term ids and the hash embedder)."""
    if not texts:
        return
    if sum(map(len, texts)) + len(texts) < _SLICE_CHARS:
        # The usual batch is one slice; this is what the general split below gives for it.
        yield _analyse_slice(texts, 0)
        return
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    slice_of = np.cumsum(lengths + 1) // _SLICE_CHARS
    bounds = [0, *(np.flatnonzero(np.diff(slice_of)) + 1).tolist(), len(texts)]
    for lo, hi in itertools.pairwise(bounds):
        yield _analyse_slice(texts[lo:hi], lo)


def _analyse_slice(texts: Sequence[str], first_doc: int) -> Analysis:
    # Every numpy call costs a microsecond or two however short its arrays, and batches of one text
    # are common, so calls are few: one table lookup gives codepoints and classes, arithmetic is in
    # place, and text without CJK skips the CJK work.
    classified, codepoint_doc = _classified_codepoints(texts)
    codepoints = classified & _CODEPOINT_BITS
    if first_doc:
        codepoint_doc += first_doc
    signed_class = classified.view(np.int32)

    # Word runs start and end where the padded "is a word character" flag flips.
    in_word = np.zeros(len(classified) + 2, dtype=np.bool_)
    np.less(signed_class, _ZERO_INT32, out=in_word[1:-1])
    edges = (in_word[1:] != in_word[:-1]).nonzero()[0]
    prefix = prefix_hash(codepoints)
    word_start, word_end = edges[0::2], edges[1::2]
    word_id = _span_ids(prefix, word_start, word_end)
    keep = _is_content_word(word_id)
    word_start, word_end, word_id = word_start[keep], word_end[keep], word_id[keep]
    stem_id = _stem_ids(codepoints, prefix, word_start, word_end, word_id)

    cjk_pos = (signed_class >= _CJK_BIT).nonzero()[0]
    if len(cjk_pos):
        cjk_codepoints = codepoints[cjk_pos]
        cjk_doc = codepoint_doc[cjk_pos]
        adjacent = cjk_pos[1:] - cjk_pos[:-1] == 1
        pair_pos = cjk_pos[:-1][adjacent]
        pair_doc = cjk_doc[:-1][adjacent]
        # A two-character span hashes to c0 + c1 * BASE: no prefix sums needed.
        pair_hash = cjk_codepoints[1:][adjacent] * _BASE_U64
        pair_hash += cjk_codepoints[:-1][adjacent]
        pair_hash += _PAIR_SALT
        cjk_id, pair_id = _character_ids(cjk_codepoints), _mix(pair_hash)
    else:
        cjk_doc, pair_doc = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        pair_pos = np.zeros(0, dtype=np.intp)
        cjk_id, pair_id = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)
    return Analysis(
        first_doc=first_doc,
        n_docs=len(texts),
        codepoints=codepoints,
        codepoint_doc=codepoint_doc,
        prefix=prefix,
        word_start=word_start,
        word_end=word_end,
        word_doc=codepoint_doc[word_start],
        word_id=word_id,
        stem_id=stem_id,
        cjk_pos=cjk_pos,
        cjk_doc=cjk_doc,
        cjk_id=cjk_id,
        pair_pos=pair_pos,
        pair_doc=pair_doc,
        pair_id=pair_id,
    )


def _classified_codepoints(texts: Sequence[str]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int32]]:
    """`normalize` of `texts` joined by NUL, as codepoints each with its token class in the bits
    above it, and the index of the text each codepoint belongs to (a NUL counts with the text after).
    """
    # NFKC leaves ASCII as it is and never changes or composes across a NUL, so only the texts
    # that need it are normalised: on mixed batches that halves the time.
    joined = _SEP.join([text if text.isascii() else unicodedata.normalize("NFKC", text) for text in texts])
    classified = _classify(joined)
    codepoint_doc = np.add.accumulate(classified == _NUL, dtype=np.int32)
    if len(codepoint_doc) and codepoint_doc[-1] != len(texts) - 1:
        # A text has NULs of its own, which are read as spaces.
        return _classified_codepoints([text.replace(_SEP, " ") for text in texts])
    return classified, codepoint_doc


def _classify(nfkc: str) -> npt.NDArray[np.uint32]:
    """`normalize` of NFKC text as codepoints, each with its token class in the bits above it.

    Through a lookup table when that gives the same answer: folding NFKC text one codepoint at a
    time equals `normalize` unless some codepoint case-folds to several, or to one that is not NFKC,
    or is a combining mark (which may compose differently after folding); the table marks those,
    and such text takes the string path instead.
    """
    classified_table, kind = _tables()
    # `take` rather than indexing: about twice as fast; the mode skips a bounds check that no
    # codepoint can fail.
    classified = classified_table.take(np.frombuffer(nfkc.encode("utf-32-le"), dtype=np.uint32), mode="clip")
    # `_UNSAFE` is the largest uint32, so a maximum below it means there is none.
    if not len(classified) or classified.max() < _UNSAFE:
        return classified
    slow = unicodedata.normalize("NFKC", nfkc.casefold())
    codepoints = _fold_accents(np.frombuffer(slow.encode("utf-32-le"), dtype=np.uint32))
    classes = kind.take(codepoints, mode="clip").astype(np.uint32)
    classes <<= _CLASS_SHIFT
    classes |= codepoints
    return classes


def prefix_hash(codepoints: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    """Prefix sums of `codepoint[j] * BASE**j` mod 2**64 (wrapping uint64 arithmetic)."""
    forward, _ = _powers(len(codepoints))
    prefix = np.empty(len(codepoints) + 1, dtype=np.uint64)
    prefix[0] = 0
    np.multiply(codepoints, forward[: len(codepoints)], out=prefix[1:])
    # Two's-complement int64 sums wrap to the same bits as uint64 ones, and numpy's int64
    # cumulative sum is about twice as fast.
    np.add.accumulate(prefix[1:].view(np.int64), out=prefix[1:].view(np.int64))
    return prefix


def span_hashes(prefix: npt.NDArray[np.uint64], n: int) -> npt.NDArray[np.uint64]:
    """The polynomial hash of every span of `n` codepoints, by start position (no gathers needed).

    `prefix` is `prefix_hash(codepoints)`; a span hashes the same wherever it sits in the text.
    """
    starts = max(len(prefix) - n, 0)
    _, inverse = _powers(len(prefix))
    hashes = prefix[n:] - prefix[:starts]
    hashes *= inverse[:starts]
    return hashes


def _span_ids(
    prefix: npt.NDArray[np.uint64], start: npt.NDArray[np.intp], end: npt.NDArray[np.intp]
) -> npt.NDArray[np.uint64]:
    """The term id of each span `[start, end)`: its polynomial hash, salted by length and mixed."""
    _, inverse = _powers(len(prefix))
    hashes = prefix[end] - prefix[start]
    # The hash of a span is the same wherever the span sits in the text.
    hashes *= inverse[start]
    salt = (end - start).astype(np.uint64)
    salt *= _LEN_SALT_U64
    hashes += salt
    return _mix(hashes)


def _stem_ids(
    codepoints: npt.NDArray[np.uint32],
    prefix: npt.NDArray[np.uint64],
    start: npt.NDArray[np.intp],
    end: npt.NDArray[np.intp],
    word_id: npt.NDArray[np.uint64],
) -> npt.NDArray[np.uint64]:
    """The term id of each word's stem (`_stem_ends`); the word's own id where nothing is stripped."""
    stem_id, known = _known_stems(word_id)
    unknown = (~known).nonzero()[0]
    if len(unknown):
        start, end = start[unknown], end[unknown]
        stem_end = _stem_ends(codepoints, prefix, start, end)
        fresh = word_id[unknown].copy()
        changed = (stem_end != end).nonzero()[0]
        if len(changed):
            fresh[changed] = _span_ids(prefix, start[changed], stem_end[changed])
        stem_id[unknown] = fresh
        _learn_stems(word_id[unknown], fresh)
    return stem_id


def _known_stems(word_id: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """The stem ids of the words a recent analysis stemmed already, and which words those are.

    A word stems the same wherever it occurs, and words repeat (a batch of 40 memories holds about
    600 words, most seen before), so a direct-mapped table by word id answers most of them in a
    few array operations instead of the suffix tests and hashing, which cost about 40 µs per batch
    whatever its size: most of a one-line query's analysis. The table is two arrays, the stem ids
    and each stem id XOR its word id; a slot counts as the word's only if the two agree, so threads
    that overwrite one another's slots at once can never give a word another word's stem (short of
    a 64-bit coincidence, as likely as two words sharing a term id).
    """
    slots = word_id & _STEM_SLOTS
    stems = _STEM_IDS.take(slots, mode="clip")
    known: npt.NDArray[np.bool_] = (_STEM_KEYS.take(slots, mode="clip") ^ stems) == word_id
    return stems, known


def _learn_stems(word_id: npt.NDArray[np.uint64], stem_id: npt.NDArray[np.uint64]) -> None:
    slots = word_id & _STEM_SLOTS
    _STEM_IDS[slots] = stem_id
    _STEM_KEYS[slots] = stem_id ^ word_id


def _stem_ends(
    codepoints: npt.NDArray[np.uint32],
    prefix: npt.NDArray[np.uint64],
    start: npt.NDArray[np.intp],
    end: npt.NDArray[np.intp],
) -> npt.NDArray[np.intp]:
    """Where each word's stem ends: up to two inflection suffixes stripped, then a final vowel.

    Each round strips the longest suffix of `_SUFFIXES` that leaves `_MIN_STEM` codepoints (a lone
    "s" stays after "s" or "u": "class", "status"); two rounds take "paintings" to "paint" and
    "guitars" to "guit", as "guitar" goes. A last `a`, `e`, `o` or `y` then goes too, so "dance",
    "danced" and "dancing" meet at "danc", "study" and "studies" at "stud", "nuevo" and "nueva" at
    "nuev". Suffixes are compared by their polynomial hash (one lookup per length), not per word.
    """
    _, inverse = _powers(len(prefix))
    stem_end = end.copy()
    for _ in range(_STRIP_ROUNDS):
        cut = np.zeros(len(stem_end), dtype=np.intp)
        length = stem_end - start
        for size, suffixes in _suffix_table():
            candidates = ((length >= _MIN_STEM + size) & (cut == 0)).nonzero()[0]
            if not len(candidates):
                continue
            tail = stem_end[candidates] - size
            hashes = prefix[stem_end[candidates]] - prefix[tail]
            hashes *= inverse[tail]
            # `suffixes` is sorted and short: a binary search beats `np.isin` for every batch size.
            found = suffixes.take(np.searchsorted(suffixes, hashes), mode="clip") == hashes
            cut[candidates[found]] = size
        lone_s = (cut == 1).nonzero()[0]
        if len(lone_s):
            before = codepoints[stem_end[lone_s] - 2]
            cut[lone_s[(before == _S) | (before == _U)]] = 0
        if not cut.any():
            break
        stem_end -= cut
    has_vowel = stem_end - start > _MIN_STEM
    has_vowel[has_vowel] = _FINAL_VOWEL.take(codepoints[stem_end[has_vowel] - 1], mode="clip")
    stem_end -= has_vowel
    return stem_end


@functools.cache
def _suffix_table() -> tuple[tuple[int, npt.NDArray[np.uint64]], ...]:
    """`(length, polynomial hashes of the suffixes of that length)`, longest first."""
    by_length: dict[int, list[int]] = {}
    for suffix in _SUFFIXES:
        points = np.frombuffer(suffix.encode("utf-32-le"), dtype=np.uint32)
        by_length.setdefault(len(suffix), []).append(int(prefix_hash(points)[-1]))
    return tuple((size, np.array(sorted(hashes), dtype=np.uint64)) for size, hashes in sorted(by_length.items())[::-1])


def _mix(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser, in place: a bijection that spreads every input bit over the word."""
    first, second, third = _MIX_SHIFTS
    values ^= values >> first
    values *= _MIX1
    values ^= values >> second
    values *= _MIX2
    values ^= values >> third
    return values


def _character_ids(codepoints: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    """The term id of each single character, from a table for the BMP (where nearly all CJK is)."""
    table = _bmp_character_ids()
    if not len(codepoints) or codepoints.max() < len(table):
        return table[codepoints]
    return _mix(codepoints.astype(np.uint64) + np.uint64(_LEN_SALT))


@functools.cache
def _bmp_character_ids() -> npt.NDArray[np.uint64]:
    table = _mix(np.arange(_BMP, dtype=np.uint64) + np.uint64(_LEN_SALT))
    table.flags.writeable = False
    return table


def _is_content_word(ids: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    mask, table = _stopword_table()
    content: npt.NDArray[np.bool_] = table[ids & mask] != ids
    return content


@functools.cache
def _stopword_table() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """A direct-mapped table of stopword ids, indexed by as few low bits as keep them apart."""
    ids = np.array([term_id(word) for word in STOPWORDS], dtype=np.uint64)
    bits = 8
    while len(np.unique(ids & np.uint64((1 << bits) - 1))) < len(ids):
        bits += 1
    # An empty slot holds a value whose low bits are not its own index, so no id can equal it.
    table = np.arange(1 << bits, dtype=np.uint64) ^ np.uint64(1)
    table[ids & np.uint64((1 << bits) - 1)] = ids
    table.flags.writeable = False
    return np.array((1 << bits) - 1, dtype=np.uint64), table


def _powers(count: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """`BASE**j` and `BASE**-j` mod 2**64 for j < count, at least.

    Sizes up to a slice are cached by power of two; a longer single text gets its own arrays.
    """
    bits = max(12, (count - 1).bit_length())
    return _cached_powers(bits) if bits <= _SLICE_CHARS.bit_length() else _compute_powers(bits)


@functools.cache
def _cached_powers(bits: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    return _compute_powers(bits)


def _compute_powers(bits: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    def powers(base: int) -> npt.NDArray[np.uint64]:
        values = np.full(1 << bits, base, dtype=np.uint64)
        values[0] = 1
        np.cumprod(values, out=values)
        values.flags.writeable = False
        return values

    return powers(_BASE), powers(_BASE_INV)


def _fold_accents(codepoints: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """`normalize`'s last step on NFKC, case-folded codepoints: unaccent Latin, drop diacritics."""
    at = np.flatnonzero((codepoints >= 0x80) & (codepoints < _FOLD_LIMIT))
    if not len(at):
        return codepoints
    folded = _accent_table()[codepoints[at]]
    codepoints = codepoints.copy()
    codepoints[at] = folded
    dropped = at[folded == _DROP]
    return np.delete(codepoints, dropped) if len(dropped) else codepoints


@functools.cache
def _fold_pairs() -> tuple[tuple[int, int], ...]:
    """`(codepoint, replacement)` for every codepoint below `_FOLD_LIMIT` that folding changes."""
    pairs: list[tuple[int, int]] = [(cp, _DROP) for cp in range(0x300, 0x370)]
    for cp in range(0x80, _FOLD_LIMIT):
        char = chr(cp)
        if not unicodedata.name(char, "").startswith("LATIN"):
            continue
        decomposed = unicodedata.normalize("NFD", char)
        if len(decomposed) > 1 and all(0x300 <= ord(mark) < 0x370 for mark in decomposed[1:]):
            pairs.append((cp, ord(decomposed[0])))
    return tuple(pairs)


@functools.cache
def _accent_table() -> npt.NDArray[np.int64]:
    table = np.arange(_FOLD_LIMIT, dtype=np.int64)
    for cp, replacement in _fold_pairs():
        table[cp] = replacement
    table.flags.writeable = False
    return table


@functools.cache
def _fold_map() -> dict[int, int | None]:
    return {cp: None if replacement == _DROP else replacement for cp, replacement in _fold_pairs()}


@functools.cache
def _tables() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8]]:
    """Lookup tables over all of Unicode: what NFKC text folds to, and each codepoint's token class.

    The first maps a codepoint of NFKC text to its case- and accent-folded form with that form's
    class above it (see `_CLASS_SHIFT`), or `_UNSAFE` where `_classify` must take the
    string path. Case folding, combining marks and letters outside Han all lie in planes 0 and 1,
    so only those are looked at one by one; planes 2 and 3 are Han.
    """
    fold = np.arange(_UNICODE, dtype=np.uint32)
    kind = np.zeros(_UNICODE, dtype=np.uint8)
    accents = {cp: replacement for cp, replacement in _fold_pairs() if replacement != _DROP}
    for cp in range(_PLANES_0_1):
        char = chr(cp)
        folded = char.casefold()
        if unicodedata.combining(char) or (
            folded != char and (len(folded) != 1 or unicodedata.normalize("NFKC", folded) != folded)
        ):
            fold[cp] = _UNSAFE
        else:
            fold[cp] = accents.get(ord(folded), ord(folded))
        if char.isalnum() or unicodedata.category(char).startswith("M"):
            kind[cp] = _WORD
    for lo, hi in _CJK_RANGES:
        kind[lo : hi + 1] = _CJK
    safe = fold != _UNSAFE
    fold[safe] |= kind[fold[safe]].astype(np.uint32) << _CLASS_SHIFT
    fold.flags.writeable = False
    kind.flags.writeable = False
    return fold, kind
