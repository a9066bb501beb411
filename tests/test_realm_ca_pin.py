"""A home pins the CA it trusts for Realm: a Realm whose certificate another CA issued is refused, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from resident import Runtime
from resident.config import load_config
from resident.errors import InvalidInput, RealmCertificateRefused
from resident.realm.client import RealmClient
from resident.realm.state import RealmState
from resident.realm.tokens import ADMIN_TOKEN_FILE
from resident.realm.urls import REALM_CA_FILE
from resident.runtime.replication import CA_ENV, home_realm_ca
from resident.store.home import CONFIG_FILE
from tests.cli_helpers import expect_error, expect_ok, invoke
from tests.replication_support import FAST, accepted_by_realm, record_status, wait_until
from tests.tls_realm import TlsRealm, write_server_pair

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def realm_from_ca(tmp_path: Path) -> Iterator[tuple[TlsRealm, trustme.CA]]:
    """An LMDB Realm on loopback over TLS, its certificate issued by a CA of its own."""
    ca = trustme.CA()
    (tmp_path / "certs").mkdir()
    pair = write_server_pair(ca, tmp_path / "certs", "127.0.0.1")
    realm = TlsRealm(tmp_path / "realm", "127.0.0.1", 0, pair)
    realm.start()
    try:
        yield realm, ca
    finally:
        realm.stop()


def test_a_realm_certificate_from_the_pinned_ca_is_trusted(
    realm_from_ca: tuple[TlsRealm, trustme.CA], tmp_path: Path
) -> None:
    realm, ca = realm_from_ca
    ca.cert_pem.write_to_path(str(tmp_path / "pinned.pem"))
    with RealmClient(realm.url, 5.0, ca_file=str(tmp_path / "pinned.pem")) as client:
        assert client.health().status == "ok"


def test_a_certificate_from_another_ca_is_refused_in_one_typed_line(
    realm_from_ca: tuple[TlsRealm, trustme.CA], tmp_path: Path
) -> None:
    realm, _ = realm_from_ca
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "other.pem"))
    with RealmClient(realm.url, 5.0, ca_file=str(tmp_path / "other.pem")) as client, pytest.raises(
        RealmCertificateRefused
    ) as refused:
        client.health()
    message = str(refused.value)
    assert "\n" not in message
    assert "not issued by the pinned CA" in message
    assert "other.pem" in message


def test_the_pin_replaces_the_system_store_rather_than_adding_to_it(
    realm_from_ca: tuple[TlsRealm, trustme.CA], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # $SSL_CERT_FILE names the Realm's real CA; a pin to another CA must still refuse it.
    realm, ca = realm_from_ca
    ca.cert_pem.write_to_path(str(tmp_path / "system.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "system.pem"))
    with RealmClient(realm.url, 5.0) as trusting:
        assert trusting.health().status == "ok"
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "other.pem"))
    with RealmClient(realm.url, 5.0, ca_file=str(tmp_path / "other.pem")) as pinned, pytest.raises(
        RealmCertificateRefused
    ):
        pinned.health()


def test_a_pin_that_is_not_pem_or_not_there_is_refused_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(InvalidInput, match="cannot be read as PEM"):
        RealmClient("https://127.0.0.1:1", ca_file=str(tmp_path / "junk.pem"))
    with pytest.raises(InvalidInput, match="does not exist"):
        home_realm_ca(tmp_path, "missing.pem")
    # Relative to the home; the environment outranks resident.toml, an explicit argument outranks both.
    (tmp_path / "a.pem").write_text("x")
    (tmp_path / "b.pem").write_text("x")
    assert home_realm_ca(tmp_path, "a.pem") == str(tmp_path / "a.pem")
    monkeypatch.setenv(CA_ENV, "b.pem")
    assert home_realm_ca(tmp_path, "a.pem") == str(tmp_path / "b.pem")
    assert home_realm_ca(tmp_path, "a.pem", explicit="a.pem") == str(tmp_path / "a.pem")
    monkeypatch.delenv(CA_ENV)
    assert home_realm_ca(tmp_path, None) is None


def test_a_home_pinned_to_another_ca_keeps_its_records_pending_and_says_why(
    realm_from_ca: tuple[TlsRealm, trustme.CA], tmp_path: Path
) -> None:
    realm, ca = realm_from_ca
    with RealmState.open(realm.directory) as state:
        token = state.enroll("pinned")
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "other.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "right.pem"))
    home = tmp_path / "home"
    with Runtime.open(home, realm=realm.url, realm_token=token, realm_ca=str(tmp_path / "other.pem"),
                      replication=FAST) as runtime:
        runtime.memory.enable()
        refused = runtime.member("deven").remember("the deploy checklist changed").id
        wait_until(lambda: record_status(runtime, refused).attempts >= 1, 20.0, "a push refused at the handshake")
        status = record_status(runtime, refused)
        assert status.state == "pending"
        assert "not issued by the pinned CA" in status.last_error
        assert realm.url in status.last_error
    assert refused not in accepted_by_realm(realm.directory)
    # The same home, pinned to the CA that did issue Realm's certificate, syncs it.
    with Runtime.open(home, realm=realm.url, realm_token=token, realm_ca=str(tmp_path / "right.pem"),
                      replication=FAST) as runtime:
        wait_until(lambda: record_status(runtime, refused).state == "synced", 20.0, "the record synced")
    assert refused in accepted_by_realm(realm.directory)


def test_init_copies_the_pinned_ca_into_the_home_and_refuses_one_that_is_not_pem(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    home = tmp_path / "home"
    expect_ok(invoke(home, "init", "--realm", "https://realm.example:8443", "--realm-ca", str(tmp_path / "ca.pem")))
    assert (home / REALM_CA_FILE).read_bytes() == ca.cert_pem.bytes()
    assert load_config(home / CONFIG_FILE).realm_ca_file == REALM_CA_FILE
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    message = expect_error(invoke(home, "init", "--realm-ca", str(tmp_path / "junk.pem")), "InvalidInput")
    assert "--realm-ca" in message
    # Refused before anything changed: the first pin is still the one in the home.
    assert (home / REALM_CA_FILE).read_bytes() == ca.cert_pem.bytes()


def test_governance_commands_trust_the_homes_pin_and_refuse_another_ca_in_one_line(
    realm_from_ca: tuple[TlsRealm, trustme.CA], tmp_path: Path
) -> None:
    realm, ca = realm_from_ca
    admin = realm.directory / ADMIN_TOKEN_FILE
    assert admin.is_file(), "realm serve writes its admin token at first start"
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    home = tmp_path / "home"
    expect_ok(invoke(home, "init", "--realm", realm.url, "--realm-ca", str(tmp_path / "ca.pem")))
    # The home's pin is the default: no --realm, no --realm-ca.
    expect_ok(invoke(home, "realm", "records", "--token-file", str(admin)))
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "other.pem"))
    for command in (("records",), ("invalidate", "mem_x", "--reason", "wrong")):
        message = expect_error(
            invoke(home, "realm", *command, "--token-file", str(admin), "--realm-ca", str(tmp_path / "other.pem")),
            "RealmCertificateRefused",
        )
        assert "other.pem" in message
