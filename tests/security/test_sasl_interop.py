"""Real client implementations against Kavka's server mechanisms, in process:
kafka-python's and aiokafka's SASL code (the very objects their connections
drive) exchange tokens with Kavka's SaslServer objects. The wire framing is
the network layer's; this proves the mechanisms agree byte for byte."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.security.sasl.errors import SaslAuthenticationError
from kavka.security.sasl.factory import SaslServerFactory
from kavka.security.sasl.mechanism import SaslServer

kafka_sasl = pytest.importorskip("kafka.net.sasl")
aiokafka_conn = pytest.importorskip("aiokafka.conn")

USERS = {"alice": "alice-secret", "a,b=c": "p,w=d"}
CREDS = {(m.mechanism_name, u): ScramFormatter(m).generate_credential(p, 8192)
         for m in ScramMechanism for u, p in USERS.items()}


def factory() -> SaslServerFactory:
    return SaslServerFactory(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"],
                             plain_users=USERS, scram_credentials=lambda m, u: CREDS.get((m, u)), oauth_options={})


def drive_kafka_python(mechanism: Any, server: SaslServer) -> None:
    """kafka-python's loop (kafka.net.sasl.abc.SaslMechanism: auth_bytes/receive)."""
    while not mechanism.is_done():
        mechanism.receive(server.evaluate_response(mechanism.auth_bytes()))


def drive_aiokafka(authenticator: Any, server: SaslServer) -> None:
    """aiokafka's loop (AIOKafkaConnection._do_sasl_handshake): step() yields
    (token, expect_reply) until None."""
    reply = None
    while True:
        step = authenticator._step(reply)
        if step is None:
            return
        token, expect_reply = step
        challenge = server.evaluate_response(token)
        reply = challenge if expect_reply else None


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_scram_client(mechanism: str) -> None:
    # kafka-python sends the user name unescaped (no =2C/=3D), so only a plain name
    user = "alice"
    server = factory().create(mechanism)
    client = kafka_sasl.get_sasl_mechanism(mechanism)(
        sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=USERS[user],
        security_protocol="SASL_SSL")
    drive_kafka_python(client, server)
    assert client.is_authenticated() and server.complete and server.authorization_id == user


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_scram_wrong_password(mechanism: str) -> None:
    server = factory().create(mechanism)
    client = kafka_sasl.get_sasl_mechanism(mechanism)(
        sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="nope",
        security_protocol="SASL_SSL")
    with pytest.raises(SaslAuthenticationError, match=f"invalid credentials with SASL mechanism {mechanism}"):
        drive_kafka_python(client, server)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_scram_client(mechanism: str) -> None:
    server = factory().create(mechanism)
    client = aiokafka_conn.ScramAuthenticator(loop=None, sasl_plain_username="a,b=c",
                                              sasl_plain_password="p,w=d", sasl_mechanism=mechanism)
    drive_aiokafka(client, server)
    assert server.complete and server.authorization_id == "a,b=c"


def test_kafka_python_and_aiokafka_plain_clients() -> None:
    server = factory().create("PLAIN")
    client = kafka_sasl.get_sasl_mechanism("PLAIN")(sasl_plain_username="alice", sasl_plain_password="alice-secret",
                                                   security_protocol="SASL_SSL")
    drive_kafka_python(client, server)
    assert client.is_authenticated() and server.authorization_id == "alice"

    server = factory().create("PLAIN")
    drive_aiokafka(aiokafka_conn.SaslPlainAuthenticator(loop=None, sasl_plain_username="alice",
                                                        sasl_plain_password="alice-secret"), server)
    assert server.complete and server.authorization_id == "alice"

    server = factory().create("PLAIN")
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        drive_kafka_python(kafka_sasl.get_sasl_mechanism("PLAIN")(
            sasl_plain_username="alice", sasl_plain_password="x", security_protocol="SASL_SSL"), server)


def unsecured_jwt(claims: dict[str, Any]) -> str:
    def enc(o: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
    return f"{enc({'alg': 'none'})}.{enc(claims)}."


def test_kafka_python_oauthbearer_client_valid_and_expired_tokens() -> None:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):  # type: ignore[misc]
        def __init__(self, token: str) -> None:
            self._token = token

        def token(self) -> str:
            return self._token

        def extensions(self) -> dict[str, str]:
            return {"traceId": "t1"}

    import time
    server = factory().create("OAUTHBEARER")
    good = Provider(unsecured_jwt({"sub": "alice", "exp": time.time() + 60}))
    client = kafka_sasl.get_sasl_mechanism("OAUTHBEARER")(sasl_oauth_token_provider=good)
    drive_kafka_python(client, server)
    assert client.is_authenticated() and server.authorization_id == "alice"

    # an expired token: the error challenge, kafka-python's %x01, then the failure
    server = factory().create("OAUTHBEARER")
    expired = Provider(unsecured_jwt({"sub": "alice", "exp": time.time() - 60}))
    client = kafka_sasl.get_sasl_mechanism("OAUTHBEARER")(sasl_oauth_token_provider=expired)
    with pytest.raises(SaslAuthenticationError, match='invalid_token'):
        drive_kafka_python(client, server)


def test_aiokafka_oauthbearer_client() -> None:
    import time

    class Provider:
        async def token(self) -> str:
            return unsecured_jwt({"sub": "alice", "exp": time.time() + 60})

    server = factory().create("OAUTHBEARER")
    authenticator = aiokafka_conn.OAuthAuthenticator(sasl_oauth_token_provider=Provider())

    async def go() -> None:
        payload = None
        while (step := await authenticator.step(payload)) is not None:
            token, expect_reply = step
            payload = server.evaluate_response(token)

    asyncio.run(go())
    assert server.complete and server.authorization_id == "alice"
