"""The authentication phase of a connection on a SASL listener (Kafka's
``SaslServerAuthenticator``), with KIP-368 re-authentication.

A sans-IO state machine per connection: the connection hands it every
request frame (``receive``) and it answers with an ``AuthStep`` — a reply to
send, a session to adopt, whether to close — or None: the frame is an
ordinary request for the dispatcher.

States and the frames each takes (anything else closes the connection, as
Kafka does, and is logged once with the reason)::

    HANDSHAKE_OR_VERSIONS  ApiVersions (to the dispatcher; the first one at a
                           version the broker serves moves on to HANDSHAKE),
                           SaslHandshake
    HANDSHAKE              SaslHandshake
    AUTHENTICATE           SaslAuthenticate (after SaslHandshake v1; KIP-152)
    AUTHENTICATE_RAW       raw SASL tokens, size-prefixed with no Kafka
                           header, answered the same way (after SaslHandshake v0)
    COMPLETE               every request goes to the dispatcher; a
                           SaslHandshake v1 starts a re-authentication when
                           the session expires (at most once a second), and
                           any other request after the session expired
                           closes the connection
    FAILED                 nothing: the reply is written, then the connection closes

Errors, as Kafka answers them: a mechanism not enabled on the listener gets
SaslHandshake UNSUPPORTED_SASL_MECHANISM with the enabled list; a
SaslAuthenticate before SaslHandshake gets ILLEGAL_SASL_STATE; a failed
exchange SASL_AUTHENTICATION_FAILED with the mechanism's message (never a
password, never whether the user exists). Each failure is answered at once
and the connection closed ``connection.failed.authentication.delay.ms``
later (Kafka's delayed close), so that the client reads the answer before
the connection goes; a v0 client, which has no way to read an error, is
only disconnected (after the same delay).

KIP-368: when the exchange completes, the session lasts the shorter of
``connections.max.reauth.ms`` (the mechanism's own override first) and the
time left on the credential (OAUTHBEARER tokens); SaslAuthenticate v1+
tells the client (``session_lifetime_ms``) so that it re-authenticates in
time. A re-authentication must use the same mechanism and end with the same
principal; the old session stays in force until it completes.

Runs on the broker's event loop, one object per connection; ``receive`` is
synchronous and cheap (no I/O; SCRAM's server side hashes a few blocks).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from kavka.common.clock import Clock
from kavka.common.errors import ErrorCode
from kavka.protocol.errors import DecodeError
from kavka.protocol.headers import RequestHeader, decode_request
from kavka.protocol.messages import (
    Message,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kavka.security.principal import USER_TYPE, KafkaPrincipal, Session
from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError, invalid_credentials_message
from kavka.security.sasl.factory import SaslServerFactory
from kavka.security.sasl.mechanism import SaslServer, negotiated_session_lifetime_ms

log = logging.getLogger("kavka.security.authenticator")

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
# KIP-368: a connection may not start re-authenticating more often than this
MIN_REAUTH_INTERVAL_NS = 1_000_000_000
_API_KEY = struct.Struct(">hh")
_API_NAMES = {API_VERSIONS: "ApiVersions", SASL_HANDSHAKE: "SaslHandshake", SASL_AUTHENTICATE: "SaslAuthenticate"}


class SaslState(Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS"
    HANDSHAKE = "HANDSHAKE"
    AUTHENTICATE = "AUTHENTICATE"
    AUTHENTICATE_RAW = "AUTHENTICATE_RAW"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class AuthStep:
    """What the connection does with a frame the authenticator took:
    write ``response`` (a Kafka response to the request with ``header``) or
    ``token`` (a raw v0 SASL token, size-prefixed), adopt ``session`` from
    the next request on, and close once the reply is written when ``close``
    (``delay_s`` later). ``failure`` says why authentication failed (log it
    once, with the peer)."""

    header: RequestHeader | None = None
    response: Message | None = None
    token: bytes | None = None
    session: Session | None = None
    close: bool = False
    failure: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SaslListenerSettings:
    """One SASL listener's settings: ``factory`` makes a SaslServer per
    exchange and knows ``sasl.enabled.mechanisms``; ``reauth_ms`` is
    ``connections.max.reauth.ms`` per mechanism (0: sessions never expire);
    ``max_receive_size`` bounds frames before authentication
    (``sasl.server.max.receive.size``); ``failed_delay_s`` is
    ``connection.failed.authentication.delay.ms``."""

    factory: SaslServerFactory
    reauth_ms: Mapping[str, int]
    max_receive_size: int
    failed_delay_s: float


class SaslServerAuthenticator:
    """See the module docstring. ``session_for(principal, mechanism)`` makes
    the session of an authenticated principal (the channel builder knows the
    peer, the listener and the inter-broker principal); ``monotonic_ns``
    times session expiry, ``clock`` gives the wall time credentials expire
    in; ``api_versions_max`` is the highest ApiVersions version served."""

    def __init__(self, settings: SaslListenerSettings, session_for: Callable[[KafkaPrincipal, str], Session],
                 clock: Clock, monotonic_ns: Callable[[], int], api_versions_max: int) -> None:
        self.settings = settings
        self._session_for = session_for
        self._clock = clock
        self._monotonic_ns = monotonic_ns
        self._api_versions_max = api_versions_max
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self._server: SaslServer | None = None
        self._mechanism: str | None = None  # of the current exchange
        self._principal: KafkaPrincipal | None = None  # once authenticated
        self._session_mechanism: str | None = None
        self._expires_ns: int | None = None
        self._reauthenticating = False
        self._reauth_started_ns: int | None = None
        self._bad_mechanism: str | None = None

    # -- queries ----------------------------------------------------------------
    @property
    def authenticated(self) -> bool:
        """A principal is established (also while it re-authenticates)."""
        return self._principal is not None

    @property
    def expires_ns(self) -> int | None:
        """When the current session expires (monotonic ns), None if never."""
        return self._expires_ns

    # -- frames -----------------------------------------------------------------
    def receive(self, frame: bytes | memoryview) -> AuthStep | None:
        state = self.state
        if state is SaslState.COMPLETE:
            return self._after_authentication(frame)
        if state is SaslState.AUTHENTICATE_RAW:
            return self._raw_token(bytes(frame))
        if state is SaslState.FAILED:
            return AuthStep(close=True, failure="a request after authentication failed")
        if len(frame) < 4:
            return self._fail_closed(f"a {len(frame)}-byte frame is not a Kafka request")
        api_key, version = _API_KEY.unpack_from(frame, 0)
        if state is SaslState.AUTHENTICATE:
            if api_key != SASL_AUTHENTICATE:
                return self._fail_closed(f"unexpected Kafka request of type {_name(api_key)} during SASL "
                                         f"{self._phase()} (expected SaslAuthenticate)")
            return self._authenticate(frame)
        # HANDSHAKE_OR_VERSIONS, HANDSHAKE
        if api_key == API_VERSIONS and state is SaslState.HANDSHAKE_OR_VERSIONS:
            if 0 <= version <= self._api_versions_max:
                self.state = SaslState.HANDSHAKE
            return None  # the dispatcher answers (an unknown version with KIP-511's UNSUPPORTED_VERSION)
        if api_key == SASL_HANDSHAKE:
            return self._handshake(frame)
        if api_key == SASL_AUTHENTICATE:
            return self._illegal_authenticate(frame)
        return self._fail_closed(f"unexpected Kafka request of type {_name(api_key)} during SASL handshake "
                                 "(only ApiVersions, SaslHandshake and SaslAuthenticate are served before "
                                 "authentication)")

    # -- the handshake ----------------------------------------------------------
    def _handshake(self, frame: bytes | memoryview) -> AuthStep:
        try:
            header, request = decode_request(frame)
        except DecodeError as e:
            return self._fail_closed(f"malformed SaslHandshake request: {e}")
        assert isinstance(request, SaslHandshakeRequest)
        factory = self.settings.factory
        enabled = list(factory.enabled_mechanisms)
        mechanism = request.mechanism
        if mechanism not in enabled:
            self.state = SaslState.FAILED
            return AuthStep(header, SaslHandshakeResponse(error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                                                          mechanisms=enabled),
                            close=True, failure=f"unsupported SASL mechanism {mechanism[:100]!r} "
                                                f"(enabled: {', '.join(enabled)})",
                            delay_s=self.settings.failed_delay_s)
        if self._reauthenticating and mechanism != self._session_mechanism:
            # Kafka answers the handshake and fails the exchange that follows
            self._bad_mechanism = (f"SASL mechanism changed during re-authentication from "
                                   f"{self._session_mechanism} to {mechanism}")
        self._mechanism = mechanism
        self._server = factory.create(mechanism, reauthentication=self._reauthenticating)
        self.state = SaslState.AUTHENTICATE if header.api_version >= 1 else SaslState.AUTHENTICATE_RAW
        return AuthStep(header, SaslHandshakeResponse(error_code=int(ErrorCode.NONE), mechanisms=enabled))

    def _illegal_authenticate(self, frame: bytes | memoryview) -> AuthStep:
        try:
            header, _ = decode_request(frame)
        except DecodeError as e:
            return self._fail_closed(f"malformed SaslAuthenticate request: {e}")
        message = "SaslAuthenticate request received before SaslHandshake chose a SASL mechanism"
        self.state = SaslState.FAILED
        return AuthStep(header, SaslAuthenticateResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE),
                                                         error_message=message, auth_bytes=b""),
                        close=True, failure=message, delay_s=self.settings.failed_delay_s)

    # -- the exchange -----------------------------------------------------------
    def _authenticate(self, frame: bytes | memoryview) -> AuthStep:
        try:
            header, request = decode_request(frame)
        except DecodeError as e:
            # an unsupported SaslAuthenticate version cannot be answered: close (as Kafka)
            return self._fail_closed(f"malformed SaslAuthenticate request: {e}")
        assert isinstance(request, SaslAuthenticateRequest) and self._server is not None
        server, mechanism = self._server, self._mechanism or ""

        def failed(code: ErrorCode, message: str, reason: str) -> AuthStep:
            self.state = SaslState.FAILED
            return AuthStep(header, SaslAuthenticateResponse(error_code=int(code), error_message=message,
                                                             auth_bytes=b""),
                            close=True, failure=reason, delay_s=self.settings.failed_delay_s)

        if self._bad_mechanism is not None:
            return failed(ErrorCode.SASL_AUTHENTICATION_FAILED, self._bad_mechanism, self._bad_mechanism)
        try:
            challenge = server.evaluate_response(bytes(request.auth_bytes))
        except SaslAuthenticationError as e:
            return failed(ErrorCode.SASL_AUTHENTICATION_FAILED, e.message, f"{mechanism}: {e.reason}")
        except IllegalSaslStateError as e:
            return failed(ErrorCode.ILLEGAL_SASL_STATE, e.message, f"{mechanism}: {e.message}")
        except Exception as e:  # a mechanism's own bug must not tell the client anything
            log.warning("SASL %s server failed unexpectedly: %s", mechanism, type(e).__name__)
            message = invalid_credentials_message(mechanism, self._reauthenticating)
            return failed(ErrorCode.SASL_AUTHENTICATION_FAILED, message,
                          f"{mechanism}: unexpected {type(e).__name__} in the SASL server")
        if not server.complete:
            return AuthStep(header, SaslAuthenticateResponse(error_code=int(ErrorCode.NONE), error_message=None,
                                                             auth_bytes=challenge, session_lifetime_ms=0))
        principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        if self._reauthenticating and principal != self._principal:
            message = f"Cannot change principals during re-authentication from {self._principal}: {principal}"
            return failed(ErrorCode.SASL_AUTHENTICATION_FAILED, message, message)
        lifetime_ms = self._complete(principal, mechanism, server)
        return AuthStep(header, SaslAuthenticateResponse(error_code=int(ErrorCode.NONE), error_message=None,
                                                         auth_bytes=challenge, session_lifetime_ms=lifetime_ms or 0),
                        session=self._session_for(principal, mechanism))

    def _raw_token(self, token: bytes) -> AuthStep:
        """SaslHandshake v0: the token is the whole frame; so is the reply."""
        server, mechanism = self._server, self._mechanism or ""
        assert server is not None
        try:
            challenge = server.evaluate_response(token)
        except (SaslAuthenticationError, IllegalSaslStateError) as e:
            reason = e.reason if isinstance(e, SaslAuthenticationError) else e.message
            self.state = SaslState.FAILED
            return AuthStep(close=True, failure=f"{mechanism}: {reason}", delay_s=self.settings.failed_delay_s)
        except Exception as e:
            log.warning("SASL %s server failed unexpectedly: %s", mechanism, type(e).__name__)
            self.state = SaslState.FAILED
            return AuthStep(close=True, failure=f"{mechanism}: unexpected {type(e).__name__} in the SASL server",
                            delay_s=self.settings.failed_delay_s)
        if not server.complete:
            return AuthStep(token=challenge)
        principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        self._complete(principal, mechanism, server)
        return AuthStep(token=challenge, session=self._session_for(principal, mechanism))

    def _complete(self, principal: KafkaPrincipal, mechanism: str, server: SaslServer) -> int | None:
        """The exchange succeeded: the session's lifetime (KIP-368), None if unlimited."""
        lifetime_ms = negotiated_session_lifetime_ms(server.credential_expiration_ms,
                                                     self.settings.reauth_ms.get(mechanism, 0),
                                                     self._clock.milliseconds())
        self._expires_ns = None if lifetime_ms is None else self._monotonic_ns() + lifetime_ms * 1_000_000
        self._principal, self._session_mechanism = principal, mechanism
        self._reauthenticating = False
        self._server = None
        self.state = SaslState.COMPLETE
        return lifetime_ms

    # -- after authentication ---------------------------------------------------
    def _after_authentication(self, frame: bytes | memoryview) -> AuthStep | None:
        expires = self._expires_ns
        if expires is None:
            return None  # SaslHandshake now is answered ILLEGAL_SASL_STATE by its handler, as Kafka does
        if len(frame) >= 4:
            api_key, version = _API_KEY.unpack_from(frame, 0)
            if api_key == SASL_HANDSHAKE and version >= 1:
                now = self._monotonic_ns()
                started = self._reauth_started_ns
                if started is None or now - started >= MIN_REAUTH_INTERVAL_NS:
                    self._reauth_started_ns = now
                    self._reauthenticating = True
                    self._bad_mechanism = None
                    self.state = SaslState.HANDSHAKE
                    return self._handshake(frame)
                return None
        if self._monotonic_ns() >= expires:
            self.state = SaslState.FAILED
            return AuthStep(close=True, failure=f"the SASL session of {self._principal} expired "
                                                "(connections.max.reauth.ms) without re-authentication")
        return None

    def _fail_closed(self, reason: str) -> AuthStep:
        self.state = SaslState.FAILED
        return AuthStep(close=True, failure=reason)

    def _phase(self) -> str:
        return "re-authentication" if self._reauthenticating else "authentication"


def _name(api_key: int) -> str:
    return _API_NAMES.get(api_key, f"API {api_key}")
