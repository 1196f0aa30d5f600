"""The admin client's ACL requests at the version the broker offers: v0
carries LITERAL patterns only (a v0 DescribeAcls for ANY asks for LITERAL,
what a v0 broker holds; PREFIXED, MATCH or ANY elsewhere is refused before
sending), v1+ carries the pattern type; responses read back as bindings."""

from __future__ import annotations

import pytest

from kavka.client import admin_requests as rq
from kavka.client.errors import UnsupportedVersion
from kavka.protocol.messages import DescribeAclsResponse
from kavka.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)


class Offers:
    def __init__(self, version: int) -> None:
        self.version = version

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        return self.version


PREFIXED = AclBinding(ResourcePattern(ResourceType.TOPIC, "p-", PatternType.PREFIXED),
                      AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW))
ANY_TOPIC = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, None, PatternType.ANY))


def test_v0_asks_for_literal_patterns_and_refuses_the_others() -> None:
    req, version = rq.describe_acls(ANY_TOPIC, Offers(0))
    assert version == 0 and req.pattern_type_filter == int(PatternType.LITERAL)
    with pytest.raises(UnsupportedVersion, match="LITERAL patterns only"):
        rq.create_acls([PREFIXED], Offers(0))
    with pytest.raises(UnsupportedVersion):
        rq.delete_acls([ANY_TOPIC], Offers(0))
    with pytest.raises(UnsupportedVersion):
        rq.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "x", PatternType.MATCH)), Offers(0))


def test_v1_carries_the_pattern_type_and_answers_read_back() -> None:
    req, version = rq.create_acls([PREFIXED], Offers(3))
    assert version == 3 and req.creations[0].resource_pattern_type == int(PatternType.PREFIXED)
    req, _ = rq.describe_acls(ANY_TOPIC, Offers(1))
    assert req.pattern_type_filter == int(PatternType.ANY)
    R = DescribeAclsResponse
    resp = R(throttle_time_ms=0, error_code=0, error_message=None, resources=[R.Resources(
        resource_type=2, resource_name="p-", pattern_type=4,
        acls=[R.Resources.Acls(principal="User:a", host="*", operation=3, permission_type=3)])])
    assert rq.parse_describe_acls(resp) == [PREFIXED]
