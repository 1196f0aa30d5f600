"""The SASL seams: one ``SaslServer`` per authentication exchange on the
broker, one ``SaslClient`` per exchange on a client (Kafka's
``javax.security.sasl.SaslServer``/``SaslClient`` as Kafka uses them).

Both are sans-IO state machines over tokens (the ``auth_bytes`` of
SaslAuthenticate, or the raw v0 frames): the network layer moves the bytes
and maps the exceptions of ``kavka.security.sasl.errors`` to error codes.

A broker's exchange::

    server = factory.create(mechanism)          # UnsupportedSaslMechanismError
    while not server.complete:
        challenge = server.evaluate_response(token)   # SaslAuthenticationError
        send(challenge)                          # b"" when none
    principal = KafkaPrincipal("User", server.authorization_id)

A client's exchange (SaslAuthenticate v1+, where every token gets a reply)::

    token = client.initial_response()
    while token is not None:
        token = client.evaluate_challenge(send_and_receive(token))
    assert client.complete

Not thread-safe: each object belongs to the one connection that made it.
"""

from __future__ import annotations

from typing import Protocol

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
# What Kavka implements; Kafka also has GSSAPI (Kerberos), which Kavka does not.
SUPPORTED_MECHANISMS: tuple[str, ...] = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


class SaslServer(Protocol):
    """The broker's side of one exchange.

    ``evaluate_response`` takes the client's next token and returns the
    challenge to send back (b"" when there is none); it raises
    ``SaslAuthenticationError`` when authentication fails (after which the
    exchange is over) and ``IllegalSaslStateError`` for a token after the
    exchange completed or failed. ``complete`` turns True once the client is
    authenticated; then ``authorization_id`` is the user name (the principal
    is ``User:<authorization_id>``), ``credential_expiration_ms`` the
    wall-clock time the credential expires (OAUTHBEARER: the token's ``exp``;
    None for credentials that do not expire, Kafka's
    CREDENTIAL_LIFETIME_MS negotiated property) and ``session_lifetime_ms``
    how long it was still valid when the exchange completed (None likewise).
    """

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    @property
    def credential_expiration_ms(self) -> int | None: ...

    @property
    def session_lifetime_ms(self) -> int | None: ...

    def evaluate_response(self, response: bytes) -> bytes: ...


class SaslClient(Protocol):
    """A client's side of one exchange: ``initial_response`` once, then
    ``evaluate_challenge`` with each server reply until it returns None
    (``complete`` is then True). Raises ``SaslAuthenticationError`` when the
    server's reply is malformed, reports an error or (SCRAM) fails to prove
    it knows the credential."""

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    def initial_response(self) -> bytes: ...

    def evaluate_challenge(self, challenge: bytes) -> bytes | None: ...


def negotiated_session_lifetime_ms(credential_expiration_ms: int | None,
                                   connections_max_reauth_ms: int | None,
                                   now_ms: int) -> int | None:
    """KIP-368's session lifetime, as SaslServerAuthenticator computes it when
    an exchange completes: the shorter of the time left on the credential and
    ``connections.max.reauth.ms`` (0 or None: no limit), never negative; None
    when neither limits the session (SaslAuthenticate answers 0)."""
    max_reauth = connections_max_reauth_ms if connections_max_reauth_ms and connections_max_reauth_ms > 0 else None
    if credential_expiration_ms is None:
        return max_reauth
    remaining = max(0, credential_expiration_ms - now_ms)
    return remaining if max_reauth is None else min(remaining, max_reauth)
