"""`resident remember MEMBER --jsonl FILE|-`: one memory a line, each with its receipt, refused lines by number.

Valid lines are written even when others are refused (exit 1 then); input past its bounds is refused
whole before anything is written; hostile lines (huge, not JSON, wrong types, terminal escapes) are
reported on one line each, escaped; a member session writes only within its grant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resident import Runtime
from resident.cli.jsonl import MAX_LINE_BYTES
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.messages.memory_calls import MAX_REMEMBER_ITEMS
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.tables import RECORDS
from tests.cli_helpers import Outcome, expect_error, expect_json, expect_ok, invoke, run_process

ESCAPES = "\x1b]0;owned\x07\x1b[2J"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    expect_ok(invoke(path, "memory", "enable"))
    return path


def stored(home: Path) -> dict[str, str]:
    """Each stored record's id and body."""
    with Runtime.open(home, realm="none") as rt, rt._internal.store.reader() as reader:
        return {key: record.body for key, record in reader.items(RECORDS)}


def lines_of(*lines: object) -> bytes:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines).encode() + b"\n"


MIXED = lines_of(
    {"text": "the deploy needs the migration first"},
    "",
    "{not json",
    {"text": ""},
    {"text": 7},
    ["a", "list"],
    {"text": "about alice", "scope": "AGENT_DYADIC", "counterpart": "alice", "kind": "world"},
    {"text": "an unknown field", "colour": "red"},
    {"text": f"escapes {ESCAPES} are data", "summary": "escapes"},
    "[" * 100_000 + "]" * 100_000,
)


def check_mixed_text(outcome: Outcome, home: Path) -> None:
    assert outcome.code == 1, outcome.describe()
    written = outcome.stdout.splitlines()
    assert [line.split(":")[0] for line in written] == ["line 1", "line 7", "line 9"]
    assert all(line.split()[-1] == "pending" for line in written)
    refused = outcome.stderr.splitlines()
    assert [line.split(":")[0] for line in refused] == ["line 3", "line 4", "line 5", "line 6", "line 8", "line 10"]
    assert refused[1].startswith("line 4: TextInvalid: ")
    assert refused[2].startswith("line 5: InvalidInput: ")
    assert "\x1b" not in outcome.stdout + outcome.stderr
    bodies = set(stored(home).values())
    assert f"escapes {ESCAPES} are data" in bodies
    assert len(bodies) == 3


def test_valid_lines_are_written_with_their_receipts_and_each_refused_line_is_reported_by_number(home: Path) -> None:
    source = home.parent / "memories.jsonl"
    source.write_bytes(MIXED)
    check_mixed_text(invoke(home, "remember", "deven", "--jsonl", str(source)), home)


def test_jsonl_from_stdin_in_a_real_process_reports_the_same(home: Path) -> None:
    check_mixed_text(run_process(home, "remember", "deven", "--jsonl", "-", input=MIXED), home)


def test_json_output_is_one_document_with_written_and_refused_lines(home: Path) -> None:
    outcome = invoke(home, "remember", "deven", "--jsonl", "-", "--json", input=MIXED)
    assert outcome.code == 1
    assert outcome.stderr == ""
    document = json.loads(outcome.stdout)
    assert [entry["line"] for entry in document["written"]] == [1, 7, 9]
    assert all(entry["id"].startswith("mem_") for entry in document["written"])
    assert [entry["line"] for entry in document["refused"]] == [3, 4, 5, 6, 8, 10]
    assert document["refused"][1]["type"] == "TextInvalid"


def test_a_file_of_valid_lines_exits_zero(home: Path) -> None:
    data = lines_of(*({"text": f"note {n}"} for n in range(20)))
    document = expect_json(invoke(home, "remember", "deven", "--jsonl", "-", "--json", input=data))
    assert len(document["written"]) == 20
    assert document["refused"] == []


def test_an_overlong_line_is_refused_alone_and_the_lines_after_it_are_read(home: Path) -> None:
    data = lines_of({"text": "x" * 100}, '{"text": "' + "y" * MAX_LINE_BYTES + '"}', {"text": "after"})
    outcome = invoke(home, "remember", "deven", "--jsonl", "-", input=data)
    assert outcome.code == 1
    assert outcome.stderr.splitlines() == [f"line 2: InvalidInput: longer than {MAX_LINE_BYTES} bytes; shorten it"]
    assert sorted(stored(home).values()) == ["after", "x" * 100]


def test_more_lines_than_one_call_takes_are_refused_whole_and_nothing_is_written(home: Path) -> None:
    data = b'{"text": "n"}\n' * (MAX_REMEMBER_ITEMS + 1)
    expect_error(invoke(home, "remember", "deven", "--jsonl", "-", input=data), "InvalidInput", naming=["split"])
    assert stored(home) == {}


def test_text_or_options_beside_jsonl_and_neither_are_usage_errors(home: Path) -> None:
    for args in (("deven", "text", "--jsonl", "-"), ("deven", "--jsonl", "-", "--scope", "WORLD_SHARED"), ("deven",)):
        expect_error(invoke(home, "remember", *args, input=b""), "UsageError", code=2)
    expect_error(invoke(home, "remember", "deven", "--jsonl", str(home / "missing.jsonl")), "InvalidInput")


def test_a_member_session_writes_only_the_lines_within_its_grant(home: Path) -> None:
    with Runtime.open(home, realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
        token = dispatch_session(host_context(rt), "notes", "deven", role="implement", parent_grant=grant,
                                        actions={"remember"}, scopes={"AGENT_CORE"}).token
    data = lines_of({"text": "within"}, {"text": "shared", "scope": "WORLD_SHARED", "world": "team"})
    as_deven: dict[str, str | None] = {GRANT_TOKEN_ENV: token}
    outcome = invoke(home, "remember", "deven", "--jsonl", "-", input=data, env=as_deven)
    assert outcome.code == 1
    assert outcome.stderr.startswith("line 2: GrantExceeded: ")
    expect_error(invoke(home, "remember", "alice", "--jsonl", "-", input=data, env=as_deven), "GrantExceeded")
    assert sorted(stored(home).values()) == ["within"]


def test_a_cite_that_is_no_record_a_repeated_key_and_a_far_future_time_are_refused_by_line(home: Path) -> None:
    first = expect_json(invoke(home, "remember", "deven", "--jsonl", "-", "--json",
                               input=lines_of({"text": "the cited one"})))["written"][0]["id"]
    data = lines_of(
        {"text": "cites a path", "kind": "observation", "cites": ["../../etc/passwd"]},
        '{"text": "said once", "text": "said twice"}',
        {"text": "from the far future", "occurred_at": 9_999_999_999},
        {"text": "cites a record", "kind": "observation", "cites": [first]},
    )
    outcome = invoke(home, "remember", "deven", "--jsonl", "-", input=data)
    assert outcome.code == 1, outcome.describe()
    refused = outcome.stderr.splitlines()
    assert [line.split(": ")[:2] for line in refused] == [
        ["line 1", "RecordNotFound"], ["line 2", "InvalidInput"], ["line 3", "InvalidInput"],
    ]
    assert "'text' appears twice" in refused[1]
    assert "days after now" in refused[2]
    assert [line.split(":")[0] for line in outcome.stdout.splitlines()] == ["line 4"]
    assert sorted(stored(home).values()) == ["cites a record", "the cited one"]
