"""Schemas of the client telemetry APIs (KIP-714): GetTelemetrySubscriptions
(71) and PushTelemetry (72).

What they are for: a client asks a broker which of its metrics the cluster
wants (GetTelemetrySubscriptions) and then pushes them periodically
(PushTelemetry), encoded as OpenTelemetry MetricsData protobuf, possibly
compressed. The first GetTelemetrySubscriptions carries the zero UUID as
``client_instance_id``; the broker answers with the id the client uses from
then on, a ``subscription_id`` identifying the current subscription set, the
compression types it accepts (record-batch compression codes: 0 none,
1 gzip, 2 snappy, 3 lz4, 4 zstd), the push interval, the largest payload it
takes, whether counters are sent as deltas, and the requested metric name
prefixes (empty array: none; one empty string: all). A push with
``terminating`` set is the client's last before it closes.

Clients (librdkafka since 2.5, the Java client since 3.7) send
GetTelemetrySubscriptions whenever the broker advertises the API; a broker
with no metrics subscription answers with an empty ``requested_metrics``,
after which the client does not push.

Wire format: both APIs are flexible from v0 (compact encodings, tagged
fields; KIP-482). Kafka 3.7 to 4.3 define version 0 only.

Layout: one ``Api`` per message in Kavka's DSL, written from Kafka's
message definitions and KIP-714 (facts only). Pure data; read by the codec
and by the schema tests (``tests/protocol/test_schema_kio.py``).
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

GET_TELEMETRY_SUBSCRIPTIONS = api(
    71, "GetTelemetrySubscriptions", "0", "0+",
    request=[
        # The zero UUID on the first request: the broker assigns the id.
        F("client_instance_id", "uuid", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        # Set when the request carried the zero UUID, else the zero UUID.
        F("client_instance_id", "uuid", "0+"),
        F("subscription_id", "int32", "0+"),
        F("accepted_compression_types", "[]int8", "0+"),
        F("push_interval_ms", "int32", "0+"),
        F("telemetry_max_bytes", "int32", "0+"),
        F("delta_temporality", "bool", "0+"),
        F("requested_metrics", "[]string", "0+"),
    ],
)

PUSH_TELEMETRY = api(
    72, "PushTelemetry", "0", "0+",
    request=[
        F("client_instance_id", "uuid", "0+"),
        F("subscription_id", "int32", "0+"),
        F("terminating", "bool", "0+"),
        F("compression_type", "int8", "0+"),
        # OpenTelemetry MetricsData (protobuf), compressed per compression_type.
        F("metrics", "bytes", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
    ],
)

APIS = [GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY]
