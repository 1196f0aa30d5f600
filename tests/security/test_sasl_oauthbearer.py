"""OAUTHBEARER (RFC 7628) with Kafka's unsecured JWT validator and login token."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kavka.common.clock import ManualClock
from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError
from kavka.security.sasl.oauthbearer import (
    ClientInitialResponse,
    OAuthBearerConfigError,
    OAuthBearerIllegalTokenError,
    OAuthBearerSaslClient,
    OAuthBearerSaslServer,
    OAuthBearerUnsecuredValidator,
    UnsecuredJws,
    unsecured_login_token,
)

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS // 1000


def b64(obj: Any) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


NONE = b64({"alg": "none"})


def jwt(claims: Any, header: Any = None, signature: str = "") -> str:
    return f"{b64(header if header is not None else {'alg': 'none'})}.{b64(claims)}.{signature}"


def server(options: dict[str, str] | None = None, now_ms: int = NOW_MS) -> OAuthBearerSaslServer:
    clock = ManualClock(now_ms)
    return OAuthBearerSaslServer(OAuthBearerUnsecuredValidator(options or {}, clock), clock)


def first(token: str, authzid: str = "", extensions: dict[str, str] | None = None) -> bytes:
    return ClientInitialResponse(token, authzid, extensions or {}).to_bytes()


def test_a_valid_token_authenticates_with_the_tokens_lifetime() -> None:
    s = server()
    token = jwt({"sub": "alice", "exp": NOW_S + 600, "iat": NOW_S})
    assert first(token) == f"n,,\x01auth=Bearer {token}\x01\x01".encode()
    assert s.evaluate_response(first(token)) == b""
    assert s.complete and s.authorization_id == "alice"
    assert s.credential_expiration_ms == (NOW_S + 600) * 1000
    assert s.session_lifetime_ms == 600_000


def test_round_trip_with_a_token_minted_from_login_options() -> None:
    clock = ManualClock(NOW_MS)
    token = unsecured_login_token({"unsecuredLoginStringClaim_sub": "admin",
                                   "unsecuredLoginListClaim_scope": "|read|write",
                                   "unsecuredLoginNumberClaim_n": "12.5",
                                   "unsecuredLoginExtension_traceId": "abc",
                                   "unsecuredLoginLifetimeSeconds": "120"}, clock)
    assert token.principal_name == "admin" and token.lifetime_ms == NOW_MS + 120_000
    jws = UnsecuredJws.parse(token.value)
    assert jws.header == {"alg": "none"}
    assert jws.claims["scope"] == ["read", "write"] and jws.claims["n"] == 12.5 and jws.claims["iat"] == NOW_S
    s = OAuthBearerSaslServer(OAuthBearerUnsecuredValidator(
        {"unsecuredValidatorRequiredScope": "read write"}, clock), clock)
    client = OAuthBearerSaslClient(token.value, extensions=token.extensions)
    assert client.evaluate_challenge(s.evaluate_response(client.initial_response())) is None
    assert client.complete and s.complete and s.authorization_id == "admin"
    assert dict(s.extensions) == {"traceId": "abc"}
    assert s.session_lifetime_ms == 120_000


@pytest.mark.parametrize("token, reason", [
    (jwt({"sub": "alice", "exp": NOW_S - 1}), "on or after the Expiration Time"),
    (jwt({"sub": "alice", "exp": NOW_S}), "on or after the Expiration Time"),
    (jwt({"sub": "alice"}), "Required claim missing: exp"),
    (jwt({"exp": NOW_S + 60}), "Required claim missing: sub"),
    (jwt({"sub": "", "exp": NOW_S + 60}), "No principal name in JWT claim: sub"),
    (jwt({"sub": 5, "exp": NOW_S + 60}), "The sub claim had the incorrect type: int"),
    (jwt({"sub": "alice", "exp": "soon"}), "The 'exp' claim was not of type Number: String"),
    (jwt({"sub": "alice", "exp": True}), "The 'exp' claim was not of type Number: Boolean"),
    (jwt({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}), "The Issued At value"),
    (jwt({"sub": "alice", "exp": NOW_S + 60}, header={"alg": "HS256"}), "must have 'none' for an algorithm"),
    (jwt({"sub": "alice", "exp": NOW_S + 60}, header={"typ": "JWT"}), "must have an Algorithm value"),
    (jwt({"sub": "alice", "exp": NOW_S + 60}, signature="c2ln"), "must not contain a digital signature"),
    (f"{b64({'alg': 'none'})}.{b64({'sub': 'a'})}", "must have 3 dot-separated"),
    (f"{b64({'alg': 'none'})}..", "contains '..'"),
    (f"{b64({'alg': 'none'})}.{b64(b'[1,2]')}.", "not a JSON object"),
    (f"{b64({'alg': 'none'})}.{b64(b'{bad')}.", "not a JSON object"),
    (NONE + "." + b64(b'{"exp": NaN, "sub": "a"}') + ".", "not a JSON object"),
    (NONE + "." + b64(b'{"exp": 1e999, "sub": "a"}') + ".", "not a finite number"),
    (f"{b64({'alg': 'none'})}.{b64(b'[' * 100000)}.", "not a JSON object"),
])
def test_a_refused_token_gets_the_rfc_7628_error_then_fails(token: str, reason: str) -> None:
    s = server()
    assert s.evaluate_response(first(token)) == b'{"status":"invalid_token"}'
    assert not s.complete
    assert reason in (s.rejection_reason or "")
    with pytest.raises(SaslAuthenticationError) as e:
        s.evaluate_response(b"\x01")
    assert e.value.message == '{"status":"invalid_token"}'
    with pytest.raises(IllegalSaslStateError):
        s.evaluate_response(b"\x01")


def test_the_clock_skew_option_widens_exp_and_iat() -> None:
    token = jwt({"sub": "alice", "exp": NOW_S - 1, "iat": NOW_S - 100})
    assert server().evaluate_response(first(token)) != b""
    assert server({"unsecuredValidatorAllowableClockSkewMs": "2000"}).evaluate_response(first(token)) == b""
    future_iat = jwt({"sub": "alice", "exp": NOW_S + 100, "iat": NOW_S + 1})
    assert server({"unsecuredValidatorAllowableClockSkewMs": "2000"}).evaluate_response(first(future_iat)) == b""


def test_exp_must_follow_iat() -> None:
    s = server({"unsecuredValidatorAllowableClockSkewMs": "100000000"})
    assert s.evaluate_response(first(jwt({"sub": "a", "exp": NOW_S, "iat": NOW_S}))) != b""
    assert "was not after the Issued At time" in (s.rejection_reason or "")


def test_missing_scope_is_insufficient_scope_naming_the_required_scope() -> None:
    s = server({"unsecuredValidatorRequiredScope": "read write"})
    token = jwt({"sub": "alice", "exp": NOW_S + 60, "scope": "read"})
    assert s.evaluate_response(first(token)) == b'{"status":"insufficient_scope", "scope":"[read, write]"}'
    with pytest.raises(SaslAuthenticationError, match="insufficient_scope"):
        s.evaluate_response(b"\x01")


def test_custom_principal_and_scope_claims() -> None:
    s = server({"unsecuredValidatorPrincipalClaimName": "azp", "unsecuredValidatorScopeClaimName": "roles",
                "unsecuredValidatorRequiredScope": "admin"})
    assert s.evaluate_response(first(jwt({"azp": "svc", "roles": ["admin"], "exp": NOW_S + 9}))) == b""
    assert s.authorization_id == "svc"


def test_authzid_must_be_the_tokens_principal() -> None:
    token = jwt({"sub": "alice", "exp": NOW_S + 60})
    assert server().evaluate_response(first(token, authzid="alice")) == b""
    with pytest.raises(SaslAuthenticationError, match="different from the token's principal name"):
        server().evaluate_response(first(token, authzid="admin"))


@pytest.mark.parametrize("message", [
    b"", b"\x01", b"n,,\x01\x01", b"n,,\x01auth=Basic abc\x01\x01", b"n,,\x01auth=Bearer\x01\x01",
    b"n,,\x01auth=Bearer a b\x01\x01", b"y,,\x01auth=Bearer abc\x01\x01", b"n,,auth=Bearer abc\x01\x01",
    b"n,,\x01auth=Bearer abc\x01", b"n,,\x01auth=Bearer abc\x011x=y\x01\x01", b"n,,\x01\xff\x01\x01",
])
def test_malformed_client_messages_fail_with_kafkas_generic_message(message: bytes) -> None:
    with pytest.raises(SaslAuthenticationError) as e:
        server().evaluate_response(message)
    assert e.value.message == ("Authentication failed during authentication due to invalid credentials "
                               "with SASL mechanism OAUTHBEARER")


def test_after_an_error_challenge_anything_but_ctrl_a_fails() -> None:
    s = server()
    s.evaluate_response(first(jwt({"sub": "a"})))
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        s.evaluate_response(first(jwt({"sub": "a", "exp": NOW_S + 60})))


def test_the_client_answers_an_error_with_ctrl_a() -> None:
    client = OAuthBearerSaslClient(jwt({"sub": "a"}))
    client.initial_response()
    assert client.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"
    assert client.server_error == '{"status":"invalid_token"}' and not client.complete


@pytest.mark.parametrize("options, match", [
    ({}, "no options"),
    ({"unsecuredLoginExtension_a": "b"}, "Extensions provided in login context without a token"),
    ({"unsecuredLoginNumberClaim_x": "1"}, "No principal name in JWT claim: sub"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginStringClaim_exp": "1"}, "Cannot explicitly set the 'exp' claim"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_n": "nan"}, "is not a number"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "1h"}, "not an integer"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"}, "Extension name auth is invalid"),
])
def test_login_options_that_cannot_work_are_refused(options: dict[str, str], match: str) -> None:
    with pytest.raises(OAuthBearerConfigError, match=match):
        unsecured_login_token(options, ManualClock(NOW_MS))


def test_list_claims_follow_kafkas_delimiter_rules() -> None:
    def claim(v: str) -> Any:
        t = unsecured_login_token({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginListClaim_l": v},
                                  ManualClock(NOW_MS))
        return UnsecuredJws.parse(t.value).claims["l"]
    assert claim(",a,b") == ["a", "b"]
    assert claim(",") == []
    assert claim("|a||b") == ["a", "", "b", ""]
    assert claim(",a,") == ["a", ""]


@pytest.mark.parametrize("skew", ["-1", "abc", "1.5"])
def test_validator_refuses_a_bad_clock_skew(skew: str) -> None:
    with pytest.raises(OAuthBearerConfigError, match="unsecuredValidatorAllowableClockSkewMs|clock skew"):
        OAuthBearerUnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": skew}, ManualClock())


def test_illegal_token_error_carries_scope() -> None:
    assert OAuthBearerIllegalTokenError("x", scope="[a]").scope == "[a]"
