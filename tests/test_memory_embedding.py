"""The hashing embedder: unit or zero rows, deterministic bits, similar texts close, batches vectorised."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.errors import InvalidInput
from resident.memory.embedding import _TABLE_HALVES, Embedder, HashEmbedder, _damp, _damping_table

texts = st.text(alphabet="abcdeñóü XYZ 09,.-'记忆系统发布测试カナ한국\u0301\x00🙂ß", max_size=60)


def _cosine(embedder: HashEmbedder, a: str, b: str) -> float:
    vectors = embedder.embed([a, b])
    return float(vectors[0] @ vectors[1])


def test_hash_embedder_is_an_embedder_named_hash_of_256_dimensions() -> None:
    embedder: Embedder = HashEmbedder()
    assert (embedder.name, embedder.dim) == ("hash", 256)
    vectors = embedder.embed(["one text", "otro texto", "另一个文本"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 256)


def test_dimension_is_configurable_and_must_be_a_power_of_two() -> None:
    assert HashEmbedder(dim=64).embed(["deploy"]).shape == (1, 64)
    for bad in (0, 48, -8):
        with pytest.raises(InvalidInput, match="power of two"):
            HashEmbedder(dim=bad)


@settings(deadline=None)
@given(st.lists(texts, max_size=6))
def test_rows_are_unit_length_or_zero(batch: list[str]) -> None:
    norms = np.linalg.norm(HashEmbedder().embed(batch), axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_empty_and_stopword_only_texts_embed_to_zero_rows() -> None:
    vectors = HashEmbedder().embed(["", "the of and", "  ,;  ", "de la y que"])
    assert not vectors.any()


def test_an_empty_batch_embeds_to_an_empty_matrix() -> None:
    assert HashEmbedder().embed([]).shape == (0, 256)


@settings(deadline=None)
@given(st.lists(texts, min_size=1, max_size=6))
def test_a_text_embeds_to_the_same_bits_alone_and_in_any_batch(batch: list[str]) -> None:
    embedder = HashEmbedder()
    together = embedder.embed(batch)
    for index, text in enumerate(batch):
        assert together[index].tobytes() == embedder.embed([text])[0].tobytes()


def test_a_batch_larger_than_one_slice_embeds_like_single_texts() -> None:
    embedder = HashEmbedder()
    batch = [f"incident {i} 事故 informe número {i % 13}" for i in range(8_000)]
    together = embedder.embed(batch)
    for index in (0, 4_321, 7_999):
        assert together[index].tobytes() == embedder.embed([batch[index]])[0].tobytes()


def test_accents_and_case_do_not_change_the_embedding() -> None:
    embedder = HashEmbedder()
    assert embedder.embed(["La Canción del Año"]).tobytes() == embedder.embed(["la cancion del ano"]).tobytes()


@pytest.mark.parametrize(
    ("text", "related", "unrelated"),
    [
        (
            "the staging deploy failed after the migration",
            "staging deployment failures and migrations",
            "Alice prefers code reviews before noon",
        ),
        (
            "el despliegue falló por la migración de la base de datos",
            "despliegues fallidos y migraciones de bases de datos",
            "Lucía estará de vacaciones en agosto",
        ),
        ("我们决定下周发布新版本", "新版本什么时候发布", "团队建设活动定在四月去杭州"),
    ],
)
def test_texts_sharing_words_or_stems_are_closer_than_unrelated_ones(text: str, related: str, unrelated: str) -> None:
    embedder = HashEmbedder()
    assert _cosine(embedder, text, related) > _cosine(embedder, text, unrelated) + 0.1


def test_embedding_is_bit_identical_in_another_process() -> None:
    sample = ["Staging deploy failed after the migration", "Despliegue de la canción", "我们决定下周发布新版本", ""]
    code = (
        "import json, sys\n"
        "from resident.memory.embedding import HashEmbedder\n"
        "print(HashEmbedder().embed(json.loads(sys.argv[1])).tobytes().hex())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "777"}
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(sample)], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == HashEmbedder().embed(sample).tobytes().hex()


def test_the_damping_table_holds_what_the_float32_formula_gives() -> None:
    halves = np.random.default_rng(5).permutation(np.arange(-_TABLE_HALVES, _TABLE_HALVES))
    signed = (halves * 0.5).astype(np.float32)
    expected = np.copysign(np.log(np.abs(signed) + np.float32(1.0)), signed)
    assert _damping_table()[halves + _TABLE_HALVES].tobytes() == expected.tobytes()


def test_damping_by_table_and_by_log_give_the_same_bits() -> None:
    sums = np.random.default_rng(6).integers(-_TABLE_HALVES, _TABLE_HALVES, 4096).astype(np.float64)
    by_table, by_log = np.empty(4096, dtype=np.float32), np.empty(4096, dtype=np.float32)
    _damp(sums, 1.0, by_table)
    _damp(sums, float(1 << 40), by_log)
    assert by_table.tobytes() == by_log.tobytes()


def test_a_text_with_counts_beyond_the_damping_table_embeds_to_a_unit_row() -> None:
    # One word 10 thousand times: 15 thousand halves in one cell, past the table.
    (row,) = HashEmbedder().embed(["ab " * 10_000])
    assert abs(float(np.linalg.norm(row)) - 1) < 1e-5
