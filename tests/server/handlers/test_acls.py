"""DescribeAcls, CreateAcls and DeleteAcls at every version they serve,
through the codec (each response encodes at the request's version), over an
AclManager on the in-memory ZooKeeper: SECURITY_DISABLED without an
authorizer, CLUSTER_AUTHORIZATION_FAILED without DESCRIBE/ALTER on the
cluster, invalid bindings and UNKNOWN filter values answered by name."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from kavka.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.acl_manager import AclManager
from kavka.server.handlers import create_acls, describe_acls
from kavka.server.handlers.create_acls import CreateAclsHandler
from kavka.server.handlers.delete_acls import DeleteAclsHandler
from kavka.server.handlers.describe_acls import DescribeAclsHandler
from kavka.server.network import RequestContext
from kavka.zk.acl_store import ZkAclStore
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

ADMIN = KafkaPrincipal("User", "admin")
ALICE = KafkaPrincipal("User", "alice")
LIT, PRE, MATCH, ANY = (int(PatternType.LITERAL), int(PatternType.PREFIXED), int(PatternType.MATCH),
                        int(PatternType.ANY))
TOPIC, GROUP, CLUSTER = int(ResourceType.TOPIC), int(ResourceType.GROUP), int(ResourceType.CLUSTER)
READ, WRITE, ALTER, DESCRIBE = (int(AclOperation.READ), int(AclOperation.WRITE), int(AclOperation.ALTER),
                                int(AclOperation.DESCRIBE))
ALLOW, DENY = int(AclPermissionType.ALLOW), int(AclPermissionType.DENY)


def ctx(api_key: int, version: int, principal: KafkaPrincipal = ADMIN) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 7, "test"), "c1", "10.0.0.1", 40000, "PLAINTEXT", 0,
                          session=Session(principal=principal, client_host="10.0.0.1"))


def round_trip(api_key: int, version: int, response):
    return decode_response(api_key, version, encode_response(api_key, version, 7, response))[1]


async def handlers(authorized: bool = True):
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    authorizer = AclAuthorizer(super_users={ADMIN} if authorized else ())
    manager = AclManager(ZkAclStore(store), authorizer)
    await manager.start()
    return (DescribeAclsHandler(authorizer), CreateAclsHandler(authorizer, manager),
            DeleteAclsHandler(authorizer, manager), manager)


def creation(name: str, pattern_type: int = LIT, principal: str = "User:alice", op: int = READ,
             rtype: int = TOPIC, perm: int = ALLOW, host: str = "*", version: int = 3):
    c = CreateAclsRequest.Creations(resource_type=rtype, resource_name=name, principal=principal, host=host,
                                    operation=op, permission_type=perm)
    if version >= 1:
        c.resource_pattern_type = pattern_type
    return c


def describe_request(version: int, rtype: int = 1, name: str | None = None, pattern_type: int = ANY, **kw):
    r = DescribeAclsRequest(resource_type_filter=rtype, resource_name_filter=name, principal_filter=kw.get("principal"),
                            host_filter=None, operation=kw.get("op", int(AclOperation.ANY)),
                            permission_type=int(AclPermissionType.ANY))
    if version >= 1:
        r.pattern_type_filter = pattern_type
    return r


def delete_filter(version: int, rtype: int = 1, name: str | None = None, pattern_type: int = ANY, **kw):
    f = DeleteAclsRequest.Filters(resource_type_filter=rtype, resource_name_filter=name,
                                  principal_filter=kw.get("principal"), host_filter=None,
                                  operation=kw.get("op", int(AclOperation.ANY)),
                                  permission_type=int(AclPermissionType.ANY))
    if version >= 1:
        f.pattern_type_filter = pattern_type
    return f


@pytest.mark.parametrize("version", range(create_acls.MIN_VERSION, create_acls.MAX_VERSION + 1))
async def test_create_describe_delete_at_every_version(version) -> None:
    describe, create, delete, _ = await handlers()
    prefixed = version >= 1
    creations = [creation("orders", version=version), creation("g", rtype=GROUP, version=version),
                 *([creation("pay-", PRE, op=WRITE, version=version)] if prefixed else [])]
    created = round_trip(30, version, await create(ctx(30, version), CreateAclsRequest(creations=creations)))
    assert [r.error_code for r in created.results] == [0] * len(creations)

    got = round_trip(29, version, await describe(ctx(29, version), describe_request(
        version, pattern_type=ANY if prefixed else LIT)))
    assert got.error_code == 0
    listed = {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
              for r in got.resources for a in r.acls}
    expected = {(TOPIC, "orders", LIT, "User:alice", "*", READ, ALLOW), (GROUP, "g", LIT, "User:alice", "*", READ, ALLOW)}
    if prefixed:
        expected.add((TOPIC, "pay-", PRE, "User:alice", "*", WRITE, ALLOW))
        match = round_trip(29, version, await describe(ctx(29, version), describe_request(
            version, TOPIC, "pay-in", MATCH)))
        assert [(r.resource_name, r.pattern_type) for r in match.resources] == [("pay-", PRE)]
    assert listed == expected

    deleted = round_trip(31, version, await delete(ctx(31, version), DeleteAclsRequest(filters=[
        delete_filter(version, TOPIC, None, LIT), delete_filter(version, GROUP, "nothing", LIT)])))
    assert [f.error_code for f in deleted.filter_results] == [0, 0]
    assert [(m.resource_name, m.principal, m.operation, m.error_code) for m in deleted.filter_results[0].matching_acls] \
        == [("orders", "User:alice", READ, 0)]
    assert deleted.filter_results[1].matching_acls == []


@pytest.mark.parametrize("version", range(describe_acls.MIN_VERSION, describe_acls.MAX_VERSION + 1))
async def test_without_an_authorizer_everything_is_security_disabled(version) -> None:
    d = round_trip(29, version, await DescribeAclsHandler(None)(ctx(29, version), describe_request(version)))
    assert d.error_code == int(ErrorCode.SECURITY_DISABLED) and "No Authorizer" in d.error_message
    c = round_trip(30, version, await CreateAclsHandler(None, None)(
        ctx(30, version), CreateAclsRequest(creations=[creation("t", version=version)] * 2)))
    assert [r.error_code for r in c.results] == [int(ErrorCode.SECURITY_DISABLED)] * 2
    r = round_trip(31, version, await DeleteAclsHandler(None, None)(
        ctx(31, version), DeleteAclsRequest(filters=[delete_filter(version)])))
    assert [f.error_code for f in r.filter_results] == [int(ErrorCode.SECURITY_DISABLED)]


async def test_describe_needs_describe_and_changes_need_alter_on_the_cluster() -> None:
    describe, create, delete, manager = await handlers(authorized=False)
    d = await describe(ctx(29, 3, ALICE), describe_request(3))
    assert d.error_code == int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED) and "DESCRIBE the cluster" in d.error_message
    c = await create(ctx(30, 3, ALICE), CreateAclsRequest(creations=[creation("t")]))
    assert c.results[0].error_code == int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    r = await delete(ctx(31, 3, ALICE), DeleteAclsRequest(filters=[delete_filter(3)]))
    assert r.filter_results[0].error_code == int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    # ALTER on the cluster grants DESCRIBE too (an implied operation), and both changes.
    await manager.create_acls([AclBinding(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME),
                                          AccessControlEntry("User:alice", "*", AclOperation.ALTER,
                                                             AclPermissionType.ALLOW))])
    assert (await describe(ctx(29, 3, ALICE), describe_request(3))).error_code == 0
    assert (await create(ctx(30, 3, ALICE), CreateAclsRequest(creations=[creation("t")]))).results[0].error_code == 0


async def test_invalid_creations_and_filters_are_answered_by_name() -> None:
    describe, create, delete, _ = await handlers()
    c = await create(ctx(30, 3), CreateAclsRequest(creations=[
        creation("t", rtype=99), creation("t", pattern_type=MATCH), creation("t", principal="nobody"),
        creation("*", pattern_type=PRE), creation("x", rtype=CLUSTER, op=ALTER), creation("t")]))
    assert [r.error_code for r in c.results] == [int(ErrorCode.INVALID_REQUEST)] * 5 + [0]
    assert "UNKNOWN" in c.results[0].error_message and "kafka-cluster" in c.results[4].error_message
    d = await describe(ctx(29, 3), describe_request(3, pattern_type=42))
    assert d.error_code == int(ErrorCode.INVALID_REQUEST) and "pattern type is UNKNOWN" in d.error_message
    r = await delete(ctx(31, 3), DeleteAclsRequest(filters=[delete_filter(3, op=0), delete_filter(3)]))
    assert r.filter_results[0].error_code == int(ErrorCode.INVALID_REQUEST)
    assert [m.resource_name for m in r.filter_results[1].matching_acls] == ["t"]
