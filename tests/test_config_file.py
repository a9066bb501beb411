"""`resident.toml`: read by msgspec into structs that forbid unknown keys, written by tomli-w.

Whatever text a person puts in a role comes back as it went in (a Hypothesis round trip over
arbitrary Unicode), and every malformed file is a `ConfigError` that names where it is wrong.
"""

from __future__ import annotations

import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.config import Config, MemberConfig, load_config, render_config
from resident.errors import ConfigError
from resident.store.home import CONFIG_FILE
from tests.cli_helpers import expect_error, expect_ok, invoke

NAMES = st.from_regex(r"\A[a-z][a-z0-9_-]{0,31}\Z")
ROLES = st.text(max_size=80)  # any Unicode but lone surrogates, which no file can hold
MEMBERS = st.lists(
    st.tuples(NAMES, ROLES, st.lists(NAMES, min_size=1, max_size=3, unique=True)),
    min_size=1, max_size=6, unique_by=lambda member: member[0],
)
URLS = st.none() | st.sampled_from(["http://127.0.0.1:8765", "http://localhost:9", "http://[::1]:80/realm"])


@settings(max_examples=60, deadline=None)
@given(members=MEMBERS, pick=st.integers(min_value=0), url=URLS)
def test_any_configuration_round_trips_through_the_file_unchanged(tmp_path_factory, members, pick, url):
    roster = tuple(MemberConfig(name, role, tuple(worlds)) for name, role, worlds in members)
    config = Config(members=roster, coordinator=roster[pick % len(roster)].name, realm_url=url)
    path = tmp_path_factory.getbasetemp() / "round-trip.toml"
    path.write_text(render_config(config), encoding="utf-8")
    again = load_config(path)
    assert (again.members, again.coordinator, again.realm_url) == (config.members, config.coordinator, url)


def test_a_role_with_an_emoji_survives_init_rewriting_the_file(tmp_path):
    home = tmp_path / "home"
    expect_ok(invoke(home, "init"))
    path = home / CONFIG_FILE
    text = path.read_text(encoding="utf-8").replace('"planning"', '"planning 😀 \\"lead\\""')
    path.write_text(text, encoding="utf-8")
    expect_ok(invoke(home, "init", "--realm", "http://127.0.0.1:8765"))
    config = load_config(path)
    assert config.member("samuel").role == 'planning 😀 "lead"'
    assert config.realm_url == "http://127.0.0.1:8765"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "naming"),
    [
        ("", "is empty"),
        ("\n  \n# only a comment\n", "is empty"),
        ("colour = 1\n", "unknown key `colour` in the top level"),
        ("[team]\ncoordinator = \"samuel\"\nlead = 1\n", "unknown key `lead` in [team]"),
        ("[members.deven]\nrole = \"dev\"\nshift = \"night\"\n", "unknown key `shift` in [members.deven]"),
        ("[realm]\nurl = \"http://127.0.0.1:1\"\ntoken = \"x\"\n", "unknown key `token` in [realm]"),
        ("[members.deven]\nrole = 3\n", "[members.deven] role"),
        ("[members]\ndeven = 3\n", "[members.deven]"),
        ("[members.\"Deven Smith\"]\nrole = \"x\"\n", "member name 'Deven Smith' is not valid"),
        ("[team]\ncoordinator = \"nobody\"\n", "coordinator 'nobody' is not one of the [members]"),
        ("[members.deven\nrole = \"x\"\n", "line 1"),
    ],
)
def test_a_malformed_file_is_a_config_error_that_names_where(tmp_path, text, naming):
    path = tmp_path / CONFIG_FILE
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in caught.value.message
    assert naming in caught.value.message


def test_a_directory_in_place_of_the_file_is_a_typed_error(tmp_path):
    home = tmp_path / "home"
    expect_ok(invoke(home, "init"))
    (home / CONFIG_FILE).unlink()
    (home / CONFIG_FILE).mkdir()
    expect_error(invoke(home, "status"), "ConfigError", naming=("is a directory",))


def test_a_member_name_of_5000_characters_is_echoed_cut_short(tmp_path):
    path = tmp_path / CONFIG_FILE
    path.write_text(f'[members.{"m" * 5000}]\nrole = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert len(caught.value.message) < 400
    assert "(5,000 characters)" in caught.value.message


def test_the_written_file_is_tomli_w_output_a_person_can_read(tmp_path):
    text = render_config(load_config(tmp_path / "absent.toml"))
    assert text.startswith("# resident home configuration")
    assert '[members.deven]\nrole = "development"' in text
