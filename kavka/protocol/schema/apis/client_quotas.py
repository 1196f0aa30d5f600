"""Client quota APIs (KIP-546): DescribeClientQuotas (48) and
AlterClientQuotas (49).

An entity is a list of (entity type, name) components — ``user``,
``client-id`` (and ``ip`` in KIP-612) — where a null name is the default
entity. Quota values are float64 on the wire whatever the key's type.

DescribeClientQuotas filters entities: each component matches one entity
type exactly by name (match type 0), its default entity (1) or any name
(2); ``strict`` leaves out entities with components the filter does not
mention. AlterClientQuotas sets (or, with ``remove``, deletes) quota keys
per entity, optionally only validating.

Version history: v1 of both is the first flexible version (KIP-482).

Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

_ENTITY = [
    F("entity_type", "string"),
    F("entity_name", "string", nullable="0+"),
]

DESCRIBE_CLIENT_QUOTAS = api(
    48, "DescribeClientQuotas", "0-1", "1+",
    request=[
        F("components", [
            F("entity_type", "string"),
            # 0 exact name, 1 the default entity, 2 any name.
            F("match_type", "int8"),
            F("match", "string", nullable="0+"),
        ]),
        F("strict", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("entries", [
            F("entity", _ENTITY),
            F("values", [
                F("key", "string"),
                F("value", "float64"),
            ]),
        ], nullable="0+"),
    ],
)

ALTER_CLIENT_QUOTAS = api(
    49, "AlterClientQuotas", "0-1", "1+",
    request=[
        F("entries", [
            F("entity", _ENTITY),
            F("ops", [
                F("key", "string"),
                F("value", "float64"),
                F("remove", "bool"),
            ]),
        ]),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("entries", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("entity", _ENTITY),
        ]),
    ],
)

APIS = [DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS]
