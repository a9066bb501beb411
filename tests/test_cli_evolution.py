"""Evolution from the shell, and who is calling: the owner, or a member session holding a grant token."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from resident import Runtime
from resident.cli.caller import MEMBER_COMMANDS
from resident.cli.main import all_commands, cli
from resident.coordination.tokens import GRANT_TOKEN_ENV, new_token
from resident.store.tables import EVENTS
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke, run_process
from tests.evolution_helpers import session, skill_folder


@pytest.fixture
def prepared(tmp_path: Path) -> tuple[Path, str, str]:
    """A home with two team skills (deven carries triage) and a running session of deven; its token."""
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        rt.skills.add(skill_folder(tmp_path / "skills", "triage", "Triage incoming bug reports"))
        rt.skills.add(skill_folder(tmp_path / "skills", "review", "Review a pull request"))
        rt.skills.give("triage", "deven")
        work = session(rt, "deven", "triage the queue")
        return home, work.token, work.execution.id


def as_member(token: str) -> dict[str, str | None]:
    return {GRANT_TOKEN_ENV: token}


def event_count(home: Path) -> int:
    with Runtime.open(home, realm="none") as rt, rt._internal.store.reader() as reader:
        return reader.count(EVENTS)


OWNER_COMMANDS = [
    ["skills", "give", "review", "deven"],
    ["skills", "rebuild"],
    ["skills", "choose", "deven", "triage"],
    ["principles", "approve", "prn_x"],
    ["principles", "reject", "prn_x", "--reason", "no"],
    ["correct", "exec_x", "--note", "wrong"],
    ["member", "import", "export.json"],
    ["member", "export", "deven", "out.json"],
    ["memory", "enable"],
    ["memory", "disable"],
    ["questions"],
    ["answer", "q_x", "--domain", "work"],
    ["evolution", "rollback", "deven@1"],
    ["report", "weekly"],
    ["replication", "sync"],
    ["init", "--force"],
    ["backup", "elsewhere"],
    ["status"],
    ["progress"],
]


@pytest.mark.parametrize("args", OWNER_COMMANDS, ids=lambda args: " ".join(args[:2]))
def test_a_member_session_can_never_do_what_belongs_to_the_owner(prepared, args: list[str]) -> None:
    home, token, _ = prepared
    before = event_count(home)
    expect_error(invoke(home, *args, env=as_member(token)), "OwnerOnlyAction", naming=("belongs to the owner",))
    expect_error(invoke(home, *args, "--json", env=as_member(token)), "OwnerOnlyAction")
    assert event_count(home) == before


def test_a_token_that_stands_for_no_session_is_refused_and_never_makes_its_holder_the_owner(prepared) -> None:
    home, _, _ = prepared
    for forged in (new_token(), "", "rgt_\x1b]0;pwned\x07"):
        message = expect_error(invoke(home, "skills", "list", env=as_member(forged)), "GrantInvalid")
        assert "pwned" not in message
        expect_error(invoke(home, "skills", "give", "review", "deven", env=as_member(forged)), "OwnerOnlyAction")


def test_a_member_session_acts_as_its_member_only(prepared) -> None:
    home, token, execution = prepared
    receipt = expect_json(invoke(home, "remember", "deven", "triaged 12 bugs", "--json", env=as_member(token)))
    with Runtime.open(home, realm="none") as rt:
        assert rt.member("deven").get(receipt["id"]).source == f"execution:{execution}"
    expect_error(invoke(home, "remember", "alice", "not mine", env=as_member(token)), "GrantExceeded",
                 naming=("acts as deven only",))
    expect_error(invoke(home, "skills", "list", "--member", "alice", env=as_member(token)), "GrantExceeded")
    mine = expect_json(invoke(home, "skills", "list", "--json", env=as_member(token)))
    assert mine["member"] == "deven"
    assert [s["skill"] for s in mine["skills"]] == ["triage"]
    expect_error(invoke(home, "engage", "alice", "--domain", "work", env=as_member(token)), "GrantExceeded")
    switched = expect_json(invoke(home, "engage", "--domain", "work", "--project", "bugs", "--json",
                                  env=as_member(token)))
    assert (switched["member"], switched["source"], switched["held"]) == ("deven", "explicit", True)


def test_a_member_reclaims_and_proposes_for_itself_without_approval(prepared) -> None:
    home, token, _ = prepared
    expect_ok(invoke(home, "skills", "reclaim", "review", env=as_member(token)))
    proposed = expect_json(invoke(home, "principles", "propose", "Label before fixing", "--basis",
                                  "three unlabelled regressions", "--json", env=as_member(token)))
    assert (proposed["member"], proposed["proposed_by"], proposed["state"]) == ("deven", "deven", "candidate")
    listed = expect_json(invoke(home, "principles", "list", "--json", env=as_member(token)))
    assert [p["member"] for p in listed["principles"]] == ["deven"]
    log = expect_json(invoke(home, "evolution", "log", "--json", env=as_member(token)))
    assert [c["kind"] for c in log["changes"]] == ["give", "reclaim"]
    owner = expect_json(invoke(home, "principles", "approve", proposed["id"], "--json"))
    assert owner["state"] == "approved"


def test_a_read_from_the_members_own_process_is_recorded_and_becomes_a_use_at_the_sessions_end(prepared) -> None:
    home, token, execution = prepared
    read = run_process(home, "skills", "read", "triage", env={GRANT_TOKEN_ENV: token})
    assert expect_ok(read).stdout.startswith("# triage")
    with Runtime.open(home, realm="none") as rt:
        rt.coordinator.finish(execution, "succeeded")
    listed = expect_json(invoke(home, "skills", "list", "--member", "deven", "--json"))
    (triage,) = listed["skills"]
    assert triage["last_used_session"] == 1
    assert triage["weight"] == pytest.approx(2 ** (-1 / 30) + 1.0)
    spent = invoke(home, "skills", "read", "triage", env=as_member(token))
    expect_error(spent, "GrantInvalid", naming=("has ended",))


def test_the_owner_manages_the_library_sets_principles_engagement_and_evolution(prepared, tmp_path) -> None:
    home, _, _ = prepared
    added = expect_json(invoke(home, "skills", "add", str(skill_folder(tmp_path / "more", "deploy-k8s", "Deploy to "
                                                                       "Kubernetes")), "--json"))
    assert added["name"] == "deploy-k8s"
    expect_ok(invoke(home, "skills", "give", "deploy-k8s", "alice", "--weight", "2", "--track", "days"))
    library = expect_json(invoke(home, "skills", "list", "--json"))
    assert [s["name"] for s in library["skills"]] == ["deploy-k8s", "review", "triage"]
    found = expect_json(invoke(home, "skills", "search", "kubernetes deploy", "--json"))
    assert found["matches"][0]["name"] == "deploy-k8s"
    chosen = expect_json(invoke(home, "skills", "choose", "alice", "deploy the api", "--json"))
    assert [c["name"] for c in chosen["skills"]] == ["deploy-k8s"]
    assert "all equal the live state" in expect_ok(invoke(home, "skills", "rebuild")).stdout
    log = expect_json(invoke(home, "evolution", "log", "alice", "--json"))
    undone = expect_json(invoke(home, "evolution", "rollback", log["changes"][0]["id"], "--json"))
    assert undone["kind"] == "remove"
    questions = expect_json(invoke(home, "questions", "--json"))["questions"]
    assert [q["member"] for q in questions] == ["deven"]
    answered = expect_json(invoke(home, "answer", questions[0]["id"], "--domain", "work", "--json"))
    assert answered["source"] == "answer"
    shown = expect_json(invoke(home, "engagement", "show", "deven", "--json"))
    assert shown["state"]["domain"] == "work"
    report = expect_json(invoke(home, "report", "weekly", "--json"))
    assert {m["member"] for m in report["members"]} >= {"deven", "alice"}
    expect_ok(invoke(home, "report", "weekly"))
    expect_error(invoke(home, "report", "weekly", "--week", "2026-W99", "--json"), "InvalidInput")


def test_a_hostile_skill_file_is_refused_in_one_line_that_does_not_replay_its_escape_codes(prepared, tmp_path) -> None:
    home, _, _ = prepared
    folder = skill_folder(tmp_path / "bad", "evil", "harmless \x1b]0;owned\x07 text")
    outcome = invoke(home, "skills", "add", str(folder))
    expect_error(outcome, "SkillInvalid", naming=("control character U+001B",))
    assert "\x1b" not in outcome.stderr
    missing = expect_error(invoke(home, "skills", "add", str(tmp_path / "nowhere"), "--json"), "SkillInvalid")
    assert "not a skill folder" in missing


def test_every_command_a_member_session_may_run_exists_and_every_other_one_is_guarded() -> None:
    def leaves(group: click.Group, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
        found: dict[tuple[str, ...], click.Command] = {}
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                found.update(leaves(command, (*path, name)))
            else:
                found[(*path, name)] = command
        return found

    all_commands()  # command modules load on first use
    commands = leaves(cli)
    assert set(commands) >= MEMBER_COMMANDS
    for path, command in commands.items():
        guarded = getattr(command.callback, "owner_only", None) is not None
        assert guarded == (path not in MEMBER_COMMANDS), path
