"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer answers it."""

from __future__ import annotations

import pytest

from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError
from kavka.security.sasl.plain import PlainSaslClient, PlainSaslServer

USERS = {"admin": "admin-secret", "alice": "alice-secret", "zoë": "pässword"}


def test_round_trip() -> None:
    for user, password in USERS.items():
        server, client = PlainSaslServer(USERS), PlainSaslClient(user, password)
        assert client.evaluate_challenge(server.evaluate_response(client.initial_response())) is None
        assert server.complete and client.complete
        assert server.authorization_id == user
        assert server.session_lifetime_ms is None and server.credential_expiration_ms is None


def test_the_client_sends_an_empty_authzid() -> None:
    assert PlainSaslClient("alice", "pw").initial_response() == b"\x00alice\x00pw"


def test_authzid_equal_to_the_user_is_accepted() -> None:
    server = PlainSaslServer(USERS)
    assert server.evaluate_response(b"alice\x00alice\x00alice-secret") == b""
    assert server.authorization_id == "alice"


@pytest.mark.parametrize("message, expected", [
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"\x00alice\x00alice-secre", "Authentication failed: Invalid username or password"),
    (b"\x00ALICE\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"\x00\x00pw", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\x00alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\x00alice\x00pw\x00x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\x00alice\x00\xff\xfe", "Invalid SASL/PLAIN response: not UTF-8"),
    (b"bob\x00alice\x00alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_failures_carry_kafkas_message(message: bytes, expected: str) -> None:
    server = PlainSaslServer(USERS)
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(message)
    assert e.value.message == expected
    assert "secret" not in str(e.value) and "secret" not in e.value.reason
    assert not server.complete and server.authorization_id == ""
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(b"\x00alice\x00alice-secret")


def test_a_second_token_after_success_is_an_illegal_state() -> None:
    server = PlainSaslServer(USERS)
    server.evaluate_response(b"\x00alice\x00alice-secret")
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(b"\x00admin\x00admin-secret")
    assert server.authorization_id == "alice"


def test_client_refuses_nul_in_credentials_and_a_non_empty_reply() -> None:
    with pytest.raises(ValueError):
        PlainSaslClient("a\x00b", "pw")
    with pytest.raises(ValueError):
        PlainSaslClient("alice", "")
    client = PlainSaslClient("alice", "pw")
    client.initial_response()
    with pytest.raises(SaslAuthenticationError):
        client.evaluate_challenge(b"unexpected")
