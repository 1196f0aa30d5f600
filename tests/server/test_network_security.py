"""The socket server with each security protocol, over loopback: four
listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) built from one broker
config by ``build_channel_builders``, a dispatcher whose Metadata handler
answers with the session it was given (principal in ``cluster_id``), and
clients made of asyncio streams and Kavka's codec.

Shown here: who each connection is (ANONYMOUS, the client certificate's
mapped DN, the SASL user, the inter-broker flag); the bad-input list (TLS on
a PLAINTEXT port, plaintext on a TLS port, a certificate from another CA, an
unknown mechanism, a token before the handshake, a wrong password, a request
before authentication, an oversized frame before authentication, an expired
session), each refused as Kafka refuses it, logged once with the peer's
address, and a good client on the same listener served meanwhile."""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct

import pytest
from security.certs import Pki  # tests/security/certs.py (tests/ is on sys.path: its conftest)

from kavka.common.broker_config import KafkaConfig
from kavka.common.errors import ErrorCode
from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, decode_response, encode_request
from kavka.protocol.messages import (
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kavka.security import tls
from kavka.server.channel_builder import build_channel_builders
from kavka.server.handlers import sasl_authenticate, sasl_handshake
from kavka.server.network import Dispatcher, NetworkConfig, SocketServer

pytestmark = pytest.mark.async_timeout(40)
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')
METADATA, API_VERSIONS, HANDSHAKE, AUTHENTICATE = 3, 18, 17, 36


def session_dispatcher() -> Dispatcher:
    d = Dispatcher()

    async def whoami(ctx, req):
        s = ctx.session
        return MetadataResponse(cluster_id=f"{s.principal}|{s.listener}|{s.security_protocol}|"
                                           f"{s.sasl_mechanism}|{s.inter_broker}", controller_id=-1)

    async def versions(ctx, req):
        return ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiKeys(api_key=k, min_version=lo, max_version=hi)
                                             for k, lo, hi in d.supported()])

    d.register(METADATA, whoami, 0, 12)
    d.register(API_VERSIONS, versions, 0, 3)
    sasl_handshake.register(d, sasl_handshake.SaslHandshakeHandler())
    sasl_authenticate.register(d, sasl_authenticate.SaslAuthenticateHandler())
    return d


class Cluster:
    """Four listeners of one broker config on loopback."""

    def __init__(self, pki: Pki, **extra: str) -> None:
        self.pki = pki
        props = {
            "zookeeper.connect": "127.0.0.1:2181",
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.broker.write_pkcs12(pki.dir / "broker.p12", "store-pass")),
            "ssl.keystore.password": "store-pass",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca_file()),
            "listener.name.ssl.ssl.client.auth": "requested",
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),O=Kavka Tests,C=CZ$/$1/U,DEFAULT",
            "connection.failed.authentication.delay.ms": "50",
            **extra,
        }
        self.config = KafkaConfig.from_props(props)
        self.channels = build_channel_builders(self.config, scram_credentials=None)
        self.servers: dict[str, SocketServer] = {}
        self.addresses: dict[str, tuple[str, int]] = {}

    async def __aenter__(self) -> Cluster:
        d = session_dispatcher()
        for name, channel in self.channels.items():
            server = SocketServer(d, NetworkConfig(max_request_size=1 << 20), channel=channel)
            self.addresses[name] = await server.start("127.0.0.1", 0)
            self.servers[name] = server
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in self.servers.values():
            await s.stop()

    def client_ssl(self, cert=None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self.pki.ca.pem().decode())
        if cert is not None:
            path = cert.write_pem(self.pki.dir / "client-cert.pem")
            ctx.load_cert_chain(path)
        return ctx


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0

    @classmethod
    async def open(cls, cluster: Cluster, listener: str, ssl_ctx: ssl.SSLContext | None = None) -> Conn:
        host, port = cluster.addresses[listener]
        if ssl_ctx is None and listener in ("SSL", "SASL_SSL"):
            ssl_ctx = cluster.client_ssl()
        return cls(*await asyncio.open_connection(host, port, ssl=ssl_ctx,
                                                  server_hostname="localhost" if ssl_ctx else None))

    async def call(self, body, version: int):
        self.correlation += 1
        self.writer.write(frame(encode_request(RequestHeader(body.API_KEY, version, self.correlation, "t"), body)))
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 10))[0]
        header, resp = decode_response(body.API_KEY, version, await self.reader.readexactly(size))
        assert header.correlation_id == self.correlation
        return resp

    async def whoami(self) -> list[str]:
        return (await self.call(MetadataRequest(topics=[]), 9)).cluster_id.split("|")

    async def login(self, user="alice", password="alice-secret", mechanism="PLAIN"):
        hs = await self.call(SaslHandshakeRequest(mechanism=mechanism), 1)
        if hs.error_code:
            return hs
        return await self.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2)

    async def closed(self, wait_s: float = 10.0) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(1), wait_s) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True

    def close(self) -> None:
        self.writer.close()


