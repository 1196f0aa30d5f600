"""The per-listener SaslServerFactory, the client factory, and hostile bytes
into every mechanism (property tests)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.security.sasl.credentials import ScramCredential, ScramFormatter, ScramMechanism
from kavka.security.sasl.errors import SaslAuthenticationError, UnsupportedSaslMechanismError
from kavka.security.sasl.factory import SaslServerFactory, sasl_client_for, sasl_client_from_properties
from kavka.security.sasl.mechanism import SaslClient, SaslServer, negotiated_session_lifetime_ms
from kavka.security.sasl.oauthbearer import OAuthBearerConfigError, UnsecuredJws, librdkafka_unsecured_token
from kavka.security.sasl.scram import ScramSaslClient

NOW_MS = 1_700_000_000_000
CREDS = {(m.mechanism_name, "alice"): ScramFormatter(m).generate_credential("alice-secret") for m in ScramMechanism}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
              'password="alice-secret";')
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";'
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="alice";')


def lookup(mechanism: str, user: str) -> ScramCredential | None:
    return CREDS.get((mechanism, user))


def factory(mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"),
            **kw: Any) -> SaslServerFactory:
    args: dict[str, Any] = dict(plain_users={"alice": "alice-secret"}, scram_credentials=lookup,
                                oauth_options={}, clock=ManualClock(NOW_MS))
    args.update(kw)
    return SaslServerFactory(mechanisms, **args)


def run(client: SaslClient, server: SaslServer) -> None:
    token: bytes | None = client.initial_response()
    while token is not None:
        token = client.evaluate_challenge(server.evaluate_response(token))


@pytest.mark.parametrize("mechanism, jaas", [("PLAIN", PLAIN_JAAS), ("SCRAM-SHA-256", SCRAM_JAAS),
                                             ("SCRAM-SHA-512", SCRAM_JAAS), ("OAUTHBEARER", OAUTH_JAAS)])
def test_every_mechanism_round_trips_through_the_factories(mechanism: str, jaas: str) -> None:
    server = factory().create(mechanism)
    client = sasl_client_for(mechanism, jaas, clock=ManualClock(NOW_MS))
    run(client, server)
    assert server.complete and client.complete and server.authorization_id == "alice"
    assert server.mechanism == client.mechanism == mechanism


def test_a_mechanism_not_enabled_is_unsupported() -> None:
    f = factory(("SCRAM-SHA-512",))
    assert f.enabled_mechanisms == ("SCRAM-SHA-512",)
    for m in ["PLAIN", "GSSAPI", "scram-sha-512", ""]:
        with pytest.raises(UnsupportedSaslMechanismError, match=f"Unsupported SASL mechanism {m}"):
            f.create(m)


@pytest.mark.parametrize("mechanisms, kw, match", [
    (("GSSAPI",), {}, "GSSAPI is not supported"),
    (("PLAIN",), {"plain_users": None}, "PLAIN but no PlainLoginModule"),
    (("SCRAM-SHA-256",), {"scram_credentials": None}, "SCRAM but no SCRAM credential store"),
    (("OAUTHBEARER",), {"oauth_options": None}, "OAUTHBEARER but no OAuthBearerLoginModule"),
])
def test_a_mechanism_enabled_without_what_it_needs_is_refused(mechanisms: tuple[str, ...], kw: dict[str, Any],
                                                              match: str) -> None:
    with pytest.raises(ValueError, match=match):
        factory(mechanisms, **kw)


def test_client_factory_refuses_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="GSSAPI is not supported"):
        sasl_client_for("GSSAPI", PLAIN_JAAS)
    with pytest.raises(ValueError, match="does not serve SASL mechanism SCRAM-SHA-256"):
        sasl_client_for("SCRAM-SHA-256", PLAIN_JAAS)
    with pytest.raises(ValueError, match="tokenauth"):
        sasl_client_for("SCRAM-SHA-256", SCRAM_JAAS.replace(";", " tokenauth=true;"))
    with pytest.raises(OAuthBearerConfigError):
        sasl_client_for("OAUTHBEARER", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;")


def test_reauthentication_wording_reaches_the_servers() -> None:
    for m in ["SCRAM-SHA-256", "OAUTHBEARER"]:
        with pytest.raises(SaslAuthenticationError, match="during re-authentication"):
            factory().create(m, reauthentication=True).evaluate_response(b"junk")


def test_session_lifetime_is_the_shorter_of_credential_and_max_reauth() -> None:
    assert negotiated_session_lifetime_ms(None, None, NOW_MS) is None
    assert negotiated_session_lifetime_ms(None, 0, NOW_MS) is None
    assert negotiated_session_lifetime_ms(None, 5000, NOW_MS) == 5000
    assert negotiated_session_lifetime_ms(NOW_MS + 9000, None, NOW_MS) == 9000
    assert negotiated_session_lifetime_ms(NOW_MS + 9000, 5000, NOW_MS) == 5000
    assert negotiated_session_lifetime_ms(NOW_MS + 3000, 5000, NOW_MS) == 3000
    assert negotiated_session_lifetime_ms(NOW_MS - 1, 5000, NOW_MS) == 0


# Hostile bytes: whatever a client sends, a server answers or raises
# SaslAuthenticationError, and a failed exchange stays failed.

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
SCRAM_ALPHABET = list(b"nayprcpsvie=,+/01239ABCXYZabcxyz\x00\x01\xff") + [0xC3, 0xA9]


def tokens() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=300),
        st.lists(st.sampled_from(SCRAM_ALPHABET), max_size=120).map(bytes),
        st.sampled_from([b"n,,n=alice,r=abc", b"\x00alice\x00alice-secret", b"\x01", b"n,,\x01auth=Bearer a.b.\x01\x01",
                         b"c=biws,r=abc", b"n,,n=alice,r=abc,tokenauth=true"]),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mechanism=st.sampled_from(MECHANISMS), responses=st.lists(tokens(), min_size=1, max_size=4))
def test_arbitrary_bytes_only_ever_raise_sasl_authentication_error(mechanism: str, responses: list[bytes]) -> None:
    server = factory().create(mechanism)
    for response in responses:
        try:
            challenge = server.evaluate_response(response)
        except SaslAuthenticationError as e:
            assert e.message and "alice-secret" not in str(e) and "alice-secret" not in e.reason
            assert not server.complete
            return
        assert isinstance(challenge, bytes) and len(challenge) < 1024
        if server.complete:
            return


def test_a_large_hostile_token_is_refused_quickly() -> None:
    for m in MECHANISMS:
        for token in [b"n,,n=" + b"a" * 1_000_000, b"\x00" * 1_000_000, b"n,," + b"\x01a=b" * 200_000,
                      b"n,,\x01auth=Bearer " + b"a" * 1_000_000 + b"\x01\x01"]:
            server = factory().create(m)
            with contextlib.suppress(SaslAuthenticationError):
                server.evaluate_response(token)


# client.properties in either dialect

@pytest.mark.parametrize("props", [
    {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"},
    {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"},
    {"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": SCRAM_JAAS},
    {"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": OAUTH_JAAS},
    {"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
     "sasl.oauthbearer.config": "principal=alice scope=a,b lifeSeconds=60 extension_traceId=x1"},
])
def test_a_client_from_properties_authenticates(props: dict[str, str]) -> None:
    client = sasl_client_from_properties(props, clock=ManualClock(NOW_MS))
    server = factory().create(client.mechanism)
    run(client, server)
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("props, match", [
    ({}, "sasl.mechanism is not set"),
    ({"sasl.mechanism": "GSSAPI"}, "GSSAPI is not supported"),
    ({"sasl.mechanism": "PLAIN", "sasl.username": "alice"}, "PLAIN needs sasl.password"),
    ({"sasl.mechanism": "SCRAM-SHA-256", "sasl.password": "x"}, "needs sasl.username"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS, "sasl.username": "alice"}, "not both"),
    ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "principal=alice"},
     "enable.sasl.oauthbearer.unsecure.jwt=true"),
    ({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
      "sasl.oauthbearer.config": "scope=a"}, "principal=<value> is required"),
    ({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
      "sasl.oauthbearer.config": "principal=a principal=b"}, "cannot be specified multiple times"),
    ({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
      "sasl.oauthbearer.config": "principal=a lifeSeconds=0"}, "lifeSeconds must be a positive integer"),
    ({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
      "sasl.oauthbearer.config": "principal=a colour=red"}, "unrecognized key 'colour'"),
    ({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
      "sasl.oauthbearer.config": "principal=a extension_auth=x"}, "Extension name auth is invalid"),
])
def test_properties_that_cannot_work_are_refused_naming_the_key(props: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match) as e:
        sasl_client_from_properties(props, source="client.properties")
    assert str(e.value).startswith("client.properties") or "sasl.oauthbearer.config" in str(e.value)
    assert "alice-secret" not in str(e.value)


def test_librdkafka_token_claims() -> None:
    token = librdkafka_unsecured_token("principalClaimName=azp principal=svc scopeClaimName=roles scope=r1,r2",
                                       ManualClock(NOW_MS))
    claims = UnsecuredJws.parse(token.value).claims
    assert claims == {"azp": "svc", "iat": NOW_MS // 1000, "exp": NOW_MS // 1000 + 3600, "roles": ["r1", "r2"]}
    assert token.principal_name == "svc" and token.lifetime_ms == (NOW_MS // 1000 + 3600) * 1000


# Mutations of a valid exchange: any change to the client's final message fails it

@settings(max_examples=200, deadline=None)
@given(mechanism=st.sampled_from(["SCRAM-SHA-256", "SCRAM-SHA-512"]), data=st.data())
def test_any_change_to_a_valid_client_final_message_fails(mechanism: str, data: st.DataObject) -> None:
    scram = ScramMechanism.of(mechanism)
    assert scram is not None
    server = factory(nonce_source=lambda: "servernonce").create(mechanism)
    client = ScramSaslClient(scram, "alice", "alice-secret", nonce="clientnonce")
    final = client.evaluate_challenge(server.evaluate_response(client.initial_response()))
    assert final is not None
    i = data.draw(st.integers(0, len(final) - 1))
    op = data.draw(st.sampled_from(["flip", "drop", "insert"]))
    if op == "flip":
        mutated = final[:i] + bytes([final[i] ^ data.draw(st.integers(1, 255))]) + final[i + 1:]
    elif op == "drop":
        mutated = final[:i] + final[i + 1:]
    else:
        mutated = final[:i] + bytes([data.draw(st.integers(0, 255))]) + final[i:]
    try:
        server.evaluate_response(mutated)
    except SaslAuthenticationError:
        assert not server.complete
        return
    pytest.fail(f"mutated client-final accepted: {op} at {i}")


@settings(max_examples=300, deadline=None)
@given(mechanism=st.sampled_from(MECHANISMS), challenges=st.lists(tokens(), min_size=1, max_size=3))
def test_a_hostile_server_only_ever_raises_sasl_authentication_error_in_clients(
        mechanism: str, challenges: list[bytes]) -> None:
    client = sasl_client_for(mechanism, {"PLAIN": PLAIN_JAAS, "OAUTHBEARER": OAUTH_JAAS}.get(mechanism, SCRAM_JAAS),
                             clock=ManualClock(NOW_MS))
    client.initial_response()
    for challenge in challenges:
        try:
            if client.evaluate_challenge(challenge) is None:
                return
        except SaslAuthenticationError:
            assert not client.complete
            return
