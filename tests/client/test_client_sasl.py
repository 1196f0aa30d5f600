"""BrokerConnection's SASL phase against the in-test fake broker serving
Kavka's real SASL servers (kavka.security.sasl): the order of requests
(ApiVersions, SaslHandshake v1, SaslAuthenticate), each mechanism, refused
credentials and mechanisms named in the error without the password, SCRAM's
key derivation off the event loop, KIP-368 re-authentication before the
session lifetime ends, and Cluster giving up at once on an auth failure."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from client_fakes import FakeBroker

from kavka.client.cluster import Cluster
from kavka.client.connection import BrokerConnection
from kavka.client.errors import ConnectFailed, SaslAuthenticationFailed, UnsupportedVersion
from kavka.client.sasl_authenticator import REAUTH_WINDOW, reauthentication_delay_s
from kavka.common.errors import ErrorCode
from kavka.protocol import messages as m
from kavka.security.client_security import ClientSecurity
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.security.sasl.errors import SaslAuthenticationError
from kavka.security.sasl.factory import SaslServerFactory
from kavka.security.sasl.plain import PlainSaslClient
from kavka.security.sasl.scram import ScramSaslClient

pytestmark = pytest.mark.async_timeout(20.0)
SECRET = "s3cret-Pa55"
SCRAM = ScramMechanism.SCRAM_SHA_512
CREDENTIAL = ScramFormatter(SCRAM).generate_credential(SECRET)


def sasl_broker(*, mechanisms=("PLAIN", "SCRAM-SHA-512"), lifetime_ms: int = 0) -> FakeBroker:
    """A FakeBroker whose SaslHandshake/SaslAuthenticate run Kavka's
    SaslServerFactory (one exchange at a time: the tests open one
    connection at a time)."""
    factory = SaslServerFactory(mechanisms, plain_users={"alice": SECRET},
                                scram_credentials=lambda mech, user: CREDENTIAL if user == "alice" else None)
    b = FakeBroker(3)
    b.handlers[3] = lambda broker, h, req: m.MetadataResponse(
        brokers=[m.MetadataResponse.Brokers(node_id=3, host=broker.host, port=broker.port)], controller_id=3)
    state: dict = {}

    def handshake(broker, header, req):
        try:
            state["server"] = factory.create(req.mechanism)
        except Exception:
            return m.SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                           mechanisms=list(factory.enabled_mechanisms))
        return m.SaslHandshakeResponse(error_code=0, mechanisms=list(factory.enabled_mechanisms))

    def authenticate(broker, header, req):
        try:
            challenge = state["server"].evaluate_response(bytes(req.auth_bytes))
        except SaslAuthenticationError as e:
            return m.SaslAuthenticateResponse(error_code=e.code, error_message=e.message)
        done = state["server"].complete
        return m.SaslAuthenticateResponse(error_code=0, auth_bytes=challenge,
                                          session_lifetime_ms=lifetime_ms if done else 0)

    b.handlers[17] = handshake
    b.handlers[36] = authenticate
    return b


def sasl(mechanism: str, user: str = "alice", password: str = SECRET) -> ClientSecurity:
    if mechanism == "PLAIN":
        return ClientSecurity("SASL_PLAINTEXT", None, mechanism, lambda: PlainSaslClient(user, password))
    return ClientSecurity("SASL_PLAINTEXT", None, mechanism,
                          lambda: ScramSaslClient(ScramMechanism.of(mechanism), user, password))


def api_keys(broker: FakeBroker) -> list[tuple[int, int]]:
    return [(h.api_key, h.api_version) for h in broker.received]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_authenticates_after_api_versions_then_serves_requests(mechanism):
    b = await sasl_broker().start()
    async with BrokerConnection(b.host, b.port, security=sasl(mechanism)) as conn:
        await conn.request(m.MetadataRequest(topics=[]))
    await b.stop()
    rounds = 1 if mechanism == "PLAIN" else 2
    assert api_keys(b) == [(18, 3), (17, 1)] + [(36, 2)] * rounds + [(3, b.versions[3][1])]


async def test_wrong_password_names_broker_and_mechanism_never_the_password():
    b = await sasl_broker().start()
    conn = BrokerConnection(b.host, b.port, security=sasl("SCRAM-SHA-512", password="wrong-Pa55word"))
    with pytest.raises(SaslAuthenticationFailed) as info:
        await conn.connect()
    await b.stop()
    text = str(info.value)
    assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED and not info.value.retriable
    assert f"{b.host}:{b.port}" in text and "SCRAM-SHA-512" in text and "invalid credentials" in text
    assert "wrong-Pa55word" not in text and SECRET not in text
    assert not conn.connected


async def test_unsupported_mechanism_lists_what_the_broker_enables():
    b = await sasl_broker(mechanisms=("SCRAM-SHA-512",)).start()
    with pytest.raises(SaslAuthenticationFailed, match=r"does not enable SASL mechanism PLAIN.*SCRAM-SHA-512") as info:
        await BrokerConnection(b.host, b.port, security=sasl("PLAIN")).connect()
    await b.stop()
    assert info.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


async def test_a_broker_without_saslhandshake_v1_is_refused_by_name():
    b = sasl_broker()
    b.versions[17] = (0, 0)
    await b.start()
    with pytest.raises(UnsupportedVersion, match="SaslHandshake v0"):
        await BrokerConnection(b.host, b.port, security=sasl("PLAIN")).connect()
    await b.stop()


async def test_a_broker_that_closes_during_sasl_is_a_retriable_connect_failure():
    b = await sasl_broker().start()
    b.close_on.add(17)
    with pytest.raises(ConnectFailed, match="during SASL authentication with PLAIN") as info:
        await BrokerConnection(b.host, b.port, security=sasl("PLAIN")).connect()
    await b.stop()
    assert info.value.retriable


async def test_scram_key_derivation_runs_off_the_event_loop(monkeypatch):
    loop_thread = threading.get_ident()
    threads: list[int] = []
    original = ScramFormatter.salted_password

    def spy(self, password, salt, iterations):
        threads.append(threading.get_ident())
        return original(self, password, salt, iterations)

    monkeypatch.setattr(ScramFormatter, "salted_password", spy)
    b = await sasl_broker().start()
    async with BrokerConnection(b.host, b.port, security=sasl("SCRAM-SHA-512")):
        pass
    await b.stop()
    assert threads and loop_thread not in threads


def test_reauthentication_point_is_within_kip368_window():
    rng = random.Random(1)
    delays = [reauthentication_delay_s(10_000, rng) for _ in range(200)]
    assert all(REAUTH_WINDOW[0] * 10 <= d <= REAUTH_WINDOW[1] * 10 for d in delays)
    assert max(delays) - min(delays) > 0.5  # jittered, not one instant for every connection
    assert reauthentication_delay_s(0) is None


async def test_reauthenticates_before_the_session_lifetime_on_the_same_connection():
    b = await sasl_broker(lifetime_ms=400).start()
    async with BrokerConnection(b.host, b.port, security=sasl("SCRAM-SHA-512")) as conn:
        await conn.request(m.MetadataRequest(topics=[]))
        assert sum(k == 17 for k, _ in api_keys(b)) == 1
        await asyncio.sleep(0.4 * REAUTH_WINDOW[1] + 0.02)
        # two requests at once: one re-authentication, both then served
        await asyncio.gather(conn.request(m.MetadataRequest(topics=[])), conn.request(m.MetadataRequest(topics=[])))
    await b.stop()
    keys = [k for k, _ in api_keys(b)]
    assert b.connections == 1
    assert keys == [18, 17, 36, 36, 3, 17, 36, 36, 3, 3]


async def test_a_failed_reauthentication_closes_the_connection():
    b = sasl_broker(lifetime_ms=300)
    await b.start()
    calls = {"n": 0}

    def flaky_client():
        calls["n"] += 1
        return ScramSaslClient(SCRAM, "alice", SECRET if calls["n"] == 1 else "changed-Pa55")

    sec = ClientSecurity("SASL_PLAINTEXT", None, "SCRAM-SHA-512", flaky_client)
    async with BrokerConnection(b.host, b.port, security=sec) as conn:
        await asyncio.sleep(0.3)
        with pytest.raises(SaslAuthenticationFailed, match="re-authentication to broker"):
            await conn.request(m.MetadataRequest(topics=[]))
        assert not conn.connected
    await b.stop()


async def test_cluster_raises_an_auth_failure_at_once_without_trying_other_brokers_or_retrying():
    b = await sasl_broker().start()
    cluster = Cluster([(b.host, b.port), (b.host, b.port)], security=sasl("PLAIN", password="nope-nope"),
                      default_deadline_ms=15_000)
    with pytest.raises(SaslAuthenticationFailed):
        await cluster.call(cluster.refresh_metadata)
    await cluster.close()
    await b.stop()
    assert sum(h.api_key == 17 for h in b.received) == 1