async def test_who_each_connection_is(pki):
    async with Cluster(pki) as c:
        plain = await Conn.open(c, "PLAINTEXT")
        assert await plain.whoami() == ["User:ANONYMOUS", "PLAINTEXT", "PLAINTEXT", "None", "False"]
        anonymous_tls = await Conn.open(c, "SSL")
        assert (await anonymous_tls.whoami())[:3] == ["User:ANONYMOUS", "SSL", "SSL"]
        mtls = await Conn.open(c, "SSL", c.client_ssl(pki.client))
        assert (await mtls.whoami())[:3] == ["User:ALICE", "SSL", "SSL"]  # the mapping rule's /U
        sasl = await Conn.open(c, "SASL_PLAINTEXT")
        assert (await sasl.login()).error_code == 0
        assert await sasl.whoami() == ["User:alice", "SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN", "False"]
        sasl_ssl = await Conn.open(c, "SASL_SSL", c.client_ssl(pki.client))
        assert (await sasl_ssl.login("broker", "broker-secret")).error_code == 0
        # the SASL user, not the certificate, is the principal; it is the inter-broker one
        assert await sasl_ssl.whoami() == ["User:broker", "SASL_SSL", "SASL_SSL", "PLAIN", "True"]
        for conn in (plain, anonymous_tls, mtls, sasl, sasl_ssl):
            conn.close()


async def test_sasl_requests_outside_authentication_get_illegal_sasl_state_and_the_connection_stays(pki):
    async with Cluster(pki) as c:
        conn = await Conn.open(c, "PLAINTEXT")
        assert (await conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)).error_code == ErrorCode.ILLEGAL_SASL_STATE
        sasl = await Conn.open(c, "SASL_SSL")
        await sasl.login()
        resp = await sasl.call(SaslAuthenticateRequest(auth_bytes=b"x"), 2)
        assert resp.error_code == ErrorCode.ILLEGAL_SASL_STATE and "after successful" in resp.error_message
        assert (await sasl.whoami())[0] == "User:alice"
        conn.close()
        sasl.close()


async def test_tls_on_a_plaintext_port_and_plaintext_on_a_tls_port_are_closed_and_logged(pki, caplog):
    caplog.set_level(logging.INFO, "kavka.network")
    async with Cluster(pki) as c:
        host, port = c.addresses["PLAINTEXT"]
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await asyncio.wait_for(asyncio.open_connection(host, port, ssl=c.client_ssl(),
                                                           server_hostname="localhost"), 10)
        tls_port = c.addresses["SSL"][1]
        r, w = await asyncio.open_connection(host, tls_port)
        w.write(frame(encode_request(RequestHeader(METADATA, 9, 1, "t"), MetadataRequest(topics=[]))))
        assert await Conn(r, w).closed()
        await asyncio.sleep(0.1)
        bystander = await Conn.open(c, "SSL")
        assert (await bystander.whoami())[0] == "User:ANONYMOUS"
        bystander.close()
        w.close()
    text = caplog.text
    assert "listener PLAINTEXT" in text and "is the client speaking TLS" in text
    assert f"from 127.0.0.1:{w.get_extra_info('sockname')[1]} on listener SSL: not a TLS handshake" in text


async def test_a_client_certificate_from_another_ca_fails_the_handshake(pki, caplog):
    caplog.set_level(logging.INFO, "kavka.network")
    async with Cluster(pki) as c:
        stranger = pki.other_ca.issue("mallory")
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            conn = await Conn.open(c, "SSL", c.client_ssl(stranger))
            await conn.whoami()
        await asyncio.sleep(0.1)
    assert "on listener SSL: the client's certificate was refused" in caplog.text


async def test_no_mapping_rule_for_the_certificate_closes_the_connection(pki, caplog):
    caplog.set_level(logging.INFO, "kavka.network")
    async with Cluster(pki, **{"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=bob,.*$/bob/"}) as c:
        conn = await Conn.open(c, "SSL", c.client_ssl(pki.client))
        assert await conn.closed()
        conn.close()
    assert "no rule of ssl.principal.mapping.rules applies to 'CN=alice,O=Kavka Tests,C=CZ'" in caplog.text


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
async def test_bad_authentication_inputs_are_refused_and_a_good_client_is_served(pki, caplog, listener):
    caplog.set_level(logging.INFO, "kavka.network")
    async with Cluster(pki) as c:
        good = await Conn.open(c, listener)
        assert (await good.login()).error_code == 0

        wrong = await Conn.open(c, listener)
        resp = await wrong.login(password="guess")
        assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert resp.error_message == "Authentication failed: Invalid username or password"
        assert await wrong.closed()

        unknown = await Conn.open(c, listener)
        resp = await unknown.login(mechanism="SCRAM-SHA-512")
        assert resp.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and list(resp.mechanisms) == ["PLAIN"]
        assert await unknown.closed()

        early = await Conn.open(c, listener)
        resp = await early.call(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2)
        assert resp.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert await early.closed()

        nosy = await Conn.open(c, listener)
        nosy.writer.write(frame(encode_request(RequestHeader(METADATA, 9, 1, "t"), MetadataRequest(topics=[]))))
        assert await nosy.closed()

        huge = await Conn.open(c, listener)
        huge.writer.write(struct.pack(">i", 600_000))  # above sasl.server.max.receive.size, below the request limit
        assert await huge.closed()

        assert await good.whoami() == ["User:alice", listener, listener, "PLAIN", "False"]
        for conn in (good, wrong, unknown, early, nosy, huge):
            conn.close()
    assert "guess" not in caplog.text and "alice-secret" not in caplog.text
    assert "Invalid username or password" in caplog.text and "unsupported SASL mechanism 'SCRAM-SHA-512'" in caplog.text
    assert "before authentication (sasl.server.max.receive.size)" in caplog.text
    assert caplog.text.count("Invalid username or password") == 1  # once per failure


