"""Kafka's spellings of the ACL enums (SecurityUtils: Topic, TransactionalId,
IdempotentWrite, Allow), read back in any case and with or without
underscores; wire codes Kafka does not define read as UNKNOWN; the
toString forms kafka-acls.sh prints."""

from __future__ import annotations

import pytest

from kavka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    enum_code,
    parse_name,
    pascal_name,
)


@pytest.mark.parametrize("enum", [ResourceType, AclOperation, AclPermissionType, PatternType])
def test_every_name_reads_back_in_every_spelling(enum) -> None:
    for member in enum:
        for text in (pascal_name(member), member.name, pascal_name(member).upper(), pascal_name(member).lower()):
            assert parse_name(enum, text) is member


def test_pascal_names_are_kafkas() -> None:
    assert [pascal_name(m) for m in (ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN,
                                     AclOperation.IDEMPOTENT_WRITE, AclOperation.CLUSTER_ACTION,
                                     AclPermissionType.ALLOW, PatternType.PREFIXED)] == [
        "TransactionalId", "DelegationToken", "IdempotentWrite", "ClusterAction", "Allow", "Prefixed"]
    assert parse_name(AclOperation, "Fly") is None


def test_undefined_wire_codes_read_as_unknown() -> None:
    assert enum_code(ResourceType, 99) is ResourceType.UNKNOWN
    assert enum_code(PatternType, -1) is PatternType.UNKNOWN
    assert enum_code(AclOperation, 12) is AclOperation.IDEMPOTENT_WRITE


def test_printed_as_kafka_acls_prints() -> None:
    assert str(ResourcePattern(ResourceType.TOPIC, "t", PatternType.PREFIXED)) == \
        "ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)"
    assert str(ResourcePatternFilter(ResourceType.ANY, None, PatternType.MATCH)) == \
        "ResourcePattern(resourceType=ANY, name=<any>, patternType=MATCH)"
    assert str(AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)) == \
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
