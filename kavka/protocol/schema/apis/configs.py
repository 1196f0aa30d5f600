"""Dynamic configuration APIs: DescribeConfigs (32), AlterConfigs (33) and
IncrementalAlterConfigs (44).

Admin clients read and change topic, broker and broker-logger configs
(KIP-133; seed 002 "dynamic config"). Resources are addressed by an int8
resource type (2 = TOPIC, 4 = BROKER, 8 = BROKER_LOGGER) and a name; values
are nullable strings (null = sensitive or deleted).

Version history:
- DescribeConfigs v1 adds config synonyms and the config source (KIP-226),
  replacing v0's ``is_default``; v3 adds the config type and documentation
  (KIP-569); v4 is flexible (KIP-482). v0 was removed in Kafka 4.0 (KIP-896)
  and is kept for ZooKeeper-era clients.
- AlterConfigs replaces a resource's whole dynamic config; v2 is flexible.
  IncrementalAlterConfigs (KIP-339) sets, deletes, appends to or subtracts
  from single keys; v1 is flexible.

Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

DESCRIBE_CONFIGS = api(
    32, "DescribeConfigs", "0-4", "4+",
    request=[
        F("resources", [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            # null asks for every key of the resource.
            F("configuration_keys", "[]string", nullable="0+"),
        ]),
        F("include_synonyms", "bool", "1+"),
        F("include_documentation", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("read_only", "bool"),
                F("is_default", "bool", "0"),
                # Only a placeholder when absent: the real v0 source depends on
                # the resource (KIP-226), so -1 means "unknown".
                F("config_source", "int8", "1+", default=-1, ignorable=True),
                F("is_sensitive", "bool"),
                F("synonyms", [
                    F("name", "string", "1+"),
                    F("value", "string", "1+", nullable="1+"),
                    F("source", "int8", "1+"),
                ], "1+", ignorable=True),
                F("config_type", "int8", "3+", ignorable=True),
                F("documentation", "string", "3+", nullable="3+", ignorable=True),
            ]),
        ]),
    ],
)

ALTER_CONFIGS = api(
    33, "AlterConfigs", "0-2", "2+",
    request=[
        F("resources", [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [
                F("name", "string"),
                F("value", "string", nullable="0+"),
            ]),
        ]),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("responses", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
        ]),
    ],
)

INCREMENTAL_ALTER_CONFIGS = api(
    44, "IncrementalAlterConfigs", "0-1", "1+",
    request=[
        F("resources", [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [
                F("name", "string"),
                # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (KIP-339).
                F("config_operation", "int8"),
                F("value", "string", nullable="0+"),
            ]),
        ]),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("responses", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
        ]),
    ],
)

APIS = [DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS]
