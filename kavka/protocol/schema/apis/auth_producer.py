"""Schemas of SaslHandshake (17) and InitProducerId (22).

What they are for:
- SaslHandshake: a client names the SASL mechanism it wants; the broker
  answers with the mechanisms it enables. In v0 the SASL tokens then follow
  as raw size-prefixed frames; from v1 they travel inside SaslAuthenticate
  requests (KIP-152). Never flexible.
- InitProducerId: an idempotent or transactional producer obtains a
  producer id and epoch (KIP-98). kafka-python 3.0 calls it for every
  producer, because idempotence is on by default. v2 is the first flexible
  version (KIP-482); v3 lets a producer pass its current id and epoch to
  recover from an epoch error instead of starting over (KIP-360); v4 adds
  the PRODUCER_FENCED error; v5 TRANSACTION_ABORTABLE (KIP-890); v6 the
  two-phase-commit fields (KIP-939), which Kafka still marks unstable.

Layout: one ``Api`` per message in Kavka's DSL, written from Kafka's
message definitions and the protocol guide (facts only). Pure data; read
by the codec and by the schema tests.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

SASL_HANDSHAKE = api(
    17, "SaslHandshake", "0-1", None,
    request=[
        F("mechanism", "string", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("mechanisms", "[]string", "0+"),
    ],
)

INIT_PRODUCER_ID = api(
    22, "InitProducerId", "0-6", "2+",
    request=[
        # null for an idempotent (non-transactional) producer.
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
        F("enable_2pc", "bool", "6+"),
        F("keep_prepared_txn", "bool", "6+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "0+", default=-1),
        F("producer_epoch", "int16", "0+"),
        F("ongoing_txn_producer_id", "int64", "6+", default=-1),
        F("ongoing_txn_producer_epoch", "int16", "6+", default=-1),
    ],
    notes="v6 (KIP-939 two-phase commit) is marked unstable upstream; "
    "advertise at most v5 until two-phase commit is served.",
)

APIS = [SASL_HANDSHAKE, INIT_PRODUCER_ID]
