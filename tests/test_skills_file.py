"""The SKILL.md format and soul.md natives: what is accepted, and a clear error for everything else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resident.errors import SkillInvalid
from resident.runtime.skills.files import read_skill_folder, read_soul, soul_path
from resident.skills.skill_file import MAX_DESCRIPTION, MAX_SKILL_FILE, parse_natives, parse_skill


def skill_text(name: str = "deploy-k8s", description: str = "Deploy services to Kubernetes", body: str = "Run it.\n",
               extra: str = "") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}".encode()


def test_a_well_formed_skill_gives_its_name_description_body_and_digest() -> None:
    parsed = parse_skill("deploy-k8s", skill_text(extra="license: MIT\nmetadata:\n  owner: deven\n"))
    assert (parsed.name, parsed.description) == ("deploy-k8s", "Deploy services to Kubernetes")
    assert parsed.body == "Run it.\n"
    assert len(parsed.digest) == 64


@pytest.mark.parametrize(
    ("folder", "data", "says"),
    [
        ("deploy-k8s", b"name: deploy-k8s\n", "must start with YAML front matter"),
        ("deploy-k8s", b"---\nname: deploy-k8s\ndescription: x\n", "no closing"),
        ("deploy-k8s", skill_text(name="other-skill"), "but the folder is"),
        ("Deploy_K8s", skill_text(name="Deploy_K8s"), "kebab-case"),
        ("a" * 65, skill_text(name="a" * 65), "at most 64"),
        ("deploy-k8s", skill_text(description="''"), "`description` is required"),
        ("deploy-k8s", skill_text(description="x" * (MAX_DESCRIPTION + 1)), "at most 1024"),
        ("deploy-k8s", skill_text(body="   \n"), "has no body"),
        ("deploy-k8s", b"---\n- a\n- b\n---\nbody\n", "must be a mapping"),
        ("deploy-k8s", b"---\nname: [unclosed\n---\nbody\n", "not valid YAML \\(line 3"),
        ("deploy-k8s", b"\xff\xfe---\n", "not valid UTF-8"),
        ("deploy-k8s", b"---\n" + b"x" * MAX_SKILL_FILE, "over 256 KiB"),
        ("deploy-k8s", b"---\nname: deploy-k8s\ndescription: ok\nnote: " + b"y" * 9000 + b"\n---\nbody\n",
         "over 8192 bytes"),
    ],
)
def test_a_malformed_skill_file_is_refused_saying_what_to_fix(folder: str, data: bytes, says: str) -> None:
    with pytest.raises(SkillInvalid, match=says):
        parse_skill(folder, data)


def test_yaml_anchors_and_aliases_are_refused_so_a_few_bytes_cannot_expand() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 8)}]\n" for i in range(8)
    )
    with pytest.raises(SkillInvalid, match="anchors and aliases"):
        parse_skill("deploy-k8s", f"---\nname: deploy-k8s\ndescription: d\n{laughs}---\nbody\n".encode())


def test_yaml_tags_that_build_python_objects_are_refused() -> None:
    data = b"---\nname: deploy-k8s\ndescription: !!python/object/apply:os.system ['true']\n---\nbody\n"
    with pytest.raises(SkillInvalid, match="not valid YAML"):
        parse_skill("deploy-k8s", data)


@pytest.mark.parametrize("hostile", ["\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "bell\x07"])
def test_terminal_control_characters_are_refused_in_any_part_of_the_file(hostile: str) -> None:
    with pytest.raises(SkillInvalid, match="control character"):
        parse_skill("deploy-k8s", skill_text(description=f"ok {hostile}"))
    with pytest.raises(SkillInvalid, match="control character"):
        parse_skill("deploy-k8s", skill_text(body=f"step {hostile}\n"))


def test_native_skills_come_from_soul_md_front_matter_sorted_without_repeats() -> None:
    data = b"---\nnative_skills: [triage, code-review, triage]\n---\nI am Deven.\n"
    assert parse_natives("deven", data) == ("code-review", "triage")
    assert parse_natives("deven", b"I am Deven, and I have no front matter.\n") == ()
    with pytest.raises(SkillInvalid, match="must be a list"):
        parse_natives("deven", b"---\nnative_skills: triage\n---\n")
    with pytest.raises(SkillInvalid, match="kebab-case"):
        parse_natives("deven", b"---\nnative_skills: [Not A Name]\n---\n")


def test_a_skill_folder_is_read_by_its_own_name_or_through_its_skill_md(tmp_path: Path) -> None:
    folder = tmp_path / "deploy-k8s"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(skill_text())
    assert read_skill_folder(folder).name == "deploy-k8s"
    assert read_skill_folder(folder / "SKILL.md").name == "deploy-k8s"
    with pytest.raises(SkillInvalid, match="not a skill folder"):
        read_skill_folder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillInvalid, match=r"SKILL\.md .* does not exist"):
        read_skill_folder(tmp_path / "empty")


def test_a_skill_md_that_is_a_symbolic_link_is_refused_so_no_private_file_reaches_the_library(tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_bytes(skill_text(description="PRIVATE KEY MATERIAL"))
    folder = tmp_path / "deploy-k8s"
    folder.mkdir()
    (folder / "SKILL.md").symlink_to(secret)
    with pytest.raises(SkillInvalid, match="symbolic link") as refused:
        read_skill_folder(folder)
    assert "PRIVATE" not in str(refused.value)


def test_a_skill_md_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "deploy-k8s"
    folder.mkdir()
    os.mkfifo(folder / "SKILL.md")
    with pytest.raises(SkillInvalid, match="not a regular file"):
        read_skill_folder(folder)


def test_a_member_without_soul_md_has_no_natives_and_a_linked_one_is_refused(tmp_path: Path) -> None:
    assert read_soul(tmp_path, "deven") is None
    path = soul_path(tmp_path, "deven")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\nnative_skills: [triage]\n---\n")
    data, digest = read_soul(tmp_path, "deven") or (b"", "")
    assert parse_natives("deven", data) == ("triage",)
    assert len(digest) == 64
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(SkillInvalid, match="symbolic link"):
        read_soul(tmp_path, "deven")
