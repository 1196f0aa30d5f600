"""``kavka.security.tls``: contexts built from Kafka's ssl.* keys, checked by
real handshakes over loopback (asyncio, as the broker serves them): PEM
files, inline PEM, PKCS12, JKS-typed PKCS12; client authentication none /
requested / required; protocol versions and cipher suites; host-name
checks; and every mistake refused naming the key, never the password."""

from __future__ import annotations

import asyncio
import os
import ssl

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from kavka.common.broker_config import KafkaConfig
from kavka.common.config import ConfigError
from kavka.common.listeners import ListenerConfig
from kavka.security import tls

from .certs import Pki

pytestmark = pytest.mark.async_timeout(30)
ZK = {"zookeeper.connect": "127.0.0.1:2181"}


def listener(**props: str) -> ListenerConfig:
    """The SSL listener's view of a broker config with these keys."""
    c = KafkaConfig.from_props({**ZK, "listeners": "SSL://127.0.0.1:9093", "security.inter.broker.protocol": "SSL",
                                **props})
    return c.listener_config("SSL")


def broker_pem(pki: Pki, **extra: str) -> ListenerConfig:
    return listener(**{"ssl.keystore.type": "PEM",
                       "ssl.keystore.location": str(pki.broker.write_pem(pki.dir / "broker.pem")),
                       "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_file()), **extra})


def client(pki: Pki, *, cert: bool = False, ca: bytes | None = None, hostname_check: bool = True,
           **extra: str) -> ssl.SSLContext:
    props = {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": (ca or pki.ca.pem()).decode(),
             "ssl.endpoint.identification.algorithm": "https" if hostname_check else ""}
    if cert:
        props.update({"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.client.key_pem().decode(),
                      "ssl.keystore.certificate.chain": pki.client.chain_pem().decode()})
    props.update(extra)
    return tls.client_context(listener(**props))


async def handshake(server: ssl.SSLContext, client_ctx: ssl.SSLContext, host: str = "127.0.0.1"):
    """Connect; (server's view: peer certificate DER or None, TLS version,
    cipher) or the client's exception."""
    seen: asyncio.Future = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        obj = writer.get_extra_info("ssl_object")
        if not seen.done():
            seen.set_result((obj.getpeercert(binary_form=True), obj.version(), obj.cipher()[0]))
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=server)
    port = srv.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname=host)
        try:
            data = await asyncio.wait_for(reader.read(2), 10)
        finally:
            writer.close()
        if data != b"ok":
            raise ConnectionError("the server closed the connection")
        return await asyncio.wait_for(seen, 10)
    finally:
        srv.close()


async def test_pem_keystore_file_serves_a_client_that_trusts_the_ca(pki):
    peer, version, _ = await handshake(tls.server_context(broker_pem(pki)), client(pki))
    assert peer is None and version == "TLSv1.3"


async def test_encrypted_pem_key_with_ssl_key_password(pki):
    path = pki.broker.write_pem(pki.dir / "enc.pem", password="key-pass")
    cfg = listener(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path), "ssl.key.password": "key-pass"})
    await handshake(tls.server_context(cfg), client(pki))
    with pytest.raises(ConfigError, match=r"'ssl.key.password'.*does not decrypt the private key") as e:
        tls.server_context(listener(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path),
                                       "ssl.key.password": "wrong-pass"}))
    assert "wrong-pass" not in str(e.value)
    with pytest.raises(ConfigError, match=r"is encrypted; set ssl.key.password"):
        tls.server_context(listener(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}))


async def test_inline_pem_keystore_and_truststore(pki):
    cfg = listener(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.broker.key_pem().decode(),
                      "ssl.keystore.certificate.chain": pki.broker.chain_pem().decode()})
    await handshake(tls.server_context(cfg), client(pki))


@pytest.mark.parametrize("store_type", ["PKCS12", "JKS"])
async def test_pkcs12_keystore_and_truststore(pki, store_type):
    ks = pki.broker.write_pkcs12(pki.dir / "broker.p12", "store-pass")
    cfg = listener(**{"ssl.keystore.type": store_type, "ssl.keystore.location": str(ks),
                      "ssl.keystore.password": "store-pass", "ssl.client.auth": "required",
                      "ssl.truststore.type": store_type, "ssl.truststore.location": str(pki.truststore_p12()),
                      "ssl.truststore.password": "trust-pass"})
    peer, _, _ = await handshake(tls.server_context(cfg), client(pki, cert=True))
    assert peer == pki.client.cert.public_bytes(Encoding.DER)
    with pytest.raises(ConfigError, match=r"'ssl.keystore.password'.*does not open .*broker.p12") as e:
        tls.server_context(listener(**{"ssl.keystore.type": store_type, "ssl.keystore.location": str(ks),
                                       "ssl.keystore.password": "nope-pass"}))
    assert "nope-pass" not in str(e.value)


