"""``SaslServerAuthenticator``: the authentication phase of a SASL
connection as a state machine over request frames, with the real SASL
mechanisms (kavka.security.sasl) on both sides and hand-driven clocks.

Kafka's behaviour checked here: only ApiVersions, SaslHandshake and
SaslAuthenticate before authentication; v0 raw tokens; the error codes and
closes of every bad path; KIP-368 session lifetimes, expiry and
re-authentication (same mechanism, same principal, at most once a second)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kavka.security.principal import KafkaPrincipal, Session
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.security.sasl.factory import SaslServerFactory
from kavka.security.sasl.oauthbearer import OAuthBearerSaslClient, unsecured_login_token
from kavka.security.sasl.plain import PlainSaslClient
from kavka.security.sasl.scram import ScramSaslClient
from kavka.server.authenticator import (
    AuthStep,
    SaslListenerSettings,
    SaslServerAuthenticator,
    SaslState,
)

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM = ScramFormatter(ScramMechanism.SCRAM_SHA_512)
CREDS = {("SCRAM-SHA-512", u): SCRAM.generate_credential(p, 4096) for u, p in USERS.items()}
MECHANISMS = ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER")


class Clocks:
    """The wall clock (credential expiry) and the monotonic one (session expiry), moved together."""

    def __init__(self) -> None:
        self.wall = ManualClock()
        self.mono_ns = 10**12

    def advance_ms(self, ms: int) -> None:
        self.wall.advance(ms)
        self.mono_ns += ms * 1_000_000


def make(reauth_ms: int = 0, mechanisms=MECHANISMS, clocks: Clocks | None = None,
         oauth_reauth_ms: int | None = None) -> tuple[SaslServerAuthenticator, Clocks]:
    clocks = clocks or Clocks()
    factory = SaslServerFactory(mechanisms, plain_users=USERS, scram_credentials=lambda m, u: CREDS.get((m, u)),
                                oauth_options={}, clock=clocks.wall)
    reauth = {m: reauth_ms for m in mechanisms}
    if oauth_reauth_ms is not None:
        reauth["OAUTHBEARER"] = oauth_reauth_ms
    settings_ = SaslListenerSettings(factory, reauth, max_receive_size=524288, failed_delay_s=0.1)
    auth = SaslServerAuthenticator(
        settings_, lambda p, m: Session(p, "127.0.0.1", "SASL_PLAINTEXT", "SASL_PLAINTEXT", m,
                                        inter_broker=p == KafkaPrincipal("User", "bob")),
        clocks.wall, lambda: clocks.mono_ns, api_versions_max=4)
    return auth, clocks


_cid = iter(range(1, 10**9))


def req(body, version: int) -> bytes:
    return encode_request(RequestHeader(body.API_KEY, version, next(_cid), "test"), body)


def handshake(auth, mechanism="PLAIN", version=1) -> AuthStep:
    return auth.receive(req(SaslHandshakeRequest(mechanism=mechanism), version))


def authenticate(auth, token: bytes, version=2) -> AuthStep:
    return auth.receive(req(SaslAuthenticateRequest(auth_bytes=token), version))


def plain_login(auth, user="alice", password=None, version=2) -> AuthStep:
    assert handshake(auth).response.error_code == 0
    return authenticate(auth, PlainSaslClient(user, password or USERS[user]).initial_response(), version)


def test_api_versions_goes_to_the_dispatcher_then_plain_authenticates():
    auth, _ = make()
    assert auth.receive(req(ApiVersionsRequest(), 3)) is None
    step = handshake(auth)
    assert isinstance(step.response, SaslHandshakeResponse)
    assert (step.response.error_code, list(step.response.mechanisms)) == (0, list(MECHANISMS))
    assert not step.close and step.session is None and auth.state is SaslState.AUTHENTICATE
    step = authenticate(auth, PlainSaslClient("alice", "alice-secret").initial_response())
    assert isinstance(step.response, SaslAuthenticateResponse)
    assert (step.response.error_code, step.response.session_lifetime_ms) == (0, 0)
    assert step.session.principal == KafkaPrincipal("User", "alice") and step.session.sasl_mechanism == "PLAIN"
    assert not step.session.inter_broker and auth.state is SaslState.COMPLETE and auth.expires_ns is None
    # authenticated: everything goes to the dispatcher, SaslHandshake included (its handler says ILLEGAL_SASL_STATE)
    assert auth.receive(req(MetadataRequest(topics=None), 9)) is None
    assert handshake(auth) is None


def test_the_inter_broker_principal_gets_an_inter_broker_session():
    auth, _ = make()
    assert plain_login(auth, "bob").session.inter_broker


def test_scram_sha_512_exchange():
    auth, _ = make()
    assert handshake(auth, "SCRAM-SHA-512").response.error_code == 0
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_512, "alice", "alice-secret")
    first = authenticate(auth, client.initial_response())
    assert first.response.error_code == 0 and first.session is None
    final = authenticate(auth, client.evaluate_challenge(first.response.auth_bytes))
    assert final.response.error_code == 0 and final.session.principal.name == "alice"
    assert client.evaluate_challenge(final.response.auth_bytes) is None and client.complete


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_or_unknown_user_fails_with_the_mechanism_message_then_closes(user, password):
    auth, _ = make()
    step = plain_login(auth, user, password)
    assert step.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert step.response.error_message == "Authentication failed: Invalid username or password"
    assert step.close and step.delay_s == 0.1 and step.failure and step.session is None
    assert password not in step.response.error_message + step.failure
    assert auth.state is SaslState.FAILED
    assert auth.receive(req(MetadataRequest(topics=None), 9)).close


def test_scram_wrong_password_gets_kafka_generic_message():
    auth, _ = make()
    handshake(auth, "SCRAM-SHA-512")
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_512, "alice", "not-her-password")
    first = authenticate(auth, client.initial_response())
    final = authenticate(auth, client.evaluate_challenge(first.response.auth_bytes))
    assert final.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and final.close
    assert "not-her-password" not in (final.response.error_message or "")


def test_unknown_mechanism_is_unsupported_with_the_enabled_list_then_closes():
    auth, _ = make()
    step = handshake(auth, "GSSAPI")
    assert step.response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert list(step.response.mechanisms) == list(MECHANISMS)
    assert step.close and step.delay_s > 0 and "GSSAPI" in step.failure


def test_sasl_authenticate_before_the_handshake_is_illegal_sasl_state_then_closes():
    auth, _ = make()
    step = authenticate(auth, b"\x00alice\x00alice-secret")
    assert step.response.error_code == ErrorCode.ILLEGAL_SASL_STATE and step.close
    assert "before SaslHandshake" in step.response.error_message


@pytest.mark.parametrize("frame", [req(MetadataRequest(topics=None), 9), b"\x00\x03", b"\x16\x03\x01\x02\x00\x01"])
def test_other_requests_or_garbage_before_authentication_close_without_reply(frame):
    auth, _ = make()
    step = auth.receive(frame)
    assert step.close and step.response is None and step.token is None and step.failure


def test_a_non_sasl_request_during_the_exchange_closes():
    auth, _ = make()
    handshake(auth, "SCRAM-SHA-512")
    step = auth.receive(req(MetadataRequest(topics=None), 9))
    assert step.close and "during SASL authentication" in step.failure


def test_a_second_api_versions_before_the_handshake_closes_unless_the_first_was_unsupported():
    auth, _ = make()
    assert auth.receive(req(ApiVersionsRequest(), 3)) is None
    assert auth.receive(req(ApiVersionsRequest(), 3)).close
    auth, _ = make()
    unsupported = bytearray(req(ApiVersionsRequest(), 3))
    unsupported[2:4] = (99).to_bytes(2, "big")  # KIP-511: the client asks a version the broker lacks
    assert auth.receive(bytes(unsupported)) is None and auth.state is SaslState.HANDSHAKE_OR_VERSIONS
    assert auth.receive(req(ApiVersionsRequest(), 0)) is None and auth.state is SaslState.HANDSHAKE


def test_handshake_v0_then_raw_tokens():
    auth, _ = make()
    step = handshake(auth, "PLAIN", version=0)
    assert step.response.error_code == 0 and auth.state is SaslState.AUTHENTICATE_RAW
    step = auth.receive(b"\x00alice\x00alice-secret")
    assert step.token == b"" and step.response is None and step.session.principal.name == "alice"
    auth, _ = make()
    handshake(auth, "PLAIN", version=0)
    step = auth.receive(b"\x00alice\x00nope")
    assert step.close and step.token is None and step.response is None  # a v0 client has no way to read an error


def test_raw_scram_exchange():
    auth, _ = make()
    handshake(auth, "SCRAM-SHA-512", version=0)
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_512, "bob", "bob-secret")
    first = auth.receive(client.initial_response())
    final = auth.receive(client.evaluate_challenge(first.token))
    assert client.evaluate_challenge(final.token) is None
    assert final.session.principal.name == "bob" and final.session.inter_broker


def test_session_lifetime_is_connections_max_reauth_ms_and_expiry_closes():
    auth, clocks = make(reauth_ms=60_000)
    step = plain_login(auth)
    assert step.response.session_lifetime_ms == 60_000
    clocks.advance_ms(59_999)
    assert auth.receive(req(MetadataRequest(topics=None), 9)) is None
    clocks.advance_ms(1)
    step = auth.receive(req(MetadataRequest(topics=None), 9))
    assert step.close and "expired" in step.failure and "User:alice" in step.failure


def test_v0_sasl_authenticate_gets_no_lifetime_but_still_expires():
    auth, clocks = make(reauth_ms=1000)
    step = plain_login(auth, version=0)
    assert step.response.error_code == 0
    clocks.advance_ms(1000)
    assert auth.receive(req(MetadataRequest(topics=None), 9)).close


def test_reauthentication_renews_the_session():
    auth, clocks = make(reauth_ms=10_000)
    plain_login(auth)
    first_expiry = auth.expires_ns
    clocks.advance_ms(9_000)
    step = plain_login(auth)  # a SaslHandshake on an authenticated connection starts KIP-368's re-authentication
    assert step.response.error_code == 0 and step.session.principal.name == "alice"
    assert auth.expires_ns == first_expiry + 9_000 * 1_000_000
    clocks.advance_ms(5_000)
    assert auth.receive(req(MetadataRequest(topics=None), 9)) is None  # past the first expiry, within the new one


def test_reauthentication_at_most_once_a_second():
    auth, clocks = make(reauth_ms=10_000)
    plain_login(auth)
    clocks.advance_ms(2000)
    plain_login(auth)
    clocks.advance_ms(500)
    assert handshake(auth) is None  # to the handler: ILLEGAL_SASL_STATE, connection kept
    clocks.advance_ms(500)
    assert plain_login(auth).response.error_code == 0


def test_reauthentication_as_someone_else_fails():
    auth, _ = make(reauth_ms=10_000)
    plain_login(auth)
    step = plain_login(auth, "bob")
    assert step.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and step.close
    assert "Cannot change principals during re-authentication from User:alice: User:bob" in step.response.error_message


def test_reauthentication_with_another_mechanism_fails():
    auth, _ = make(reauth_ms=10_000)
    plain_login(auth)
    assert handshake(auth, "SCRAM-SHA-512").response.error_code == 0  # Kafka answers the handshake...
    client = ScramSaslClient(ScramMechanism.SCRAM_SHA_512, "alice", "alice-secret")
    step = authenticate(auth, client.initial_response())  # ...and fails the exchange that follows
    assert step.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and step.close
    assert "from PLAIN to SCRAM-SHA-512" in step.response.error_message


def test_oauthbearer_lifetime_is_the_shorter_of_the_token_and_max_reauth():
    auth, clocks = make(oauth_reauth_ms=3_600_000)
    token = unsecured_login_token({"unsecuredLoginStringClaim_sub": "carol", "unsecuredLoginLifetimeSeconds": "600"},
                                  clocks.wall)
    assert handshake(auth, "OAUTHBEARER").response.error_code == 0
    step = authenticate(auth, OAuthBearerSaslClient(token.value).initial_response())
    assert step.response.error_code == 0 and step.session.principal.name == "carol"
    assert step.response.session_lifetime_ms == 600_000


# -- any sequence of frames: no exception, and after a close nothing but closes -----

_frames = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(["versions", "handshake-plain", "handshake-scram", "handshake-v0", "handshake-bad",
                     "auth-good", "auth-bad", "metadata"]),
)


def _frame(item) -> bytes:
    if isinstance(item, bytes):
        return item
    return {
        "versions": lambda: req(ApiVersionsRequest(), 3),
        "handshake-plain": lambda: req(SaslHandshakeRequest(mechanism="PLAIN"), 1),
        "handshake-scram": lambda: req(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1),
        "handshake-v0": lambda: req(SaslHandshakeRequest(mechanism="PLAIN"), 0),
        "handshake-bad": lambda: req(SaslHandshakeRequest(mechanism="NOPE"), 1),
        "auth-good": lambda: req(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), 2),
        "auth-bad": lambda: req(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00x"), 1),
        "metadata": lambda: req(MetadataRequest(topics=None), 9),
    }[item]()


@settings(max_examples=300, deadline=None)
@given(st.lists(_frames, max_size=12), st.integers(0, 2000))
def test_any_frame_sequence_is_answered_without_exceptions(items, reauth_ms):
    auth, clocks = make(reauth_ms=reauth_ms)
    closed = False
    for item in items:
        step = auth.receive(_frame(item))
        if closed:
            assert step is not None and step.close
        elif step is not None and step.close:
            closed = True
        if step is not None and step.session is not None:
            assert step.session.principal.name == "alice" and not closed
        clocks.advance_ms(300)
    if not closed and auth.state is not SaslState.COMPLETE:
        assert not auth.authenticated or auth.state in (SaslState.AUTHENTICATE, SaslState.AUTHENTICATE_RAW,
                                                        SaslState.HANDSHAKE)
