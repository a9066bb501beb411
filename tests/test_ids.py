"""Ids: unique across `fork`, and checked at every surface before they reach the store."""

from __future__ import annotations

import os

import pytest

from resident.errors import InvalidInput
from resident.ids import MAX_ID_LENGTH, check_record_id, new_id

IDS_PER_PROCESS = 2_000


def _random_part(record_id: str) -> str:
    return record_id[-12:]  # the last 48 bits of an id are its random part


def test_a_forked_child_never_hands_out_its_parents_random_bits():
    new_id("mem")  # fill the parent's random pool, which the child inherits
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its ids go back through the pipe
        try:
            os.close(read_end)
            data = "\n".join(new_id("mem") for _ in range(IDS_PER_PROCESS)).encode()
            while data:
                data = data[os.write(write_end, data) :]
        finally:
            os._exit(0)
    os.close(write_end)
    parent_ids = [new_id("mem") for _ in range(IDS_PER_PROCESS)]
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    child_ids = b"".join(chunks).decode().split("\n")
    assert len(child_ids) == IDS_PER_PROCESS
    assert not set(parent_ids) & set(child_ids)
    assert not {_random_part(i) for i in parent_ids} & {_random_part(i) for i in child_ids}, (
        "the child reused random bits from its parent's pool"
    )


def test_ids_the_runtime_makes_pass_its_own_check():
    for prefix in ("mem", "exec", "grant", "corr"):
        assert check_record_id(new_id(prefix)).startswith(prefix)


@pytest.mark.parametrize(
    ("value", "naming"),
    [
        ("", "is empty"),
        ("m" * (MAX_ID_LENGTH + 1), f"longer than {MAX_ID_LENGTH}"),
        ("m" * 600, "(600 characters)"),
        ("mem 1", "a space"),
        ("mem\x1b]0;owned\x07", "control character"),
        ("mém", "non-ASCII"),
        ("mem\x00", "control character"),
        (None, "must be a string"),
        (42, "must be a string"),
    ],
)
def test_a_bad_id_is_invalid_input_that_says_what_an_id_looks_like(value, naming):
    with pytest.raises(InvalidInput) as caught:
        check_record_id(value)
    assert naming in caught.value.message
    assert len(caught.value.message) < 300
    assert "\x1b" not in caught.value.message
