"""The llama loopback embedder: loopback-only URLs, the llama.cpp answer format, and failing fast."""

from __future__ import annotations

import time
import typing
from collections.abc import Iterator

import numpy as np
import pytest

from resident.errors import EmbedderNotLoopback, EmbedderUnavailable, InvalidInput
from resident.memory.llama import LlamaEmbedder, validate_loopback_url
from tests.fake_llama import FakeLlama, WrongShape, refuses_connections


@pytest.fixture
def fake() -> Iterator[FakeLlama]:
    with FakeLlama(dim=8) as server:
        yield server


@pytest.fixture
def embedder(fake: FakeLlama) -> Iterator[LlamaEmbedder]:
    with LlamaEmbedder(fake.url, timeout=2.0) as client:
        yield client


def _unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    return array / np.linalg.norm(array)


# -- loopback validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.1.2.3:9000/", "http://127.1.2.3:9000"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("http://localhost:8080/v1/embeddings", "http://localhost:8080"),
        ("https://LOCALHOST/v1", "https://localhost"),
        ("HTTP://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("http://127.255.255.254", "http://127.255.255.254"),
        ("http://127.0.0.1:8080/llama/v1/embeddings", "http://127.0.0.1:8080/llama"),
        ("  http://127.0.0.1:8080  ", "http://127.0.0.1:8080"),
    ],
)
def test_loopback_urls_are_accepted_and_normalised_to_the_base(url: str, base: str) -> None:
    assert validate_loopback_url(url) == base


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1:8080",
        "http://192.168.1.1",
        "http://example.com",
        "http://0.0.0.0:8080",
        "http://127.0.0.1@evil.com",
        "http://user:secret@127.0.0.1:8080",
        "http://127.0.0.1:8080\\@evil.com",
        "ftp://127.0.0.1",
        "file:///etc/passwd",
        "",
        "127.0.0.1:8080",
        "http://",
        "http://localhost.evil.com",
        "http://[::ffff:127.0.0.1]:8080",
        "http://[::2]:8080",
        "http://[fe80::1%25lo]:8080",
        "http://2130706433",
        "http://[::1",
    ],
)
def test_non_loopback_or_unparseable_urls_are_refused(url: str) -> None:
    with pytest.raises(EmbedderNotLoopback) as caught:
        validate_loopback_url(url)
    message = str(caught.value)
    assert "only loopback endpoints are allowed" in message
    assert "http://127.0.0.1:8080" in message
    assert "\n" not in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:0", "http://127.0.0.1:8080/?x=1"])
def test_loopback_urls_with_a_bad_port_or_query_are_invalid_input(url: str) -> None:
    with pytest.raises(InvalidInput):
        validate_loopback_url(url)


def test_a_refused_url_stays_on_one_line_even_with_a_newline_in_it() -> None:
    with pytest.raises(EmbedderNotLoopback) as caught:
        validate_loopback_url("http://evil.com/\nsecond line")
    assert "\n" not in str(caught.value)


def test_embedder_refuses_a_non_loopback_url_before_sending_anything() -> None:
    with pytest.raises(EmbedderNotLoopback):
        LlamaEmbedder("http://192.168.1.1:8080")


@pytest.mark.parametrize("kwargs", [{"timeout": 0.0}, {"timeout": float("nan")}, {"batch_size": 0}, {"model": ""}])
def test_embedder_refuses_unusable_settings(kwargs: dict[str, typing.Any]) -> None:
    with pytest.raises(InvalidInput):
        LlamaEmbedder("http://127.0.0.1:8080", **kwargs)


# -- answers -------------------------------------------------------------------------------------


def test_embed_returns_float32_unit_rows_matching_the_server_vectors(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    texts = ["hello", "hola, ¿qué tal?", "你好世界"]

    vectors = embedder.embed(texts)

    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, _unit(fake.vector_for(text)), rtol=1e-6, atol=1e-7)


def test_request_body_is_the_openai_embeddings_format(fake: FakeLlama) -> None:
    with LlamaEmbedder(fake.url, model="nomic-embed") as embedder:
        embedder.embed(["a", "b"])

    assert fake.bodies == [{"input": ["a", "b"], "model": "nomic-embed", "encoding_format": "float"}]


