"""SCRAM-SHA-256/512: the RFC test vectors byte for byte, client <-> server
round trips, and every way a client (or server) can get it wrong."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import pytest

from kavka.security.sasl.credentials import ScramCredential, ScramFormatter, ScramMechanism
from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError
from kavka.security.sasl.scram import (
    ClientFirstMessage,
    ScramSaslClient,
    ScramSaslServer,
    sasl_name,
    username_of,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
SECRET = b"k" * 32


def lookup_of(creds: dict[tuple[str, str], ScramCredential]) -> Any:
    return lambda mechanism, user: creds.get((mechanism, user))


def server_for(mechanism: ScramMechanism, users: dict[str, str], nonce: str = "srvnonce",
               reauthentication: bool = False) -> ScramSaslServer:
    f = ScramFormatter(mechanism)
    creds = {(mechanism.mechanism_name, u): f.generate_credential(p) for u, p in users.items()}
    return ScramSaslServer(mechanism, lookup_of(creds), mock_secret=SECRET, nonce_source=lambda: nonce,
                           reauthentication=reauthentication)


def exchange(client: ScramSaslClient, server: ScramSaslServer) -> None:
    token: bytes | None = client.initial_response()
    while token is not None:
        token = client.evaluate_challenge(server.evaluate_response(token))


# RFC 5802 §5 is SCRAM-SHA-1, which Kafka does not offer: a stand-in
# mechanism with SHA-1 drives the same server and client code through it.
SHA1 = SimpleNamespace(mechanism_name="SCRAM-SHA-1", hash_name="sha1", digest_size=20, min_iterations=4096)

RFC5802 = dict(
    mechanism=SHA1, password="pencil", client_nonce="fyko+d2lbbFgONRv9qkxdawL", server_nonce="3rfcNHYJY1ZVvWVs7j",
    salt="QSXCR+Q6sek8bf92", iterations=4096,
    client_first=b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    server_first=b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    client_final=b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    server_final=b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
)
RFC7677 = dict(
    mechanism=SHA256, password="pencil", client_nonce="rOprNGfwEbeRWgbNEkqO",
    server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", salt="W22ZaJ0SNY7soEsUEjb6gQ==", iterations=4096,
    client_first=b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    server_first=b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    client_final=b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                 b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    server_final=b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
)


@pytest.mark.parametrize("v", [RFC5802, RFC7677], ids=["rfc5802-sha1", "rfc7677-sha256"])
def test_the_rfc_example_exchange_byte_for_byte(v: dict[str, Any]) -> None:
    mech = v["mechanism"]
    credential = ScramFormatter(mech).generate_credential(v["password"], v["iterations"],
                                                          base64.b64decode(v["salt"]))
    server = ScramSaslServer(mech, lambda m, u: credential if u == "user" else None,
                             mock_secret=SECRET, nonce_source=lambda: v["server_nonce"])
    client = ScramSaslClient(mech, "user", v["password"], nonce=v["client_nonce"])

    assert client.initial_response() == v["client_first"]
    assert server.evaluate_response(v["client_first"]) == v["server_first"]
    assert client.evaluate_challenge(v["server_first"]) == v["client_final"]
    assert server.evaluate_response(v["client_final"]) == v["server_final"]
    assert client.evaluate_challenge(v["server_final"]) is None
    assert client.complete and server.complete
    assert server.authorization_id == "user"
    assert server.credential_expiration_ms is None and server.session_lifetime_ms is None


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_round_trip_with_awkward_user_names(mech: ScramMechanism) -> None:
    for user in ["alice", "a,b=c", "=2C", "zoë 名前"]:
        server = server_for(mech, {user: "s3cret"})
        client = ScramSaslClient(mech, user, "s3cret")
        exchange(client, server)
        assert server.complete and client.complete
        assert server.authorization_id == user


def test_sasl_name_escaping_round_trips() -> None:
    for user in ["a", "a,b", "a=b", "=2C", "==,,"]:
        assert username_of(sasl_name(user)) == user


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_wrong_password_fails_with_kafkas_generic_message(mech: ScramMechanism) -> None:
    server = server_for(mech, {"alice": "right"})
    client = ScramSaslClient(mech, "alice", "wrong")
    with pytest.raises(SaslAuthenticationError) as e:
        exchange(client, server)
    assert e.value.message == ("Authentication failed during authentication due to invalid credentials "
                               f"with SASL mechanism {mech.mechanism_name}")
    assert "Invalid client credentials" in e.value.reason
    assert not server.complete
    assert "wrong" not in str(e.value) and "right" not in e.value.reason


def test_reauthentication_uses_kafkas_re_authentication_wording() -> None:
    server = server_for(SHA256, {"alice": "right"}, reauthentication=True)
    with pytest.raises(SaslAuthenticationError, match="during re-authentication"):
        exchange(ScramSaslClient(SHA256, "alice", "wrong"), server)


def test_unknown_user_looks_like_a_wrong_password_until_the_proof() -> None:
    """RFC 5802 §9: a salt is made up for a user that does not exist; it is
    stable across attempts, so probing cannot tell."""
    firsts = []
    for _ in range(2):
        server = server_for(SHA256, {"alice": "pw"})
        client = ScramSaslClient(SHA256, "mallory", "pw", nonce="cn")
        server_first = server.evaluate_response(client.initial_response())
        firsts.append(server_first)
        final = client.evaluate_challenge(server_first)
        assert final is not None
        with pytest.raises(SaslAuthenticationError, match="invalid credentials with SASL mechanism SCRAM-SHA-256") as e:
            server.evaluate_response(final)
        assert e.value.reason == "Authentication failed: Invalid user credentials"
    assert firsts[0] == firsts[1]
    assert b",i=4096" in firsts[0]


def test_a_credential_below_4096_iterations_is_refused() -> None:
    f = ScramFormatter(SHA256)
    weak = f.credential_from_salted_password(f.salted_password("pw", b"salt", 1000), b"salt", 1000)
    server = ScramSaslServer(SHA256, lambda m, u: weak, mock_secret=SECRET)
    with pytest.raises(SaslAuthenticationError) as e:
        exchange(ScramSaslClient(SHA256, "alice", "pw"), server)
    assert "less than the minimum 4096" in e.value.reason


def test_a_failing_credential_store_fails_the_exchange_only() -> None:
    def broken(mechanism: str, user: str) -> ScramCredential | None:
        raise OSError("store down")
    server = ScramSaslServer(SHA256, broken, mock_secret=SECRET)
    with pytest.raises(SaslAuthenticationError) as e:
        exchange(ScramSaslClient(SHA256, "alice", "pw"), server)
    assert "Credentials could not be obtained" in e.value.reason


def test_credential_of_the_other_mechanism_does_not_authenticate() -> None:
    cred512 = ScramFormatter(SHA512).generate_credential("pw")
    server = ScramSaslServer(SHA256, lambda m, u: cred512 if m == "SCRAM-SHA-512" else None, mock_secret=SECRET)
    with pytest.raises(SaslAuthenticationError):
        exchange(ScramSaslClient(SHA256, "alice", "pw"), server)


def _client_final(mech: ScramMechanism = SHA256) -> tuple[ScramSaslServer, bytes]:
    server = server_for(mech, {"alice": "pw"})
    client = ScramSaslClient(mech, "alice", "pw", nonce="clientnonce")
    final = client.evaluate_challenge(server.evaluate_response(client.initial_response()))
    assert final is not None
    return server, final


def test_a_tampered_proof_fails() -> None:
    server, final = _client_final()
    head, proof = final.rsplit(b",p=", 1)
    raw = bytearray(base64.b64decode(proof))
    raw[0] ^= 1
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(head + b",p=" + base64.b64encode(bytes(raw)))
    assert e.value.reason == "Invalid client credentials"


def test_a_proof_of_the_wrong_length_fails() -> None:
    server, final = _client_final()
    head, _ = final.rsplit(b",p=", 1)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(head + b",p=" + base64.b64encode(b"x" * 31))


@pytest.mark.parametrize("change", ["drop-server-part", "other-server-part", "other-client-part"])
def test_a_changed_nonce_in_the_final_message_fails(change: str) -> None:
    server, final = _client_final()
    text = final.decode()
    nonce = text.split(",")[1][2:]
    new = {"drop-server-part": "clientnonce",
           "other-server-part": "clientnonce" + "x" * (len(nonce) - len("clientnonce")),
           "other-client-part": "X" + nonce[1:]}[change]
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(text.replace(nonce, new).encode())
    assert "nonce" in e.value.reason


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_librdkafka_before_2_6_1_doubled_client_nonce_is_accepted(mech: ScramMechanism) -> None:
    """librdkafka < 2.6.1 (Debian's kcat) sends r=<client nonce><combined
    nonce> (librdkafka#4895), its proof computed over what it sent; Kafka
    3.8.1+ accepts it, and so does Kavka, in exactly that form."""
    f = ScramFormatter(mech)
    cred = f.generate_credential("pw", 4096)
    server = ScramSaslServer(mech, lambda m, u: cred, mock_secret=SECRET, nonce_source=lambda: "srv")
    server_first = server.evaluate_response(b"n,,n=alice,r=cn").decode()
    combined = server_first.split(",")[0][2:]
    without_proof = f"c=biws,r=cn{combined}"
    auth_message = f"n=alice,r=cn,{server_first},{without_proof}".encode()
    proof = f.client_proof(f.salted_password("pw", cred.salt, cred.iterations), auth_message)
    answer = server.evaluate_response(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert server.complete and answer == b"v=" + base64.b64encode(f.server_signature(cred.server_key, auth_message))
    # a third copy of the client nonce is not that form
    server = ScramSaslServer(mech, lambda m, u: cred, mock_secret=SECRET, nonce_source=lambda: "srv")
    server.evaluate_response(b"n,,n=alice,r=cn")
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(f"c=biws,r=cncn{combined},p={base64.b64encode(proof).decode()}".encode())
    assert "nonce" in e.value.reason


def test_a_final_message_replayed_into_another_exchange_fails() -> None:
    """Each exchange has a fresh server nonce, so a captured final message
    (even with a valid proof) is useless elsewhere."""
    f = ScramFormatter(SHA256)
    cred = f.generate_credential("pw")
    nonces = iter(["first", "second"])
    make = lambda: ScramSaslServer(SHA256, lambda m, u: cred, mock_secret=SECRET, nonce_source=lambda: next(nonces))  # noqa: E731
    client = ScramSaslClient(SHA256, "alice", "pw", nonce="cn")
    first_server = make()
    first = client.initial_response()
    final = client.evaluate_challenge(first_server.evaluate_response(first))
    assert final is not None
    first_server.evaluate_response(final)
    assert first_server.complete
    replay_server = make()
    replay_server.evaluate_response(first)
    with pytest.raises(SaslAuthenticationError):
        replay_server.evaluate_response(final)


def test_channel_binding_must_be_the_gs2_header() -> None:
    server, final = _client_final()
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(final.replace(b"c=biws", b"c=eSws"))  # "y,,"
    assert "Channel binding" in e.value.reason


def test_authzid_must_be_the_user_name() -> None:
    server = server_for(SHA256, {"alice": "pw"})
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(b"n,a=bob,n=alice,r=abc")
    assert e.value.message == "Authentication failed: Client requested an authorization id that is different from username"
    same = server_for(SHA256, {"alice": "pw"})
    assert same.evaluate_response(b"n,a=alice,n=alice,r=abc").startswith(b"r=abc")


def test_tokenauth_is_refused_and_unknown_extensions_ignored() -> None:
    server = server_for(SHA256, {"alice": "pw"})
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(b"n,,n=alice,r=abc,tokenauth=true")
    assert "delegation tokens" in e.value.reason
    client = ScramSaslClient(SHA256, "alice", "pw", extensions={"foo": "bar"})
    server = server_for(SHA256, {"alice": "pw"})
    exchange(client, server)
    assert server.complete


@pytest.mark.parametrize("message", [
    b"", b"n", b"n,,", b"p=tls-unique,,n=alice,r=abc", b"x,,n=alice,r=abc", b"n,,m=ext,n=alice,r=abc",
    b"n,,n=,r=abc", b"n,,n=al=ice,r=abc", b"n,,n=alice,r=", b"n,,n=alice,r=a b", b"n,,r=abc,n=alice",
    b"n,,n=alice,r=abc,1=2", b"n,,n=alice,r=abc,x", b"n,,n=\xff,r=abc", b"n,,n=al\x00ice,r=abc",
    b"n,,n=alice,r=" + b"a" * 5000, b"n,b=x,n=alice,r=abc",
])
def test_malformed_client_first_fails_cleanly(message: bytes) -> None:
    server = server_for(SHA256, {"alice": "pw"})
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(message)
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(b"n,,n=alice,r=abc")


@pytest.mark.parametrize("message", [
    b"", b"c=biws", b"c=biws,r=abcsrvnonce", b"c=bi*s,r=abcsrvnonce,p=AAAA", b"c=biws,r=abcsrvnonce,p=A",
    b"r=abcsrvnonce,c=biws,p=AAAA", b"c=biws,p=AAAA", b"c=biws,r=abcsrvnonce,x,p=AAAA",
])
def test_malformed_client_final_fails_cleanly(message: bytes) -> None:
    server = server_for(SHA256, {"alice": "pw"})
    server.evaluate_response(b"n,,n=alice,r=abc")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(message)


def test_a_token_after_completion_is_an_illegal_state() -> None:
    server = server_for(SHA256, {"alice": "pw"})
    exchange(ScramSaslClient(SHA256, "alice", "pw"), server)
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(b"c=biws")


# the client's checks of a hostile or broken server

def _client_after_first(server_first: bytes) -> ScramSaslClient:
    client = ScramSaslClient(SHA256, "alice", "pw", nonce="cn")
    client.initial_response()
    return client


@pytest.mark.parametrize("server_first, match", [
    (b"r=other,s=c2FsdA==,i=4096", "does not start with client nonce"),
    (b"r=cn,s=c2FsdA==,i=4096", "does not start with client nonce"),
    (b"r=cnX,s=c2FsdA==,i=4095", "less than the minimum 4096"),
    (b"r=cnX,s=c2FsdA==,i=99999999", "more than the maximum"),
    (b"r=cnX,s=,i=4096", "salt"),
    (b"r=cnX,s=c2FsdA==,i=-1", "iterations"),
    (b"e=other-error", "Invalid SCRAM server message"),
])
def test_the_client_refuses_a_bad_server_first(server_first: bytes, match: str) -> None:
    with pytest.raises(SaslAuthenticationError, match=match):
        _client_after_first(server_first).evaluate_challenge(server_first)


def test_the_client_refuses_a_forged_server_signature_and_reports_server_errors() -> None:
    server = server_for(SHA256, {"alice": "pw"})
    client = ScramSaslClient(SHA256, "alice", "pw")
    final = client.evaluate_challenge(server.evaluate_response(client.initial_response()))
    assert final is not None
    real = server.evaluate_response(final)
    forged = b"v=" + base64.b64encode(bytes(32))
    assert forged != real
    with pytest.raises(SaslAuthenticationError, match="Invalid server signature in server final message"):
        client.evaluate_challenge(forged)

    server = server_for(SHA256, {"alice": "pw"})
    client = ScramSaslClient(SHA256, "alice", "pw")
    client.evaluate_challenge(server.evaluate_response(client.initial_response()))
    with pytest.raises(SaslAuthenticationError,
                       match="Sasl authentication using SCRAM-SHA-256 failed with error: invalid-proof"):
        client.evaluate_challenge(b"e=invalid-proof")


def test_a_server_without_the_credential_cannot_pass_as_one() -> None:
    """A server that answers with someone else's credential (same salt and
    iterations, wrong keys) is caught by the server signature."""
    f = ScramFormatter(SHA256)
    real = f.generate_credential("pw", salt=b"salt")
    impostor = ScramCredential(real.salt, real.stored_key, bytes(32), real.iterations)
    server = ScramSaslServer(SHA256, lambda m, u: impostor, mock_secret=SECRET)
    with pytest.raises(SaslAuthenticationError, match="Invalid server signature"):
        exchange(ScramSaslClient(SHA256, "alice", "pw"), server)


def test_client_first_message_format() -> None:
    assert ClientFirstMessage.format("a,b", "n1", {"tokenauth": "true"}) == "n,,n=a=2Cb,r=n1,tokenauth=true"
    parsed = ClientFirstMessage.parse(b"n,,n=a=2Cb,r=n1,tokenauth=true")
    assert (parsed.username, parsed.nonce, dict(parsed.extensions)) == ("a,b", "n1", {"tokenauth": "true"})
    assert parsed.bare == "n=a=2Cb,r=n1,tokenauth=true"


def test_a_non_canonical_base64_proof_is_refused() -> None:
    """Base64 with stray bits in the last character decodes to the same
    bytes; only the canonical form is accepted (one encoding per proof)."""
    server, final = _client_final()
    head, proof = final.rsplit(b",p=", 1)
    assert proof.endswith(b"=")
    last = proof[-2:-1]
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    twin = alphabet[alphabet.index(last) ^ 1:][:1]  # differs only in a bit the decoder drops
    sloppy = proof[:-2] + twin + b"="
    assert base64.b64decode(sloppy) == base64.b64decode(proof) and sloppy != proof
    with pytest.raises(SaslAuthenticationError) as e:
        server.evaluate_response(head + b",p=" + sloppy)
    assert "canonical" in e.value.reason


def test_no_authorization_id_before_completion() -> None:
    server = server_for(SHA256, {"alice": "pw"})
    server.evaluate_response(b"n,,n=alice,r=abc")
    assert server.authorization_id == "" and not server.complete
