"""A client's SASL exchange on one connection (Kafka's
``SaslClientAuthenticator``), and when to re-authenticate (KIP-368).

The exchange, after the ApiVersions handshake (KIP-511 puts ApiVersions
first so that the client knows which SASL versions the broker serves):

1. SaslHandshake v1 naming the mechanism (KIP-152: v1 means the tokens
   travel in SaslAuthenticate requests). UNSUPPORTED_SASL_MECHANISM comes
   back with the mechanisms the listener enables, which the error names.
2. SaslAuthenticate (v2 when the broker has it; v1+ answers the session
   lifetime) with the mechanism's initial response, then with each answer
   the ``SaslClient`` computes from the broker's challenge, until the client
   is complete. A broker error ends it: SASL_AUTHENTICATION_FAILED with the
   broker's message (Kafka's generic "invalid credentials with SASL
   mechanism ..."; it never carries a password, and neither does ours).

SCRAM derives its key with PBKDF2 (4096+ iterations: several milliseconds),
so every challenge is evaluated in a worker thread, never on the event loop
that serves the connection's other requests.

``session_lifetime_ms`` (SaslAuthenticate v1+, KIP-368) bounds the
session: a connection re-authenticates at a random point between 85 % and
95 % of it (``reauthentication_delay_s``), as Kafka's client does, so that
network latency and clock drift are covered and connections opened together
do not all re-authenticate at once.

Called by ``BrokerConnection`` on its event loop; ``send`` is the
connection's raw request path (bypassing the re-authentication gate).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from kavka.client.errors import SaslAuthenticationFailed, UnsupportedVersion
from kavka.common.errors import ErrorCode, KafkaError
from kavka.protocol.messages import (
    Request,
    Response,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kavka.security.client_security import ClientSecurity

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
# KIP-368: re-authenticate within this part of the session lifetime.
REAUTH_WINDOW = (0.85, 0.95)
# A broker that keeps challenging is broken or hostile: SCRAM needs two
# round trips, PLAIN and OAUTHBEARER one (plus an error round trip).
MAX_ROUND_TRIPS = 8

Send = Callable[[Request, int], Awaitable[Response | None]]


def reauthentication_delay_s(session_lifetime_ms: int, rng: random.Random | None = None) -> float | None:
    """Seconds after authentication at which to re-authenticate; None when
    the broker set no lifetime (0: the session does not expire)."""
    if session_lifetime_ms <= 0:
        return None
    lo, hi = REAUTH_WINDOW
    return session_lifetime_ms / 1000 * (lo + (hi - lo) * (rng or random).random())


async def authenticate(send: Send, versions: Callable[[int, int], int], security: ClientSecurity, where: str,
                       *, reauthentication: bool = False) -> int:
    """Run one SASL exchange (see the module docstring) and return the
    session lifetime the broker answered (ms; 0 when unlimited or when the
    broker's SaslAuthenticate is v0). ``versions(api_key, max_version)`` is
    the connection's version choice; ``where`` names the broker for
    messages. Raises ``SaslAuthenticationFailed`` naming ``where`` and the
    mechanism, ``UnsupportedVersion`` when the broker lacks SaslHandshake
    v1 or SaslAuthenticate, and the connection's errors."""
    mechanism = security.sasl_mechanism
    assert mechanism is not None, "authenticate() on a connection without SASL"
    what = "re-authentication" if reauthentication else "authentication"
    handshake_version = versions(SASL_HANDSHAKE_KEY, 1)
    if handshake_version < 1:
        raise UnsupportedVersion(f"broker {where} offers only SaslHandshake v0 (raw SASL tokens, before "
                                 "Kafka 1.0), which Kavka's client does not speak")
    authenticate_version = versions(SASL_AUTHENTICATE_KEY, 2)
    handshake = await send(SaslHandshakeRequest(mechanism=mechanism), handshake_version)
    assert isinstance(handshake, SaslHandshakeResponse)
    if handshake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(m[:100] for m in handshake.mechanisms[:20]) or "none"
        raise SaslAuthenticationFailed(f"broker {where} does not enable SASL mechanism {mechanism} "
                                       f"(it enables: {enabled})", code=ErrorCode.UNSUPPORTED_SASL_MECHANISM)
    if handshake.error_code != ErrorCode.NONE:
        code = ErrorCode.of(handshake.error_code)
        raise SaslAuthenticationFailed(f"broker {where} refused the SaslHandshake for {mechanism} {what}: "
                                       f"{code.name}", code=code)
    client = security.new_sasl_client()
    try:
        token: bytes | None = client.initial_response()
        lifetime = 0
        for _ in range(MAX_ROUND_TRIPS):
            assert token is not None
            response = await send(SaslAuthenticateRequest(auth_bytes=token), authenticate_version)
            assert isinstance(response, SaslAuthenticateResponse)
            if response.error_code != ErrorCode.NONE:
                code = ErrorCode.of(response.error_code)
                detail = (response.error_message or code.message)[:500]
                raise SaslAuthenticationFailed(f"{what} to broker {where} with SASL mechanism {mechanism} "
                                               f"failed: {detail}", code=code)
            if authenticate_version >= 1:
                lifetime = max(0, response.session_lifetime_ms)
            # SCRAM's PBKDF2 takes milliseconds: off the event loop.
            token = await asyncio.to_thread(client.evaluate_challenge, bytes(response.auth_bytes))
            if token is None:
                break
        else:
            raise SaslAuthenticationFailed(f"{what} to broker {where} with SASL mechanism {mechanism} failed: "
                                           f"the broker sent more than {MAX_ROUND_TRIPS} challenges")
    except SaslAuthenticationFailed:
        raise
    except KafkaError as e:
        if e.code not in (ErrorCode.SASL_AUTHENTICATION_FAILED, ErrorCode.ILLEGAL_SASL_STATE):
            raise
        # The client refused the broker's message (a SCRAM server signature
        # that does not verify, a malformed challenge).
        raise SaslAuthenticationFailed(f"{what} to broker {where} with SASL mechanism {mechanism} failed: "
                                       f"{e.message}", code=e.code) from None
    if not client.complete:
        raise SaslAuthenticationFailed(f"{what} to broker {where} with SASL mechanism {mechanism} failed: "
                                       "the broker ended the exchange before the mechanism completed")
    return lifetime