def test_legacy_jks_file_is_refused_with_the_conversion_command(pki):
    path = pki.dir / "broker.jks"
    path.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + os.urandom(64))
    with pytest.raises(ConfigError, match=r"legacy JKS keystore.*keytool -importkeystore"):
        tls.server_context(listener(**{"ssl.keystore.location": str(path), "ssl.keystore.password": "x"}))


@pytest.mark.parametrize("props, message", [
    ({}, r"'ssl.keystore.location'.*a TLS listener needs a keystore"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent/k.pem"}, r"cannot read /nonexistent/k.pem"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "@pem", "ssl.keystore.password": "x"},
     r"'ssl.keystore.password'.*cannot be set with ssl.keystore.type=PEM"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "@key"}, r"'ssl.keystore.certificate.chain'.*give both"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.key": "@key"}, r"only read with ssl.keystore.type=PEM"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "@otherkey", "ssl.keystore.certificate.chain": "@chain"},
     r"does not belong to its first certificate"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "@pem", "ssl.client.auth": "required",
      "ssl.truststore.type": "PEM", "ssl.truststore.location": "@pem", "ssl.truststore.password": "x"},
     r"'ssl.truststore.password'.*cannot be set with ssl.truststore.type=PEM"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "@pem", "ssl.cipher.suites": "TLS_NO_SUCH_SUITE"},
     r"'ssl.cipher.suites'.*TLS_NO_SUCH_SUITE.*not one this OpenSSL"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "@pem", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
     r"TLS 1.3 suites only all together"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "@pem", "ssl.enabled.protocols": "TLSv1.3",
      "ssl.protocol": "TLSv1.2"}, r"no TLS version is left"),
])
def test_keystore_and_protocol_mistakes_name_the_key(pki, props, message):
    subst = {"@pem": str(pki.broker.write_pem(pki.dir / "b.pem")), "@key": pki.broker.key_pem().decode(),
             "@otherkey": pki.client.key_pem().decode(), "@chain": pki.broker.chain_pem().decode()}
    with pytest.raises(ConfigError, match=message):
        tls.server_context(listener(**{k: subst.get(v, v) for k, v in props.items()}))


async def test_client_auth_required_refuses_a_client_without_certificate_and_one_from_another_ca(pki):
    server = tls.server_context(broker_pem(pki, **{"ssl.client.auth": "required"}))
    peer, _, _ = await handshake(server, client(pki, cert=True))
    assert peer is not None
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
        await handshake(server, client(pki))
    stranger = pki.other_ca.issue("mallory")
    ctx = tls.client_context(listener(**{
        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pki.ca.pem().decode(),
        "ssl.keystore.type": "PEM", "ssl.keystore.key": stranger.key_pem().decode(),
        "ssl.keystore.certificate.chain": stranger.chain_pem().decode()}))
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
        await handshake(server, ctx)


async def test_client_auth_requested_verifies_a_certificate_when_one_is_sent(pki):
    server = tls.server_context(broker_pem(pki, **{"ssl.client.auth": "requested"}))
    assert (await handshake(server, client(pki)))[0] is None
    assert (await handshake(server, client(pki, cert=True)))[0] is not None


async def test_client_refuses_a_server_signed_by_another_ca_and_checks_the_host_name(pki):
    server = tls.server_context(broker_pem(pki))
    with pytest.raises(ssl.SSLCertVerificationError):
        await handshake(server, client(pki, ca=pki.other_ca.pem()))
    with pytest.raises(ssl.SSLCertVerificationError, match="match|mismatch"):
        await handshake(server, client(pki), host="kavka.example.com")
    await handshake(server, client(pki, hostname_check=False), host="kavka.example.com")


async def test_protocol_versions_and_tls12_cipher_suites(pki):
    server = tls.server_context(broker_pem(pki, **{"ssl.enabled.protocols": "TLSv1.2"}))
    _, version, _ = await handshake(server, client(pki))
    assert version == "TLSv1.2"
    # Naming no TLS 1.3 suite turns TLS 1.3 off, as in Java.
    server = tls.server_context(broker_pem(pki, **{
        "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_EMPTY_RENEGOTIATION_INFO_SCSV"}))
    _, version, cipher = await handshake(server, client(pki))
    assert (version, cipher) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")
    all13 = "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"
    server = tls.server_context(broker_pem(pki, **{"ssl.cipher.suites": all13}))
    _, version, _ = await handshake(server, client(pki))
    assert version == "TLSv1.3"


async def test_rsa_keys_in_pkcs12_without_password(pki):
    rsa_broker = pki.ca.issue("broker-rsa", hosts=("127.0.0.1",), rsa_key=True)
    ks = rsa_broker.write_pkcs12(pki.dir / "rsa.p12", None)
    server = tls.server_context(listener(**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(ks)}))
    await handshake(server, client(pki))


def test_the_temporary_key_file_is_gone_after_loading(pki, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tls.server_context(listener(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.broker.key_pem().decode(),
                                   "ssl.keystore.certificate.chain": pki.broker.chain_pem().decode()}))
    assert list((tmp_path / "tmp").iterdir()) == []