def test_rows_follow_the_index_field_not_the_order_of_the_answer(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.reverse_order = True
    texts = ["first", "second", "third", "fourth"]

    vectors = embedder.embed(texts)

    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, _unit(fake.vector_for(text)), rtol=1e-6, atol=1e-7)


def test_a_zero_vector_stays_zero(embedder: LlamaEmbedder) -> None:
    vectors = embedder.embed(["zero:nothing here", "something"])

    assert not vectors[0].any()
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, rel=1e-6)


def test_texts_are_sent_in_chunks_of_batch_size_and_reassembled_in_order(fake: FakeLlama) -> None:
    texts = [f"text {i}" for i in range(7)]

    with LlamaEmbedder(fake.url, batch_size=3) as embedder:
        chunked = embedder.embed(texts)

    assert fake.requests == 3
    assert [body["input"] for body in fake.bodies] == [texts[0:3], texts[3:6], texts[6:7]]
    expected = np.stack([_unit(fake.vector_for(text)) for text in texts])
    np.testing.assert_allclose(chunked, expected, rtol=1e-6, atol=1e-7)


def test_no_texts_make_no_request(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    vectors = embedder.embed([])

    assert vectors.shape == (0, 0)
    assert vectors.dtype == np.float32
    assert fake.requests == 0


def test_proxy_settings_in_the_environment_are_ignored(fake: FakeLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy would carry memory text off the machine; this one is dead, so using it would fail.
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://192.0.2.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    with LlamaEmbedder(fake.url, timeout=0.5) as embedder:
        assert embedder.embed(["hello"]).shape == (1, 8)
    assert fake.requests == 1


def test_a_bare_string_is_refused_instead_of_embedding_each_character(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    with pytest.raises(InvalidInput):
        embedder.embed("hello")
    assert fake.requests == 0


def test_name_is_llama_followed_by_the_base_url(fake: FakeLlama) -> None:
    with LlamaEmbedder(fake.url + "/v1/embeddings") as embedder:
        assert embedder.name == f"llama:{fake.url}"


def test_dim_is_none_until_the_first_answer_then_fixed(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    dim_before = embedder.dim

    embedder.embed(["one"])

    assert dim_before is None
    assert embedder.dim == 8
    assert embedder.embed([]).shape == (0, 8)


def test_an_answer_of_another_dimension_after_the_first_is_refused(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    embedder.embed(["one"])
    fake.dim = 16

    with pytest.raises(EmbedderUnavailable, match="16-dimensional"):
        embedder.embed(["two"])
    assert embedder.dim == 8


def test_a_failed_first_answer_leaves_dim_unset(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "garbage"

    with pytest.raises(EmbedderUnavailable):
        embedder.embed(["one"])
    assert embedder.dim is None


# -- failures ------------------------------------------------------------------------------------


def test_a_refused_connection_raises_embedder_unavailable_naming_the_url(fake: FakeLlama) -> None:
    with LlamaEmbedder(fake.url, timeout=2.0) as embedder:
        fake.mode = "down"
        assert refuses_connections(fake.port)

        with pytest.raises(EmbedderUnavailable) as caught:
            embedder.embed(["hello"])

    message = str(caught.value)
    assert fake.url in message
    assert "could not be reached" in message
    assert "\n" not in message


@pytest.mark.timeout(10)
def test_a_slow_server_fails_within_bounded_time(fake: FakeLlama) -> None:
    fake.mode = "slow"
    with LlamaEmbedder(fake.url, timeout=0.3) as embedder:
        started = time.monotonic()
        with pytest.raises(EmbedderUnavailable, match=r"did not answer within 0\.3s"):
            embedder.embed(["hello"])
        elapsed = time.monotonic() - started

    assert elapsed < 2.0
    assert fake.requests == 1


@pytest.mark.timeout(10)
def test_a_server_trickling_bytes_fails_within_bounded_time(fake: FakeLlama) -> None:
    # Every byte arrives well inside the read timeout, so only the overall deadline can stop this.
    fake.mode = "trickle"
    with LlamaEmbedder(fake.url, timeout=0.3) as embedder:
        started = time.monotonic()
        with pytest.raises(EmbedderUnavailable, match=r"did not finish answering within 0\.3s"):
            embedder.embed(["hello"])
        elapsed = time.monotonic() - started

    assert elapsed < 2.0


def test_a_body_that_is_not_json_raises_embedder_unavailable(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "garbage"

    with pytest.raises(EmbedderUnavailable, match="not JSON"):
        embedder.embed(["hello"])


@pytest.mark.parametrize("shape", typing.get_args(WrongShape))
def test_an_answer_of_the_wrong_shape_raises_embedder_unavailable(
    fake: FakeLlama, embedder: LlamaEmbedder, shape: WrongShape
) -> None:
    fake.mode = "wrong_shape"
    fake.wrong_shape = shape

    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.embed(["alpha", "beta", "gamma"])

    message = str(caught.value)
    assert fake.url in message
    assert "\n" not in message
    assert embedder.dim is None


def test_a_llama_error_answer_raises_with_its_status_and_message(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "error500"

    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.embed(["hello"])

    message = str(caught.value)
    assert "HTTP 500" in message
    assert "server_error: llama_decode failed" in message
    assert fake.url in message


def test_a_server_still_loading_its_model_raises_embedder_unavailable(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "loading"

    with pytest.raises(EmbedderUnavailable, match=r"HTTP 503 .*Loading model"):
        embedder.embed(["hello"])


def test_a_wrong_path_prefix_raises_embedder_unavailable(fake: FakeLlama) -> None:
    with (
        LlamaEmbedder(fake.url + "/elsewhere") as embedder,
        pytest.raises(EmbedderUnavailable, match="HTTP 404"),
    ):
        embedder.embed(["hello"])


def test_a_redirect_is_not_followed(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "redirect"

    with pytest.raises(EmbedderUnavailable, match="HTTP 307"):
        embedder.embed(["hello"])
    assert fake.requests == 1


def test_a_failure_is_not_retried(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    fake.mode = "error500"

    with pytest.raises(EmbedderUnavailable):
        embedder.embed(["hello"])
    assert fake.requests == 1


def test_a_failing_chunk_stops_the_call_without_sending_later_chunks(fake: FakeLlama) -> None:
    fake.mode = "error500"
    with LlamaEmbedder(fake.url, batch_size=2) as embedder, pytest.raises(EmbedderUnavailable):
        embedder.embed(["a", "b", "c", "d", "e"])
    assert fake.requests == 1


def test_embedding_works_again_when_the_server_comes_back(fake: FakeLlama, embedder: LlamaEmbedder) -> None:
    before = embedder.embed(["steady"])
    fake.mode = "down"
    with pytest.raises(EmbedderUnavailable):
        embedder.embed(["steady"])

    fake.mode = "ok"
    after = embedder.embed(["steady"])

    np.testing.assert_array_equal(before, after)
    assert fake.requests == 2


def test_embedding_works_again_after_a_slow_answer(fake: FakeLlama) -> None:
    with LlamaEmbedder(fake.url, timeout=0.3) as embedder:
        fake.mode = "slow"
        with pytest.raises(EmbedderUnavailable):
            embedder.embed(["hello"])
        fake.mode = "ok"

        assert embedder.embed(["hello"]).shape == (1, 8)


def test_a_closed_embedder_raises_embedder_unavailable(fake: FakeLlama) -> None:
    embedder = LlamaEmbedder(fake.url)
    embedder.close()

    with pytest.raises(EmbedderUnavailable, match="closed"):
        embedder.embed(["hello"])
    assert fake.requests == 0


# -- the fake itself -----------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_fake_stops_promptly_while_a_slow_request_is_waiting() -> None:
    fake = FakeLlama(slow_seconds=30.0).start()
    fake.mode = "slow"
    embedder = LlamaEmbedder(fake.url, timeout=0.2)
    with pytest.raises(EmbedderUnavailable):
        embedder.embed(["hello"])

    started = time.monotonic()
    fake.stop()
    embedder.close()

    assert time.monotonic() - started < 2.0
    assert refuses_connections(fake.port)
