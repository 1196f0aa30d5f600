"""Transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27), TxnOffsetCommit (28), and the operator's view of the
coordinators: DescribeTransactions (65) and ListTransactions (66).

A transactional producer (KIP-98) first adds every partition it will write to
its transaction (AddPartitionsToTxn) and, when it also commits consumer
offsets, the group's offsets partition (AddOffsetsToTxn). TxnOffsetCommit sends
those offsets to the group coordinator; EndTxn asks the transaction
coordinator to commit or abort, and the coordinator then writes commit/abort
control batches into every partition with WriteTxnMarkers (broker to broker).

Version history worth knowing when serving clients:
- KIP-447 (TxnOffsetCommit v3): generation, member id and group instance id
  let the coordinator fence zombie producers by consumer-group generation.
- KIP-890 part 1 (AddPartitionsToTxn v4+): brokers batch verification of
  several transactions in one request; v3 and below stay the client form, so
  the request keeps both shapes (fields named ``v3_and_below_*`` for 0-3, a
  ``transactions`` array for 4+). v5 of AddPartitionsToTxn, v4 of
  AddOffsetsToTxn/EndTxn and TxnOffsetCommit only add TRANSACTION_ABORTABLE.
- KIP-890 part 2 (EndTxn v5, TxnOffsetCommit v5): the epoch is bumped on
  every transaction, so the EndTxn v5 response returns the new producer id
  and epoch.
- WriteTxnMarkers v0 was removed in Kafka 4.0 (KIP-896); it is kept here for
  ZooKeeper-era peers. v2 carries the transaction version of the marker
  (KIP-1228).

KIP-664 (DescribeTransactions, ListTransactions, with DescribeProducers in
``admin``) lets an operator find and abort hanging transactions: a
coordinator describes the transactional ids it owns (state, producer id
and epoch, timeout, start time, partitions) and lists them filtered by
state and producer id; ListTransactions v1 adds a duration filter (only
transactions running longer than it, KIP-994), v2 a transactional id
regular expression (KIP-1152). States travel as Kafka's state names
("Ongoing", "PrepareCommit"...).

Versions covered: the union of Kafka 3.9 and the Kafka 4.x releases (4.2's
message definitions). TxnOffsetCommit v6 (topic ids instead of names) exists
only in Kafka's development branch after 4.2 and is not here.
Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

# The topic/partitions pair that both request shapes of AddPartitionsToTxn use.
_TXN_TOPIC = [
    F("name", "string"),
    F("partitions", "[]int32"),
]

# The per-topic result that both response shapes of AddPartitionsToTxn use.
_TXN_TOPIC_RESULT = [
    F("name", "string"),
    F("results_by_partition", [
        F("partition_index", "int32"),
        F("partition_error_code", "int16"),
    ]),
]

ADD_PARTITIONS_TO_TXN = api(
    24, "AddPartitionsToTxn", "0-5", "3+",
    request=[
        # v4+: one entry per transaction, sent by brokers to verify or add.
        F("transactions", [
            F("transactional_id", "string", "4+"),
            F("producer_id", "int64", "4+"),
            F("producer_epoch", "int16", "4+"),
            F("verify_only", "bool", "4+"),
            F("topics", _TXN_TOPIC, "4+"),
        ], "4+"),
        # v0-3: the single-transaction client form.
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", _TXN_TOPIC, "0-3"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "4+", ignorable=True),
        F("results_by_transaction", [
            F("transactional_id", "string", "4+"),
            F("topic_results", _TXN_TOPIC_RESULT, "4+"),
        ], "4+"),
        F("results_by_topic_v3_and_below", _TXN_TOPIC_RESULT, "0-3"),
    ],
)

ADD_OFFSETS_TO_TXN = api(
    25, "AddOffsetsToTxn", "0-4", "3+",
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("group_id", "string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
    ],
)

END_TXN = api(
    26, "EndTxn", "0-5", "3+",
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        # KIP-890 part 2: the coordinator bumped the epoch when it ended the
        # transaction; -1 when not known.
        F("producer_id", "int64", "5+", default=-1, ignorable=True),
        F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
    ],
)

WRITE_TXN_MARKERS = api(
    27, "WriteTxnMarkers", "0-2", "1+",
    request=[
        F("markers", [
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("transaction_result", "bool"),  # true = COMMIT, false = ABORT
            F("topics", [
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            ]),
            F("coordinator_epoch", "int32"),
            F("transaction_version", "int8", "2+", ignorable=True),
        ]),
    ],
    response=[
        F("markers", [
            F("producer_id", "int64"),
            F("topics", [
                F("name", "string"),
                F("partitions", [
                    F("partition_index", "int32"),
                    F("error_code", "int16"),
                ]),
            ]),
        ]),
    ],
)

TXN_OFFSET_COMMIT = api(
    28, "TxnOffsetCommit", "0-5", "3+",
    request=[
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        # KIP-447: group fencing fields; -1 / "" / null mean "not a member".
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                F("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)

DESCRIBE_TRANSACTIONS = api(
    65, "DescribeTransactions", "0", "0+",
    request=[
        F("transactional_ids", "[]string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("transaction_states", [
            F("error_code", "int16"),
            F("transactional_id", "string"),
            F("transaction_state", "string"),
            F("transaction_timeout_ms", "int32"),
            F("transaction_start_time_ms", "int64"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("topics", [
                F("topic", "string"),
                F("partitions", "[]int32"),
            ]),
        ]),
    ],
)

LIST_TRANSACTIONS = api(
    66, "ListTransactions", "0-2", "0+",
    request=[
        F("state_filters", "[]string"),
        F("producer_id_filters", "[]int64"),
        F("duration_filter", "int64", "1+", default=-1),
        F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("unknown_state_filters", "[]string"),
        F("transaction_states", [
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("transaction_state", "string"),
        ]),
    ],
)

APIS = [ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT,
        DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS]
