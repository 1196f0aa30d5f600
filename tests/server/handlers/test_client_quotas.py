"""DescribeClientQuotas and AlterClientQuotas at every version, through the
codec, over the in-memory ZooKeeper: what is written where, KIP-546's
filters (exact, default, any; strict or not), Kafka's errors with their
messages, validate_only, and the cluster permission checks."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.authorization import AuthHelper
from kavka.server.client_quota_admin import ClientQuotaAdmin
from kavka.server.handlers.alter_client_quotas import AlterClientQuotasHandler
from kavka.server.handlers.describe_client_quotas import DescribeClientQuotasHandler
from kavka.server.network import RequestContext
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

EXACT, DEFAULT, ANY = 0, 1, 2
QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"]
ALICE = KafkaPrincipal("User", "alice")


def ctx(api_key: int, version: int, principal: KafkaPrincipal = ALICE) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 7, "test"), "c1", "10.0.0.1", 40000, "PLAINTEXT", 0,
                          session=Session(principal=principal, client_host="10.0.0.1"))


async def setup(authorizer=None):
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    zk = KavkaZkClient(store)
    admin = ClientQuotaAdmin(zk)
    auth = AuthHelper(authorizer)
    return zk, AlterClientQuotasHandler(admin, auth), DescribeClientQuotasHandler(admin, auth)


def entry(entity: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]]):
    E = AlterClientQuotasRequest.Entries
    return E(entity=[E.Entity(entity_type=t, entity_name=n) for t, n in entity],
             ops=[E.Ops(key=k, value=v, remove=r) for k, v, r in ops])


async def alter(handler, entries, version=1, validate_only=False):
    response = await handler(ctx(49, version), AlterClientQuotasRequest(entries=entries, validate_only=validate_only))
    response = decode_response(49, version, encode_response(49, version, 7, response))[1]
    return [(e.error_code, e.error_message) for e in response.entries]


async def describe(handler, components, strict=False, version=1):
    C = DescribeClientQuotasRequest.Components
    request = DescribeClientQuotasRequest(components=[C(entity_type=t, match_type=m, match=n) for t, m, n in components],
                                          strict=strict)
    response = await handler(ctx(48, version), request)
    response = decode_response(48, version, encode_response(48, version, 7, response))[1]
    if response.error_code:
        return response.error_code, response.error_message
    return sorted([(tuple((e.entity_type, e.entity_name) for e in x.entity), {v.key: v.value for v in x.values})
                   for x in response.entries], key=lambda item: repr((item[0], {})))


@pytest.mark.parametrize("version", [0, 1])
async def test_alter_writes_kafkas_znodes_and_notifies(version):
    zk, alter_h, describe_h = await setup()
    await zk.set_entity_config("users", "alice", {"SCRAM-SHA-512": "kept"})
    assert await alter(alter_h, [
        entry([("user", "alice")], [("producer_byte_rate", 1024.0, False), ("request_percentage", 50.5, False)]),
        entry([("user", "CN=bob"), ("client-id", None)], [("consumer_byte_rate", 2e6, False)]),
        entry([("client-id", None)], [("controller_mutation_rate", 10.0, False)]),
    ], version) == [(0, None)] * 3
    data, _ = await zk.store.get("/config/users/alice")
    assert json.loads(data) == {"version": 1, "config": {
        "SCRAM-SHA-512": "kept", "producer_byte_rate": "1024", "request_percentage": "50.5"}}
    assert await zk.get_entity_config("users", "CN%3Dbob/clients/<default>") == {"consumer_byte_rate": "2000000"}
    assert await zk.get_entity_config("clients", "<default>") == {"controller_mutation_rate": "10.0"}
    changes = sorted(await zk.store.get_children("/config/changes"))
    paths = [json.loads((await zk.store.get(f"/config/changes/{c}"))[0])["entity_path"] for c in changes]
    assert paths[1:] == ["users/alice", "users/CN%3Dbob/clients/<default>", "clients/<default>"]

    assert await alter(alter_h, [entry([("user", "alice")], [("producer_byte_rate", 0, True),
                                                              ("request_percentage", 0, True)])]) == [(0, None)]
    assert await zk.get_entity_config("users", "alice") == {"SCRAM-SHA-512": "kept"}
    assert await describe(describe_h, [("user", EXACT, "alice")]) == []  # no quota left: not listed


@pytest.mark.parametrize("entity, ops, message", [
    ([("user", "a")], [("producer_byte_rate", -1.0, False)], "Configuration producer_byte_rate must not be negative"),
    ([("user", "a")], [("producer_byte_rate", 1.5, False)], "Configuration producer_byte_rate must be a LONG value"),
    ([("user", "a")], [("request_percentage", float("inf"), False)], "must be a finite number"),
    ([("user", "a")], [("fetch_byte_rate", 1.0, False)], "Invalid configuration key fetch_byte_rate"),
    ([("user", "a")], [("SCRAM-SHA-256", 1.0, False)], "AlterUserScramCredentials"),
    ([("user", "a")], [("request_percentage", 1.0, False), ("request_percentage", 2.0, True)], "altered twice"),
    ([], [("request_percentage", 1.0, False)], "Invalid empty client quota entity"),
    ([("user", "")], [("request_percentage", 1.0, False)], "Empty user not supported"),
    ([("user", "a"), ("user", "b")], [("request_percentage", 1.0, False)], "Duplicate user"),
    ([("user", ".")], [("request_percentage", 1.0, False)], "cannot be kept in ZooKeeper"),
    ([("ip", "1.2.3.4"), ("user", "a")], [("connection_creation_rate", 1.0, False)], "IP entity should not be used"),
    ([("ip", "example.com")], [("connection_creation_rate", 1.0, False)], "example.com is not a valid IP address"),
    ([("ip", "1.2.3.4")], [("connection_creation_rate", 1.5, False)], "connection_creation_rate must be a Int value"),
    ([("ip", "1.2.3.4")], [("connection_creation_rate", 2.0**31, False)], "must be between 0 and 2147483647"),
    ([("ip", "1.2.3.4")], [("producer_byte_rate", 1.0, False)], "an ip entity takes connection_creation_rate only"),
    ([("group", "g")], [("request_percentage", 1.0, False)], "Unhandled client quota entity type: group"),
])
async def test_bad_entities_and_ops_write_nothing(entity, ops, message):
    zk, alter_h, _ = await setup()
    good = entry([("client-id", "fine")], [("producer_byte_rate", 10.0, False)])
    [(code, text), ok] = await alter(alter_h, [entry(entity, [*ops, ("consumer_byte_rate", 5.0, False)]), good])
    assert code == ErrorCode.INVALID_REQUEST and message in text
    assert ok == (0, None)  # the other entity is answered on its own
    assert await zk.get_entity_names("users") == []


async def test_ip_connection_rates_are_written_to_config_ips_and_described():
    """KIP-612: an address's or the default's connection_creation_rate, in
    /config/ips with a change notification; described alone, by ip filter,
    or among everything by a filter that is not strict."""
    zk, alter_h, describe_h = await setup()
    assert await alter(alter_h, [
        entry([("ip", "127.0.0.1")], [("connection_creation_rate", 5.0, False)]),
        entry([("ip", None)], [("connection_creation_rate", 100.0, False)]),
        entry([("user", "alice")], [("producer_byte_rate", 10.0, False)]),
    ]) == [(0, None)] * 3
    assert await zk.get_entity_config("ips", "127.0.0.1") == {"connection_creation_rate": "5"}
    assert await zk.get_entity_config("ips", "<default>") == {"connection_creation_rate": "100"}
    changes = sorted(await zk.store.get_children("/config/changes"))
    paths = [json.loads((await zk.store.get(f"/config/changes/{c}"))[0])["entity_path"] for c in changes]
    assert "ips/127.0.0.1" in paths and "ips/<default>" in paths
    ip_rate = {"connection_creation_rate": 5.0}
    assert await describe(describe_h, [("ip", EXACT, "127.0.0.1")]) == [((("ip", "127.0.0.1"),), ip_rate)]
    assert await describe(describe_h, [("ip", DEFAULT, None)]) == [
        ((("ip", None),), {"connection_creation_rate": 100.0})]
    assert len(await describe(describe_h, [("ip", ANY, None)])) == 2
    assert len(await describe(describe_h, [])) == 3  # users and ips together
    assert len(await describe(describe_h, [], strict=True)) == 0
    assert await describe(describe_h, [("user", ANY, None)]) == [((("user", "alice"),), {"producer_byte_rate": 10.0})]
    code, message = await describe(describe_h, [("ip", ANY, None), ("user", ANY, None)])
    assert code == ErrorCode.INVALID_REQUEST and "IP filter component should not be used" in message
    assert await alter(alter_h, [entry([("ip", "127.0.0.1")], [("connection_creation_rate", 0, True)])]) == [(0, None)]
    assert await describe(describe_h, [("ip", EXACT, "127.0.0.1")]) == []


async def test_validate_only_writes_nothing():
    zk, alter_h, _ = await setup()
    assert await alter(alter_h, [entry([("user", "a")], [("producer_byte_rate", 10.0, False)])],
                       validate_only=True) == [(0, None)]
    assert await zk.get_entity_names("users") == []
    assert await zk.store.exists("/config/changes/config_change_0000000000") is None


async def quota_world():
    zk, alter_h, describe_h = await setup()
    entities = [[("user", "alice")], [("user", "alice"), ("client-id", "app")], [("user", None)],
                [("client-id", "app")], [("client-id", None)], [("user", None), ("client-id", None)]]
    assert await alter(alter_h, [entry(e, [("request_percentage", float(i), False)])
                                 for i, e in enumerate(entities)]) == [(0, None)] * len(entities)
    await zk.set_entity_config("users", "bob", {"SCRAM-SHA-256": "x"})  # no quota: never listed
    return describe_h


U_ALICE = (("user", "alice"),)
U_ALICE_APP = (("user", "alice"), ("client-id", "app"))
U_DEF = (("user", None),)
C_APP = (("client-id", "app"),)
C_DEF = (("client-id", None),)
U_DEF_C_DEF = (("user", None), ("client-id", None))


@pytest.mark.parametrize("components, strict, expected", [
    ([], False, [U_ALICE, U_ALICE_APP, U_DEF, U_DEF_C_DEF, C_APP, C_DEF]),
    ([], True, []),
    ([("user", ANY, None)], True, [U_ALICE, U_DEF]),
    ([("user", ANY, None)], False, [U_ALICE, U_ALICE_APP, U_DEF, U_DEF_C_DEF]),
    ([("user", EXACT, "alice")], True, [U_ALICE]),
    ([("user", EXACT, "alice")], False, [U_ALICE, U_ALICE_APP]),
    ([("user", DEFAULT, None)], True, [U_DEF]),
    ([("user", DEFAULT, None), ("client-id", DEFAULT, None)], True, [U_DEF_C_DEF]),
    ([("client-id", EXACT, "app")], True, [C_APP]),
    ([("client-id", EXACT, "app")], False, [U_ALICE_APP, C_APP]),
    ([("user", EXACT, "alice"), ("client-id", EXACT, "app")], True, [U_ALICE_APP]),
    ([("client-id", ANY, None)], True, [C_APP, C_DEF]),
    ([("user", EXACT, "nobody")], False, []),
    ([("user", EXACT, "..")], True, []),  # no entity can have that name
])
async def test_describe_filters(components, strict, expected):
    describe_h = await quota_world()
    got = await describe(describe_h, components, strict)
    assert [e for e, _ in got] == sorted(expected, key=lambda e: repr((e, {})))
    assert all(set(values) == {"request_percentage"} for _, values in got)


@pytest.mark.parametrize("components, code, message", [
    ([("user", ANY, None), ("user", EXACT, "a")], ErrorCode.INVALID_REQUEST, "Duplicate user filter component"),
    ([("group", ANY, None)], ErrorCode.UNSUPPORTED_VERSION, "Custom entity type 'group' not supported"),
    ([("", ANY, None)], ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type"),
    ([("user", 7, None)], ErrorCode.INVALID_REQUEST, "Unexpected match type: 7"),
    ([("user", EXACT, None)], ErrorCode.INVALID_REQUEST, "needs a name"),
])
async def test_bad_filters(components, code, message):
    describe_h = await quota_world()
    got_code, got_message = await describe(describe_h, components, version=0)
    assert got_code == code and message in got_message


async def test_cluster_permissions():
    authorizer = AclAuthorizer(super_users=())
    zk, alter_h, describe_h = await setup(authorizer)
    [(code, message)] = await alter(alter_h, [entry([("user", "a")], [("producer_byte_rate", 1.0, False)])])
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and "User:alice may not ALTER_CONFIGS" in message
    assert await zk.get_entity_names("users") == []
    code, message = await describe(describe_h, [])
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and "DESCRIBE_CONFIGS" in message
    admin = AclAuthorizer(super_users={ALICE})
    _, alter_h, describe_h = await setup(admin)
    assert await alter(alter_h, [entry([("user", "a")], [("producer_byte_rate", 1.0, False)])]) == [(0, None)]
    assert await describe(describe_h, []) == [((("user", "a"),), {"producer_byte_rate": 1.0})]


_names = st.one_of(st.none(), st.sampled_from(["", ".", "..", "<default>", "alice", "a/b"]), st.text(max_size=12))
_types = st.one_of(st.sampled_from(["user", "client-id", "ip", ""]), st.text(max_size=8))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_types, st.integers(-3, 5), _names), max_size=4), st.booleans(),
       st.lists(st.tuples(st.lists(st.tuples(_types, _names), max_size=3),
                          st.lists(st.tuples(st.sampled_from([*QUOTA_KEYS, "SCRAM-SHA-256", "x"]),
                                             st.floats(allow_nan=True, allow_infinity=True), st.booleans()),
                                   max_size=3)), max_size=3))
def test_hostile_requests_are_answered(components, strict, entries):
    """Whatever the filters and entities, each request gets an answer that
    encodes; nothing raises into the connection."""
    async def main():
        _, alter_h, describe_h = await setup()
        await alter(alter_h, [entry(e, ops) for e, ops in entries])
        await describe(describe_h, components, strict)
    asyncio.run(main())
