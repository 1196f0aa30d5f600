"""DescribeUserScramCredentials and AlterUserScramCredentials through the
codec over the in-memory ZooKeeper: Kafka's stored form (a password made
into a credential by the client's salted password logs in), Kafka's
per-user errors, quotas kept beside credentials, and no secret in an
answer or a log line."""

from __future__ import annotations

import asyncio
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.common.sanitizer import sanitize
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.security.sasl.credentials import ScramCredential, ScramFormatter, ScramMechanism
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.alter_user_scram_credentials import AlterUserScramCredentialsHandler
from kavka.server.handlers.describe_user_scram_credentials import DescribeUserScramCredentialsHandler
from kavka.server.network import RequestContext
from kavka.server.scram_admin import ScramCredentialAdmin
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
A = AlterUserScramCredentialsRequest
SALT = b"a-salt-of-the-client"


def ctx(api_key: int) -> RequestContext:
    return RequestContext(RequestHeader(api_key, 0, 7, "test"), "c1", "10.0.0.1", 40000, "PLAINTEXT", 0,
                          session=Session(principal=KafkaPrincipal("User", "admin")))


async def setup(authorizer=None):
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    zk = KavkaZkClient(store)
    admin = ScramCredentialAdmin(zk)
    auth = AuthHelper(authorizer)
    return zk, AlterUserScramCredentialsHandler(admin, auth), DescribeUserScramCredentialsHandler(admin, auth)


def upsert(user: str, password: str = "secret", mechanism: ScramMechanism = SHA512, iterations: int = 8192,
           salted: bytes | None = None, type_id: int | None = None):
    if salted is None:
        salted = ScramFormatter(mechanism).salted_password(password, SALT, max(iterations, 1))
    return A.Upsertions(name=user, mechanism=mechanism.type_id if type_id is None else type_id,
                        iterations=iterations, salt=SALT, salted_password=salted)


def delete(user: str, mechanism: ScramMechanism = SHA512, type_id: int | None = None):
    return A.Deletions(name=user, mechanism=mechanism.type_id if type_id is None else type_id)


async def alter(handler, upsertions=(), deletions=()):
    response = await handler(ctx(51), A(upsertions=list(upsertions), deletions=list(deletions)))
    response = decode_response(51, 0, encode_response(51, 0, 7, response))[1]
    return {r.user: (r.error_code, r.error_message) for r in response.results}


async def describe(handler, users):
    request = DescribeUserScramCredentialsRequest(
        users=None if users is None else [DescribeUserScramCredentialsRequest.Users(name=u) for u in users])
    frame = encode_response(50, 0, 7, await handler(ctx(50), request))
    response = decode_response(50, 0, frame)[1]
    return frame, response


