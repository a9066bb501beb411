"""A home pins the CA it trusts for Realm: a Realm whose certificate another CA issued is refused, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from resident.errors import InvalidInput, RealmCertificateRefused
from resident.realm.client import RealmClient
from resident.runtime.replication import CA_ENV, home_realm_ca
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
