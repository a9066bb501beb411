"""Redaction: every planted credential is replaced by a typed, keyed mark; ordinary text is left alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.sessions.redaction import MARK, Redactor, looks_random, names_a_secret
from tests.session_fixtures import planted_secrets

KEY = b"k" * 32


def redact(text: str, injected: tuple[str, ...] = ()) -> str:
    return Redactor(KEY, injected).redact(text)


def kinds(text: str) -> list[str]:
    return [m.group().split(":")[1] for m in MARK.finditer(text)]


@pytest.mark.parametrize(
    ("template", "name", "kind"),
    [
        ("export OPENAI_API_KEY={}", "OPENAI_KEY", "openai-key"),
        ("the key {} leaked", "AWS_KEY", "aws-access-key"),
        ("aws_secret_access_key = {}", "AWS_SECRET", "aws-secret-key"),
        ('curl -H "Authorization: Bearer {}" https://x', "BEARER", "bearer"),
        ("postgres://app:{}@db:5432/x", "DB_PASSWORD", "url-credentials"),
        ("git clone https://{}@github.com/a/b", "GITHUB_TOKEN", "github-token"),
        ("webhook token {}", "JWT", "jwt"),
        ("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", "KEY_BODY", "private-key"),
    ],
)
def test_each_credential_format_is_replaced_by_a_mark_of_its_type(template: str, name: str, kind: str):
    secret = planted_secrets()[name]
    out = redact(template.format(secret))
    assert secret not in out
    assert kind in kinds(out)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ANTHROPIC_API_KEY=sk-ant-api03-" + "aB3d" * 20, "anthropic-key"),
        ("key: AIza" + "Sy" * 17 + "B", "google-api-key"),
        ("glpat-" + "x1Y2z3" * 4, "gitlab-token"),
        ("hf_" + "AbCdEfGhIj" * 3 + "Kl12", "huggingface-token"),
        ("xoxb-" + "1234567890-abcdefABCDEF", "slack-token"),
        ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
        ("npm_" + "a1B2c3D4e5" * 3 + "F6g7H8", "npm-token"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "basic-auth"),
        ("DefaultEndpointsProtocol=https;AccountKey=" + "A1b2" * 21 + "Ab==;", "azure-storage-key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAA\\nAAAABG5vbmU", "private-key"),
        ("PASSWORD=hunter22", "secret-assignment"),
        ('"client_secret": "s3cr3t-value"', "secret-assignment"),
        ("X-Api-Key: 0123abcd", "secret-assignment"),
        ("--token=abc123def", "secret-assignment"),
        ("Cookie: sessionid=q1w2e3r4t5", "secret-assignment"),
        ("SIGNATURE: Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRg", "high-entropy"),
        ("curl -X POST https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/" + "aZ9" * 8, "slack-webhook"),
        ("SENDGRID=SG." + "Ab1_" * 5 + "Cd." + "Ef2-" * 10 + "Gh3", "sendgrid-key"),
        ("twilio api key SK" + "0a1b2c3d" * 4, "twilio-key"),
        ("mysql -u root -pS3cretPass shop", "mysql-password"),
        ("mysqldump -h db -uapp -p'two words' shop > dump.sql", "mysql-password"),
        ("database:\n  password: s3cr3tvalue\n", "secret-assignment"),
        ('password: "correct horse battery staple"', "secret-assignment"),
    ],
)
def test_the_curated_table_covers_providers_headers_and_assignments(text: str, kind: str):
    assert kind in kinds(redact(text))


@pytest.mark.parametrize(
    "text",
    [
        "token_type: bearer",
        "max_tokens: 4096, input_tokens: 12, tokens: 7",
        "commit 3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6d5c4b3a29 and id 6f1c2d7e-8a9b-4c3d-9e0f-1a2b3c4d5e6f",
        "path: /home/alice/src/payments/tests/test_retry.py",
        "see https://github.com/openai/codex/blob/main/codex-rs/protocol/src/models.rs",
        "Bearer tokens expire; rotate them weekly.",
        "PASSWORD=${DB_PASSWORD} and API_KEY=<your-key> and TOKEN=changeme and SECRET=****",
        "the sk-learn-contrib package and task-sk-abcdefghijklmnopqrstuvwxyz",
        "requestId: req_011CRd3pXYZabcdef1234567",
        "El despliegue necesita la migración primero / 部署前先迁移",
        "mysql -u root -p shop  (asks for the password)",
        "SKIP the SK step; see https://hooks.slack.com/ for the docs",
        'name: "Alice Smith" and password: "${DB_PASSWORD}"',
    ],
)
def test_ordinary_text_ids_paths_and_placeholders_are_left_alone(text: str):
    assert redact(text) == text


def test_a_token_inside_a_longer_word_is_not_a_match_but_a_whole_token_is():
    token = planted_secrets()["GITHUB_TOKEN"]
    assert redact("x" + token + "y") == "x" + token + "y"
    assert token not in redact(f"({token})")


def test_injected_values_are_replaced_wherever_they_occur_even_inside_words():
    grant = planted_secrets()["GRANT_TOKEN"]
    out = redact(f"abc{grant}def and {grant}", (grant,))
    assert grant not in out
    assert kinds(out) == ["injected", "injected"]


def test_the_same_secret_gets_the_same_mark_and_the_mark_depends_on_the_homes_key():
    secret = planted_secrets()["GITHUB_TOKEN"]
    first, second = redact(f"{secret} {secret}").split(" ")
    assert first == second
    assert Redactor(b"another key").redact(secret) != first
    assert re.fullmatch(r"\[REDACTED:github-token:[0-9a-f]{8}\]", first)


def test_a_secret_named_json_field_is_replaced_whole_and_its_siblings_are_scanned():
    redactor = Redactor(KEY)
    value = {"api_key": "plainvalue1", "nested": [{"password": "x"}, "ghp_" + "a1" * 18], "auth_method": "oauth"}
    out = redactor.redact_json(value)
    assert out["api_key"].startswith("[REDACTED:secret-assignment:")
    assert out["nested"][0] == {"password": "x"}  # a one-letter word is no password
    assert out["nested"][1].startswith("[REDACTED:github-token:")
    assert out["auth_method"] == "oauth"
    assert redactor.counts == {"secret-assignment": 1, "github-token": 1}


def test_names_that_hold_secrets_are_told_from_names_that_count_tokens():
    assert all(map(names_a_secret, ["GITHUB_TOKEN", "apiKey", "client-secret", "X-Api-Key", "db.password", "auth"]))
    assert not any(map(names_a_secret, ["max_tokens", "input_tokens", "author", "keyboard", "monkey", "tokenizer"]))


def test_entropy_is_checked_only_for_long_mixed_values():
    assert looks_random("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5")
    assert not looks_random("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    assert not looks_random("3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6d5c4b3a29")
    assert not looks_random("claude-opus-4-1-20250805-thinking")


_FILLER = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_SEPARATORS = st.sampled_from([" ", "\n", '"', "'", "=", ": ", "\t", "(", "[", ","])


@settings(max_examples=200, deadline=None)
@given(before=_FILLER, after=_FILLER, left=_SEPARATORS, right=_SEPARATORS,
       name=st.sampled_from(["OPENAI_KEY", "AWS_KEY", "GITHUB_TOKEN", "JWT", "GRANT_TOKEN"]))
def test_a_planted_secret_never_survives_whatever_surrounds_it(before, after, left, right, name):
    planted = planted_secrets()
    secret = planted[name]
    out = redact(before + left + secret + right + after, (planted["GRANT_TOKEN"],))
    assert secret not in out


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200) | st.builds(lambda a, s, b: a + s + b, st.text(max_size=30),
                                              st.sampled_from(list(planted_secrets().values())), st.text(max_size=30)))
def test_redacting_redacted_text_changes_nothing(text: str):
    once = redact(text)
    assert redact(once) == once


def test_many_command_names_in_one_text_stay_linear():
    # Each `mysql` could start a search for a glued `-p` up the line; the search is bounded per start,
    # so a text of nothing else is still read once, not once per occurrence.
    text = "mysql " * 20_000 + "-pS3cretPass"
    out = redact(text)
    assert "S3cretPass" not in out
    assert out.startswith("mysql mysql")