async def test_an_expired_session_is_closed_at_its_next_request_and_reauthentication_renews_it(pki, caplog):
    caplog.set_level(logging.INFO, "kavka.network")
    async with Cluster(pki, **{"connections.max.reauth.ms": "1500"}) as c:
        stale = await Conn.open(c, "SASL_PLAINTEXT")
        assert (await stale.login()).session_lifetime_ms == 1500
        fresh = await Conn.open(c, "SASL_PLAINTEXT")
        await fresh.login()
        await asyncio.sleep(1.1)
        assert (await fresh.login()).error_code == 0  # re-authenticated in time
        await asyncio.sleep(0.6)
        assert (await fresh.whoami())[0] == "User:alice"
        stale.writer.write(frame(encode_request(RequestHeader(METADATA, 9, 9, "t"), MetadataRequest(topics=[]))))
        assert await stale.closed()
        stale.close()
        fresh.close()
    assert "the SASL session of User:alice expired" in caplog.text


async def test_v0_handshake_with_raw_tokens(pki):
    async with Cluster(pki) as c:
        conn = await Conn.open(c, "SASL_PLAINTEXT")
        assert (await conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)).error_code == 0
        conn.writer.write(frame(b"\0alice\0alice-secret"))
        assert await conn.reader.readexactly(4) == b"\x00\x00\x00\x00"  # PLAIN's empty challenge, size-prefixed
        assert (await conn.whoami())[0] == "User:alice"
        conn.close()


def test_a_tls_listener_without_keystore_or_a_plain_listener_without_users_stops_startup(pki):
    base = {"zookeeper.connect": "127.0.0.1:2181", "listeners": "SSL://127.0.0.1:0",
            "security.inter.broker.protocol": "SSL"}
    with pytest.raises(Exception, match="a TLS listener needs a keystore"):
        build_channel_builders(KafkaConfig.from_props(base), None)
    props = {"zookeeper.connect": "127.0.0.1:2181", "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
             "security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
             "sasl.mechanism.inter.broker.protocol": "PLAIN"}
    with pytest.raises(Exception, match=r"'listener.name.sasl_plaintext.plain.sasl.jaas.config'.*PLAIN"):
        build_channel_builders(KafkaConfig.from_props(props), None)
    with pytest.raises(Exception, match=r"sasl.enabled.mechanisms.*GSSAPI is not supported"):
        build_channel_builders(KafkaConfig.from_props({**props, "sasl.enabled.mechanisms": "GSSAPI,PLAIN",
                                                       "sasl.jaas.config": JAAS}), None)
    with pytest.raises(Exception, match=r"SCRAM"):
        build_channel_builders(KafkaConfig.from_props({**props, "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
                                                       "sasl.jaas.config": JAAS}), None)
    jaas_no_user = JAAS.replace('username="broker" ', "")
    with pytest.raises(Exception, match=r"its JAAS config must give this broker's own credentials \(username"):
        build_channel_builders(KafkaConfig.from_props({**props, "sasl.jaas.config": jaas_no_user}), None)


def test_the_inter_broker_principal_from_the_broker_certificate(pki):
    from kavka.server.channel_builder import inter_broker_principal

    props = {"zookeeper.connect": "127.0.0.1:2181", "listeners": "SSL://127.0.0.1:0",
             "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
             "ssl.keystore.location": str(pki.broker.write_pem(pki.dir / "b.pem")), "ssl.client.auth": "required",
             "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/kafka-$1/"}
    assert str(inter_broker_principal(KafkaConfig.from_props(props))) == "User:kafka-broker"
    assert inter_broker_principal(KafkaConfig.from_props({**props, "ssl.client.auth": "none"})) is None
    # the broker's own client side: its truststore and keystore (mutual TLS)
    ctx = tls.client_context(KafkaConfig.from_props(props).listener_config("SSL"))
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
