"""ACL administration APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

Admin clients list, add and remove access-control entries (KIP-140: the ACL
admin APIs). An entry binds a resource pattern (resource type, name and
pattern type) to a principal, host, operation and allow/deny permission;
filters use the same fields, where null strings and the ANY enum values match
everything.

Version history:
- v1 adds the resource pattern type (KIP-290: prefixed ACLs). Absent in v0,
  where every pattern is LITERAL (3), hence the default of 3.
- v2 is the first flexible version (KIP-482).
- v3 only admits the USER resource type (KIP-373: delegation tokens for
  other users).
- v0 was removed in Kafka 4.0 (KIP-896); kept for ZooKeeper-era clients.

Enum values (resource type, operation, permission, pattern type) are carried
as int8 on the wire; their meaning lives with the authorizer, not here.
Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

# PatternType.LITERAL: what every v0 pattern is, and the filter default.
_LITERAL = 3

DESCRIBE_ACLS = api(
    29, "DescribeAcls", "0-3", "2+",
    request=[
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=_LITERAL),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resources", [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=_LITERAL),
            F("acls", [
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permission_type", "int8"),
            ]),
        ]),
    ],
)

CREATE_ACLS = api(
    30, "CreateAcls", "0-3", "2+",
    request=[
        F("creations", [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("resource_pattern_type", "int8", "1+", default=_LITERAL),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)

DELETE_ACLS = api(
    31, "DeleteAcls", "0-3", "2+",
    request=[
        F("filters", [
            F("resource_type_filter", "int8"),
            F("resource_name_filter", "string", nullable="0+"),
            F("pattern_type_filter", "int8", "1+", default=_LITERAL),
            F("principal_filter", "string", nullable="0+"),
            F("host_filter", "string", nullable="0+"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("filter_results", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("matching_acls", [
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
                F("resource_type", "int8"),
                F("resource_name", "string"),
                F("pattern_type", "int8", "1+", default=_LITERAL),
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permission_type", "int8"),
            ]),
        ]),
    ],
)

APIS = [DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS]
