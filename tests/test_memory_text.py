"""Text normalisation and tokenisation: accent- and case-blind word stems, CJK unigrams and pairs, stable ids."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import unicodedata

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.memory.text import STOPWORDS, analyse, normalize, prefix_hash, term_id, term_ids, term_ids_batch

# Latin with and without accents, Cyrillic, Greek, digits of two scripts, CJK of three scripts,
# punctuation and spaces, and the awkward ones: combining marks, NUL, emoji, fullwidth forms,
# ligatures, ß and İ (which case-fold to two codepoints).
ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 ,.;:!?-_'\"\t\n"
    "áéíóúñüÁÉÍÓÚÑçàèâ"
    "абвгдежзийЖЗЙ"
    "αβγδΔΣ"
    "٣٤"
    "记忆系统测试我们的发布版本"
    "あいうカタナ"
    "한국어"
    "\u0301\u0308\x00🙂\uff21\uff11\ufb01ßİ"
)
texts = st.text(alphabet=ALPHABET, max_size=60)

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3))


def _is_cjk(char: str) -> bool:
    return any(lo <= ord(char) <= hi for lo, hi in _CJK_RANGES)


def _is_word_char(char: str) -> bool:
    return not _is_cjk(char) and (char.isalnum() or unicodedata.category(char).startswith("M"))


_SUFFIX_TEXT = (
    "ing ed ies es s ando iendo ado ada ados adas ido ida idos idas ar er ir amos emos imos aron ieron aba aban mente"
)
SUFFIXES = sorted(_SUFFIX_TEXT.split(), key=len, reverse=True)


def reference_stem(word: str) -> str:
    """The stemmer's rules the slow, obvious way, one string operation at a time."""
    for _ in range(2):
        for suffix in SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                if suffix == "s" and word[-2] in "su":
                    continue
                word = word[: -len(suffix)]
                break
        else:
            break
    if len(word) > 4 and word[-1] in "aeoy":
        word = word[:-1]
    return word


def reference_term_ids(text: str) -> list[int]:
    """Tokens of `text` the slow, obvious way: word stems, then CJK characters, then adjacent CJK pairs."""
    folded = normalize(text)
    words: list[str] = []
    current = ""
    for char in folded + " ":
        if _is_word_char(char):
            current += char
        else:
            if current and current not in STOPWORDS:
                words.append(reference_stem(current))
            current = ""
    cjk = [char for char in folded if _is_cjk(char)]
    pairs = [a + b for a, b in itertools.pairwise(folded) if _is_cjk(a) and _is_cjk(b)]
    return [term_id(token) for token in [*words, *cjk, *pairs]]


def test_normalize_folds_case_width_ligatures_and_latin_accents() -> None:
    assert normalize("Canción ÑANDÚ Straße") == "cancion nandu strasse"
    assert normalize("\uff21\uff22\uff23\uff11\uff12 \ufb01le") == "abc12 file"  # fullwidth ABC12, fi ligature


def test_normalize_keeps_cjk_and_other_scripts_as_they_are() -> None:
    assert normalize("记忆系统 テスト 한국어 Жизнь") == "记忆系统 テスト 한국어 жизнь"


def test_accented_and_plain_spellings_have_the_same_term_ids() -> None:
    assert term_ids("La canción del año").tolist() == term_ids("la CANCION del ano").tolist()


def test_stopwords_of_english_and_spanish_are_not_tokens() -> None:
    assert len(term_ids("the of and la de y que los")) == 0
    assert term_ids("the deploy of the release").tolist() == term_ids("deploy release").tolist()


def test_inflections_of_a_word_share_one_stem_in_english_and_spanish() -> None:
    for forms in (
        ("paint", "paints", "painted", "painting", "paintings"),
        ("dance", "dances", "danced", "dancing"),
        ("study", "studies"),
        ("guitar", "guitars"),
        ("class", "classes"),
        ("viaje", "viajes", "viajar", "viajamos", "viajaron"),
        ("canción", "canciones"),
        ("cansado", "cansada", "cansados", "cansar"),
    ):
        assert len({tuple(term_ids(form).tolist()) for form in forms}) == 1, forms


def test_short_words_and_unrelated_endings_keep_their_own_terms() -> None:
    # Stripping stops at four letters: "goes" is not "go", "bus" keeps its "s", "thing" its "ing".
    for word in ("goes", "bus", "thing", "need", "red", "glass"):
        assert term_ids(word).tolist() == [term_id(word)], word
    assert term_ids("status").tolist() == [term_id("status")]
    assert term_ids("painted").tolist() == [term_id("paint")]


def test_cjk_text_becomes_characters_and_adjacent_pairs() -> None:
    expected = [term_id(token) for token in ["记", "忆", "系", "统", "记忆", "忆系", "系统"]]
    assert term_ids("记忆系统").tolist() == expected


def test_words_and_cjk_split_where_the_script_changes() -> None:
    expected = [term_id(token) for token in ["api", "v2", "接", "口", "接口"]]
    assert term_ids("API接口v2").tolist() == expected


@settings(deadline=None)
@given(texts)
def test_term_ids_match_the_obvious_tokenizer(text: str) -> None:
    assert term_ids(text).tolist() == reference_term_ids(text)


@settings(deadline=None)
@given(st.text(max_size=40))
def test_batch_normalisation_equals_normalize_for_any_unicode(text: str) -> None:
    (part,) = analyse([text])
    # NUL separates a batch's texts, so a NUL inside a text is read as the space it stands for.
    assert part.codepoints.tobytes().decode("utf-32-le") == normalize(text.replace("\x00", " "))


@settings(deadline=None)
@given(st.lists(texts, max_size=8))
def test_each_text_of_a_batch_gets_exactly_its_own_tokens(batch: list[str]) -> None:
    docs, terms = term_ids_batch(batch)
    for index, text in enumerate(batch):
        assert sorted(terms[docs == index].tolist()) == sorted(term_ids(text).tolist())
    assert ((docs >= 0) & (docs < len(batch))).all()


@settings(deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_an_analysis_carries_the_prefix_hash_and_the_document_of_every_codepoint(batch: list[str]) -> None:
    (part,) = analyse(batch)
    assert part.prefix.tobytes() == prefix_hash(part.codepoints).tobytes()
    # A document's codepoints follow the NUL that ends the one before.
    nuls = np.flatnonzero(part.codepoints == 0)
    expected = np.searchsorted(nuls, np.arange(len(part.codepoints)), side="right")
    assert part.codepoint_doc.tolist() == expected.tolist()
    assert len(nuls) == len(batch) - 1


def test_a_batch_larger_than_one_slice_keeps_documents_apart() -> None:
    # About 200 thousand codepoints: more than one slice of the batch path.
    batch = [f"release {i} 发布了新版本 número {i % 7} " * 4 for i in range(1_500)]
    docs, terms = term_ids_batch(batch)
    for index, text in enumerate(batch):
        assert sorted(terms[docs == index].tolist()) == sorted(term_ids(text).tolist())


def test_term_ids_are_the_same_in_another_process() -> None:
    sample = ["Staging deploy failed after the migration", "Despliegue de la canción", "我们决定下周发布新版本"]
    code = (
        "import json, sys\n"
        "from resident.memory.text import term_ids_batch\n"
        "docs, terms = term_ids_batch(json.loads(sys.argv[1]))\n"
        "print(json.dumps([docs.tolist(), terms.tolist()]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(sample)], capture_output=True, text=True, env=env, check=True
    )
    docs, terms = term_ids_batch(sample)
    assert json.loads(result.stdout) == [docs.tolist(), terms.tolist()]
