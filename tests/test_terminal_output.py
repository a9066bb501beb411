"""Stored and user text is shown on a terminal, never obeyed.

A memory holding `ESC ] 0 ;` would retitle the terminal of whoever recalls it, `ESC [ 2 J` would
clear it, a carriage return or a bidi override would make a line read as something else. Text is
stored as given; every text-mode print escapes those characters, and JSON output carries them as
JSON escapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resident.terminal import UNPRINTABLE, printable
from tests.cli_helpers import expect_error, expect_ok, invoke, run_process

HOSTILE = "deploy \x1b]0;owned\x07 then \x1b[2J\x1b[31mred\r overwritten \u202eevil\u202c \x9b1m \x00 done"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\x00")


def assert_inert(text: str) -> None:
    for character in RAW:
        assert character not in text, f"{character!r} reached the terminal raw"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("terminal") / "home"
    expect_ok(invoke(path, "memory", "enable"))
    record_id = expect_ok(invoke(path, "remember", "deven", HOSTILE)).stdout.split()[0]
    return path, record_id


def test_recall_shows_control_sequences_as_escapes(home):
    path, _ = home
    text = expect_ok(invoke(path, "recall", "deven", "deploy done")).stdout
    assert_inert(text)
    assert "\\x1b]0;owned\\x07" in text


def test_memory_show_prints_the_body_inert_but_keeps_its_lines(home):
    path, record_id = home
    text = expect_ok(invoke(path, "memory", "show", record_id, "--as", "deven")).stdout
    assert_inert(text)
    assert "\\x1b[2J\\x1b[31mred\\x0d overwritten \\u202eevil\\u202c \\x9b1m \\x00 done" in text


def test_json_output_carries_the_text_exactly_with_every_control_escaped(home):
    path, record_id = home
    outcome = run_process(path, "memory", "show", record_id, "--as", "deven", "--json")
    assert outcome.code == 0, outcome.describe()
    assert_inert(outcome.stdout)
    assert json.loads(outcome.stdout)["body"] == HOSTILE, "the stored text itself is kept as it was given"


def test_a_hostile_member_name_in_an_error_is_escaped_and_cut_short(home):
    path, _ = home
    message = expect_error(invoke(path, "recall", "\x1b]0;owned\x07" + "m" * 5000, "q"), "UnknownMember")
    assert_inert(message)
    assert len(message) < 400
    assert "5,010 characters" in message


def test_a_home_path_with_control_characters_is_printed_inert(tmp_path):
    path = tmp_path / "home\x1b[2J"
    expect_ok(invoke(path, "init"))
    text = expect_ok(invoke(path, "status")).stdout
    assert_inert(text)
    assert "home\\x1b[2J" in text


@given(st.text())
def test_printable_leaves_nothing_a_terminal_obeys_and_changes_nothing_else(text):
    shown = printable(text)
    assert not UNPRINTABLE.search(shown)
    if not UNPRINTABLE.search(text):
        assert shown == text
    assert "\n" in shown or "\n" not in text
    assert "\t" in shown or "\t" not in text
