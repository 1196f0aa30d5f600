"""The ACL znodes as Kafka's AclAuthorizer writes and reads them: paths
(``/kafka-acl/<Type>/<name>``, ``/kafka-acl-extended/prefixed/...``), the
``{"version":1,"acls":[...]}`` document with Kafka's Pascal names, the two
change-notification formats; round trips (hypothesis) and hostile data
refused with a message naming the znode and the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.security.acl import (
    CONCRETE_RESOURCE_TYPES,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.zk.acls import (
    ACL_PERSISTENT_PATHS,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    ResourceAclsZNode,
    change_znode,
    check_resource_name,
)
from kavka.zk.codec import ZnodeDataError, ZnodePathError

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
TOPIC = ResourceType.TOPIC


def test_paths_are_kafkas() -> None:
    assert ResourceAclsZNode.path(ResourcePattern(TOPIC, "orders")) == "/kafka-acl/Topic/orders"
    assert ResourceAclsZNode.path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PRE)) == \
        "/kafka-acl-extended/prefixed/TransactionalId/tx"
    assert ResourceAclsZNode.path(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")) == \
        "/kafka-acl/Cluster/kafka-cluster"
    assert ResourceAclsZNode.path(ResourcePattern(ResourceType.DELEGATION_TOKEN, "t")) == "/kafka-acl/DelegationToken/t"
    assert set(ACL_PERSISTENT_PATHS) >= {"/kafka-acl/Topic", "/kafka-acl/Group", "/kafka-acl/User",
                                        "/kafka-acl-extended/prefixed/Topic", "/kafka-acl-changes",
                                        "/kafka-acl-extended-changes"}


def test_acls_document_is_kafkas() -> None:
    node = ResourceAclsZNode(ResourcePattern(TOPIC, "t"), frozenset({
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AccessControlEntry("User:bob", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.DENY)}))
    assert json.loads(node.encode()) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:bob", "permissionType": "Deny", "operation": "IdempotentWrite", "host": "10.0.0.1"}]}


def test_kafkas_own_documents_decode() -> None:
    # As Kafka 2.x/3.x writes them, and with the enum constants' spelling.
    data = (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"DescribeConfigs",'
            b'"host":"*"},{"principal":"User:*","permissionType":"DENY","operation":"CLUSTER_ACTION","host":"h"}]}')
    node = ResourceAclsZNode.decode(data, "/kafka-acl-extended/prefixed/Group/app-")
    assert node.pattern == ResourcePattern(ResourceType.GROUP, "app-", PRE)
    assert node.entries == {AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW),
                            AccessControlEntry("User:*", "h", AclOperation.CLUSTER_ACTION, AclPermissionType.DENY)}
    assert ResourceAclsZNode.decode(b"", "/kafka-acl/Topic/t").entries == frozenset()


def test_change_notifications_are_kafkas() -> None:
    lit = change_znode(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx:1"))
    assert isinstance(lit, LiteralAclChangeZNode)
    assert (lit.PREFIX, lit.encode()) == ("/kafka-acl-changes/acl_changes_", b"TRANSACTIONAL_ID:tx:1")
    assert LiteralAclChangeZNode.decode(b"Topic:a:b", "/x").pattern == ResourcePattern(TOPIC, "a:b")  # Kafka 2.0
    ext = change_znode(ResourcePattern(TOPIC, "pay-", PRE))
    assert isinstance(ext, ExtendedAclChangeZNode)
    assert ext.PREFIX == "/kafka-acl-extended-changes/acl_changes_"
    assert json.loads(ext.encode()) == {"version": 1, "resourceType": "TOPIC", "name": "pay-", "patternType": "PREFIXED"}
    assert ExtendedAclChangeZNode.decode(
        b'{"version":1,"resourceType":"Topic","name":"x","patternType":"Prefixed"}', "/x").pattern == \
        ResourcePattern(TOPIC, "x", PRE)


NAMES = st.text(st.characters(codec="utf-8", exclude_characters="/", max_codepoint=0xD7FF,
                              exclude_categories=("Cc",)), min_size=1, max_size=20).filter(lambda n: n not in (".", ".."))
PATTERNS = st.builds(ResourcePattern, st.sampled_from(CONCRETE_RESOURCE_TYPES), NAMES, st.sampled_from([LIT, PRE]))
ENTRIES = st.frozensets(st.builds(
    AccessControlEntry, st.text(min_size=1, max_size=8).map(lambda n: f"User:{n}"), st.sampled_from(["*", "1.2.3.4", "::1"]),
    st.sampled_from([o for o in AclOperation if o not in (AclOperation.ANY, AclOperation.UNKNOWN)]),
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY])), max_size=6)


@given(PATTERNS, ENTRIES)
def test_acls_round_trip(pattern, entries) -> None:
    node = ResourceAclsZNode(pattern, entries)
    assert ResourceAclsZNode.decode(node.encode(), ResourceAclsZNode.path(pattern)) == node


@given(PATTERNS)
def test_change_notifications_round_trip(pattern) -> None:
    note = change_znode(pattern)
    assert type(note).decode(note.encode(), note.PREFIX + "0000000001").pattern == pattern


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "bad\x00", "tab\tname", "\x7f", "\ue000", "\U0001f600"])
def test_names_zookeeper_cannot_hold_are_refused_before_writing(name) -> None:
    with pytest.raises(ZnodePathError):
        check_resource_name(name)
    with pytest.raises(ZnodePathError):
        ResourceAclsZNode.path(ResourcePattern(TOPIC, name))


def test_unstored_pattern_and_resource_types_have_no_path() -> None:
    with pytest.raises(ZnodePathError):
        ResourceAclsZNode.path(ResourcePattern(TOPIC, "t", PatternType.MATCH))
    with pytest.raises(ZnodePathError):
        ResourceAclsZNode.path(ResourcePattern(ResourceType.ANY, "t"))


ENTRY = {"principal": "User:a", "permissionType": "Allow", "operation": "Read", "host": "*"}


@pytest.mark.parametrize("data, problem", [
    (b"[1]", "JSON list"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (json.dumps({"acls": []}).encode(), "'version' is missing"),
    (json.dumps({"version": 2, "acls": []}).encode(), "version 2 is not supported"),
    (json.dumps({"version": 1, "acls": {}}).encode(), "'acls'"),
    (json.dumps({"version": 1, "acls": ["x"]}).encode(), "acls[0] is \"x\""),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "operation": "Fly"}]}).encode(), "operation 'Fly' is unknown"),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "operation": "Any"}]}).encode(), "not a concrete operation"),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "permissionType": "Maybe"}]}).encode(), "permissionType 'Maybe'"),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "permissionType": "Any"}]}).encode(), "not Allow or Deny"),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "principal": "alice"}]}).encode(), "Type:name"),
    (json.dumps({"version": 1, "acls": [{**ENTRY, "host": 7}]}).encode(), "acls[0] field 'host'"),
    (json.dumps({"version": 1, "acls": [{k: v for k, v in ENTRY.items() if k != "principal"}]}).encode(),
     "acls[0] field 'principal' is missing"),
])
def test_hostile_acl_documents_are_refused_naming_the_znode(data, problem) -> None:
    with pytest.raises(ZnodeDataError) as e:
        ResourceAclsZNode.decode(data, "/kafka-acl/Topic/t")
    assert str(e.value).startswith("znode /kafka-acl/Topic/t: ") and problem in str(e.value)


@pytest.mark.parametrize("path", ["/kafka-acl/Topic", "/kafka-acl/Nope/t", "/kafka-acl/Any/t", "/elsewhere/Topic/t",
                                  "/kafka-acl/Topic/a/b", "/kafka-acl-extended/literal/Topic/t"])
def test_acl_znodes_are_only_under_the_stores(path) -> None:
    with pytest.raises(ZnodeDataError, match="is not an ACL znode"):
        ResourceAclsZNode.decode(b"", path)


@pytest.mark.parametrize("data", [b"Topic", b"Topic:", b"Nope:x", b"ANY:x", b"\xff:x"])
def test_hostile_literal_notifications_are_refused(data) -> None:
    with pytest.raises(ZnodeDataError, match="/kafka-acl-changes/acl_changes_0000000007"):
        LiteralAclChangeZNode.decode(data, "/kafka-acl-changes/acl_changes_0000000007")


@pytest.mark.parametrize("doc", [
    {"version": 1, "resourceType": "TOPIC", "name": "x", "patternType": "LITERAL"},
    {"version": 1, "resourceType": "ANY", "name": "x", "patternType": "PREFIXED"},
    {"version": 1, "resourceType": "TOPIC", "name": "", "patternType": "PREFIXED"},
    {"version": 1, "resourceType": "TOPIC", "patternType": "PREFIXED"},
    {"version": 9, "resourceType": "TOPIC", "name": "x", "patternType": "PREFIXED"},
    {"version": 1, "resourceType": "Space", "name": "x", "patternType": "PREFIXED"},
])
def test_hostile_extended_notifications_are_refused(doc) -> None:
    with pytest.raises(ZnodeDataError, match="/n"):
        ExtendedAclChangeZNode.decode(json.dumps(doc).encode(), "/n")
