"""BrokerConnection over TLS against the fake broker on a TLS listener
(certificates from tests/security/certs.py): the broker's chain and name
checked, a broker from another CA refused at once (not retried) with a
message naming the broker, a TLS client on a plaintext port failing as a
connection error, mutual TLS, and SASL over TLS."""

from __future__ import annotations

import ssl

import pytest
from client_fakes import FakeBroker
from test_client_sasl import SECRET, sasl_broker

from kavka.client.cluster import Cluster
from kavka.client.connection import BrokerConnection
from kavka.client.errors import ConnectFailed, SslAuthenticationFailed
from kavka.protocol import messages as m
from kavka.security.client_properties import client_security_from_properties

pytestmark = pytest.mark.async_timeout(20.0)


def server_context(pki, tmp_path, *, issued=None, require_client: bool = False) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain((issued or pki.broker).write_pem(tmp_path / "server.pem"))
    if require_client:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=str(pki.ca_file()))
    return ctx


def metadata_broker() -> FakeBroker:
    b = FakeBroker(1)
    b.handlers[3] = lambda broker, h, req: m.MetadataResponse(
        brokers=[m.MetadataResponse.Brokers(node_id=1, host=broker.host, port=broker.port)], controller_id=1)
    return b


def tls(pki, **extra: str):
    return client_security_from_properties({"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_file()),
                                            **extra}, "client.properties")


async def test_tls_connection_verifies_the_broker_and_serves_requests(pki, tmp_path):
    b = await metadata_broker().start(ssl=server_context(pki, tmp_path))
    async with BrokerConnection(b.host, b.port, security=tls(pki)) as conn:
        resp = await conn.request(m.MetadataRequest(topics=[]))
        assert resp.controller_id == 1
        assert conn._transport.get_extra_info("ssl_object").version() in ("TLSv1.2", "TLSv1.3")
    await b.stop()


async def test_a_broker_certificate_from_another_ca_is_refused_at_once_naming_the_broker(pki, tmp_path):
    stranger = pki.other_ca.issue("broker", hosts=("127.0.0.1", "localhost"))
    b = await metadata_broker().start(ssl=server_context(pki, tmp_path, issued=stranger))
    cluster = Cluster([(b.host, b.port)], security=tls(pki), default_deadline_ms=15_000)
    with pytest.raises(SslAuthenticationFailed) as info:
        await cluster.call(cluster.refresh_metadata)
    await cluster.close()
    await b.stop()
    assert not info.value.retriable
    assert f"{b.host}:{b.port}" in info.value.message and "certificate" in info.value.message
    assert b.received == []  # nothing sent to a broker that did not prove who it is


async def test_the_broker_name_is_checked_unless_endpoint_identification_is_off(pki, tmp_path):
    elsewhere = pki.ca.issue("broker", hosts=("broker.example",))
    b = await metadata_broker().start(ssl=server_context(pki, tmp_path, issued=elsewhere))
    with pytest.raises(SslAuthenticationFailed, match="127.0.0.1"):
        await BrokerConnection(b.host, b.port, security=tls(pki)).connect()
    off = tls(pki, **{"ssl.endpoint.identification.algorithm": ""})
    async with BrokerConnection(b.host, b.port, security=off) as conn:
        await conn.request(m.MetadataRequest(topics=[]))
    await b.stop()


async def test_tls_to_a_plaintext_port_is_a_connect_failure(pki):
    b = await metadata_broker().start()
    with pytest.raises(ConnectFailed) as info:
        await BrokerConnection(b.host, b.port, security=tls(pki), connect_timeout_ms=3000).connect()
    await b.stop()
    assert info.value.retriable


async def test_mutual_tls_presents_the_client_certificate(pki, tmp_path):
    key, cert = tmp_path / "client-key.pem", tmp_path / "client.pem"
    key.write_bytes(pki.client.key_pem())
    cert.write_bytes(pki.client.chain_pem())
    b = await metadata_broker().start(ssl=server_context(pki, tmp_path, require_client=True))
    mtls = tls(pki, **{"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    async with BrokerConnection(b.host, b.port, security=mtls) as conn:
        await conn.request(m.MetadataRequest(topics=[]))
    without = BrokerConnection(b.host, b.port, security=tls(pki), connect_timeout_ms=3000)
    with pytest.raises(ConnectFailed):  # the broker refuses the handshake (or closes right after it)
        await without.connect()
    await b.stop()


async def test_sasl_over_tls(pki, tmp_path):
    b = await sasl_broker().start(ssl=server_context(pki, tmp_path))
    sec = client_security_from_properties({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
        "sasl.password": SECRET, "ssl.ca.location": str(pki.ca_file())})
    async with BrokerConnection(b.host, b.port, security=sec) as conn:
        await conn.request(m.MetadataRequest(topics=[]))
    await b.stop()
    assert [h.api_key for h in b.received] == [18, 17, 36, 36, 3]