async def test_upsert_describe_delete():
    zk, alter_h, describe_h = await setup()
    await zk.set_entity_config("users", sanitize("CN=alice"), {"producer_byte_rate": "1024"})
    assert await alter(alter_h, [upsert("CN=alice"), upsert("CN=alice", "other", SHA256, 4096), upsert("bob")]) == {
        "CN=alice": (0, None), "bob": (0, None)}
    stored = await zk.get_entity_config("users", "CN%3Dalice")
    assert stored["producer_byte_rate"] == "1024"  # the quota is kept
    credential = ScramCredential.parse(stored["SCRAM-SHA-512"], SHA512)
    assert credential == ScramFormatter(SHA512).generate_credential("secret", 8192, SALT)  # the password logs in
    assert credential.iterations == 8192

    frame, response = await describe(describe_h, None)
    assert [(r.user, r.error_code, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in response.results] == [("CN=alice", 0, [(1, 4096), (2, 8192)]), ("bob", 0, [(2, 8192)])]
    assert credential.stored_key not in frame and credential.server_key not in frame and SALT not in frame

    assert await alter(alter_h, deletions=[delete("CN=alice", SHA256)], upsertions=[upsert("CN=alice", "new")]) == {
        "CN=alice": (0, None)}
    _, response = await describe(describe_h, ["CN=alice"])
    assert [(c.mechanism, c.iterations) for c in response.results[0].credential_infos] == [(2, 8192)]
    assert await alter(alter_h, deletions=[delete("CN=alice")]) == {"CN=alice": (0, None)}
    assert await zk.get_entity_config("users", "CN%3Dalice") == {"producer_byte_rate": "1024"}


async def test_describe_errors():
    zk, _, describe_h = await setup()
    await zk.set_entity_config("users", "quota-only", {"producer_byte_rate": "1"})
    _, response = await describe(describe_h, ["quota-only", "nobody", "twice", "twice", "", ".."])
    got = {r.user: (r.error_code, r.error_message) for r in response.results}
    assert got == {
        "quota-only": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: quota-only"),
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: nobody"),
        "twice": (ErrorCode.DUPLICATE_RESOURCE,
                  "Cannot describe SCRAM credentials for the same user twice in a single request: twice"),
        "": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: "),
        "..": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: .."),
    }
    _, response = await describe(describe_h, [])
    assert response.results == []  # users with quotas only are not listed


async def test_alter_errors_per_user():
    zk, alter_h, _ = await setup()
    got = await alter(alter_h, upsertions=[
        upsert("few", iterations=4095), upsert("many", iterations=16385), upsert("mech", type_id=0),
        upsert("", iterations=4096), upsert("dup"), upsert("dup", "x"), upsert("short", salted=b"x" * 32),
        upsert("ok"), upsert("."),
    ], deletions=[delete("missing"), delete("ok", SHA256), delete("unknown-mech", type_id=9), delete("..")])
    assert got == {
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "mech": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "dup": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "short": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "A SCRAM-SHA-512 salted password has 64 bytes"),
        "missing": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        # deleting a credential it does not have fails the user's whole change
        "ok": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "unknown-mech": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ".": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "User '.' cannot be kept in ZooKeeper (a znode cannot be named . or ..)"),
        "..": (ErrorCode.UNACCEPTABLE_CREDENTIAL,
               "User '..' cannot be kept in ZooKeeper (a znode cannot be named . or ..)"),
    }
    assert await zk.get_entity_names("users") == []


async def test_salted_passwords_never_logged(caplog):
    _, alter_h, _ = await setup()
    salted = ScramFormatter(SHA512).salted_password("secret", SALT, 4096)
    with caplog.at_level(logging.DEBUG):
        assert await alter(alter_h, [upsert("alice", salted=salted, iterations=4096)]) == {"alice": (0, None)}
    assert "SCRAM credentials of user 'alice' altered: SCRAM-SHA-512 set" in caplog.text
    assert salted.hex() not in caplog.text and repr(salted) not in caplog.text and "secret" not in caplog.text


async def test_cluster_permissions():
    zk, alter_h, describe_h = await setup(AclAuthorizer(super_users=()))
    got = await alter(alter_h, [upsert("alice")], [delete("bob")])
    assert {u: c for u, (c, _) in got.items()} == {"alice": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                    "bob": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    assert await zk.get_entity_names("users") == []
    _, response = await describe(describe_h, None)
    assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=10), st.integers(-1, 3), st.integers(-5, 20000), st.binary(max_size=70),
                          st.binary(max_size=70)), max_size=4),
       st.lists(st.tuples(st.text(max_size=10), st.integers(-1, 3)), max_size=3),
       st.one_of(st.none(), st.lists(st.text(max_size=10), max_size=4)))
def test_hostile_requests_are_answered(upsertions, deletions, users):
    """Whatever the names, mechanisms, iterations, salts and salted
    passwords, each user is answered and nothing raises into the connection."""
    async def main():
        _, alter_h, describe_h = await setup()
        got = await alter(alter_h, [A.Upsertions(name=n, mechanism=m, iterations=i, salt=s, salted_password=p)
                                    for n, m, i, s, p in upsertions],
                          [A.Deletions(name=n, mechanism=m) for n, m in deletions])
        assert set(got) == {n for n, *_ in upsertions} | {n for n, _ in deletions}
        await describe(describe_h, users)
    asyncio.run(main())
