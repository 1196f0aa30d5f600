"""The schema tables against the Kafka protocol guide: the version ranges
of the classic APIs (from v0, as the guide documents them, to the latest
release), the core APIs' ranges and first flexible versions, and the request/response grammars of the ZooKeeper-era
inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown), which neither kafka-python nor aiokafka defines,
transcribed here in the guide's own notation (Kafka 3.9).
"""

from __future__ import annotations

import pytest

from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import Field

# The oldest and newest version Kavka's table must cover: v0 (the protocol
# guide documents every API from v0, Kafka 4.0 merely stopped serving some)
# up to Kafka 4.x for live APIs, Kafka 3.9 for the ZooKeeper-only ones.
EXPECTED_RANGE = {
    2: (0, 11), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 10),
    9: (0, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
    15: (0, 6), 16: (0, 5), 17: (0, 1), 19: (0, 7), 20: (0, 6), 21: (0, 2),
    22: (0, 6), 23: (0, 4),
}


@pytest.mark.parametrize("key", sorted(EXPECTED_RANGE))
def test_version_range_covers_v0_to_latest(key):
    a = registry()[key]
    assert (a.min_version, a.max_version) == EXPECTED_RANGE[key]


def test_core_apis_ranges_and_first_flexible_versions():
    reg = registry()
    assert (reg[0].name, reg[0].max_version, reg[0].flexible_from) == ("Produce", 11, 9)
    assert (reg[1].name, reg[1].max_version, reg[1].flexible_from) == ("Fetch", 17, 12)
    assert (reg[3].name, reg[3].max_version, reg[3].flexible_from) == ("Metadata", 13, 9)
    assert (reg[18].name, reg[18].max_version, reg[18].flexible_from) == ("ApiVersions", 4, 3)


_GUIDE_TYPE = {
    "bool": "BOOLEAN", "int8": "INT8", "int16": "INT16", "int32": "INT32",
    "int64": "INT64", "uuid": "UUID", "string": "STRING", "bytes": "BYTES",
}


def _guide_type(f: Field, version: int, flexible: bool) -> str:
    t = f.type.removeprefix("[]")
    name = _GUIDE_TYPE[t]
    if t in ("string", "bytes"):
        if version in f.nullable:
            name = "NULLABLE_" + name
        if flexible:
            name = "COMPACT_" + name
    return name


def _guide(fields: tuple[Field, ...], version: int, flexible: bool, head: str, indent: str = "") -> list[str]:
    """Render a struct at ``version`` in the protocol guide's grammar: the
    body fields (arrays in brackets, ``_tagged_fields`` closing every
    flexible struct), then one line per field, nested structs indented."""
    body = [f for f in fields if version in f.versions and version not in f.tagged]
    names = [f"[{f.name}]" if f.is_array else f.name for f in body]
    if flexible:
        names.append("_tagged_fields")
    lines = [f"{indent}{head} => {' '.join(names)}".rstrip()]
    for f in body:
        if f.is_struct_array or f.is_struct:
            lines += _guide(f.struct_fields, version, flexible, f.name, indent + "  ")
        else:
            lines.append(f"{indent}  {f.name} => {_guide_type(f, version, flexible)}")
    return lines


# Grammars as the Kafka 3.9 protocol guide prints them (its field names:
# PartitionEpoch was ZkVersion before KIP-704, hence the 3.9 spelling).
GUIDE = {
    (4, "request", 0): """
LeaderAndIsr Request (Version: 0) => controller_id controller_epoch [ungrouped_partition_states] [live_leaders]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    partition_epoch => INT32
    replicas => INT32
  live_leaders => broker_id host_name port
    broker_id => INT32
    host_name => STRING
    port => INT32
""",
    (4, "request", 2): """
LeaderAndIsr Request (Version: 2) => controller_id controller_epoch broker_epoch [topic_states] [live_leaders]
  controller_id => INT32
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name [partition_states]
    topic_name => STRING
    partition_states => partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas] is_new
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      partition_epoch => INT32
      replicas => INT32
      is_new => BOOLEAN
  live_leaders => broker_id host_name port
    broker_id => INT32
    host_name => STRING
    port => INT32
""",
    (4, "request", 7): """
LeaderAndIsr Request (Version: 7) => controller_id is_kraft_controller controller_epoch broker_epoch type [topic_states] [live_leaders] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  type => INT8
  topic_states => topic_name topic_id [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    topic_id => UUID
    partition_states => partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas] [adding_replicas] [removing_replicas] is_new leader_recovery_state _tagged_fields
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      partition_epoch => INT32
      replicas => INT32
      adding_replicas => INT32
      removing_replicas => INT32
      is_new => BOOLEAN
      leader_recovery_state => INT8
  live_leaders => broker_id host_name port _tagged_fields
    broker_id => INT32
    host_name => COMPACT_STRING
    port => INT32
""",
    (4, "response", 0): """
LeaderAndIsr Response (Version: 0) => error_code [partition_errors]
  error_code => INT16
  partition_errors => topic_name partition_index error_code
    topic_name => STRING
    partition_index => INT32
    error_code => INT16
""",
    (4, "response", 5): """
LeaderAndIsr Response (Version: 5) => error_code [topics] _tagged_fields
  error_code => INT16
  topics => topic_id [partition_errors] _tagged_fields
    topic_id => UUID
    partition_errors => partition_index error_code _tagged_fields
      partition_index => INT32
      error_code => INT16
""",
    (5, "request", 0): """
StopReplica Request (Version: 0) => controller_id controller_epoch delete_partitions [ungrouped_partitions]
  controller_id => INT32
  controller_epoch => INT32
  delete_partitions => BOOLEAN
  ungrouped_partitions => topic_name partition_index
    topic_name => STRING
    partition_index => INT32
""",
    (5, "request", 2): """
StopReplica Request (Version: 2) => controller_id controller_epoch broker_epoch delete_partitions [topics] _tagged_fields
  controller_id => INT32
  controller_epoch => INT32
  broker_epoch => INT64
  delete_partitions => BOOLEAN
  topics => name [partition_indexes] _tagged_fields
    name => COMPACT_STRING
    partition_indexes => INT32
""",
    (5, "request", 4): """
StopReplica Request (Version: 4) => controller_id is_kraft_controller controller_epoch broker_epoch [topic_states] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    partition_states => partition_index leader_epoch delete_partition _tagged_fields
      partition_index => INT32
      leader_epoch => INT32
      delete_partition => BOOLEAN
""",
    (5, "response", 4): """
StopReplica Response (Version: 4) => error_code [partition_errors] _tagged_fields
  error_code => INT16
  partition_errors => topic_name partition_index error_code _tagged_fields
    topic_name => COMPACT_STRING
    partition_index => INT32
    error_code => INT16
""",
    (6, "request", 0): """
UpdateMetadata Request (Version: 0) => controller_id controller_epoch [ungrouped_partition_states] [live_brokers]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    zk_version => INT32
    replicas => INT32
  live_brokers => id v0_host v0_port
    id => INT32
    v0_host => STRING
    v0_port => INT32
""",
    (6, "request", 3): """
UpdateMetadata Request (Version: 3) => controller_id controller_epoch [ungrouped_partition_states] [live_brokers]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    zk_version => INT32
    replicas => INT32
  live_brokers => id [endpoints] rack
    id => INT32
    endpoints => port host listener security_protocol
      port => INT32
      host => STRING
      listener => STRING
      security_protocol => INT16
    rack => NULLABLE_STRING
""",
    (6, "request", 8): """
UpdateMetadata Request (Version: 8) => controller_id is_kraft_controller controller_epoch broker_epoch [topic_states] [live_brokers] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name topic_id [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    topic_id => UUID
    partition_states => partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas] [offline_replicas] _tagged_fields
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      zk_version => INT32
      replicas => INT32
      offline_replicas => INT32
  live_brokers => id [endpoints] rack _tagged_fields
    id => INT32
    endpoints => port host listener security_protocol _tagged_fields
      port => INT32
      host => COMPACT_STRING
      listener => COMPACT_STRING
      security_protocol => INT16
    rack => COMPACT_NULLABLE_STRING
""",
    (6, "response", 8): """
UpdateMetadata Response (Version: 8) => error_code _tagged_fields
  error_code => INT16
""",
    (7, "request", 0): """
ControlledShutdown Request (Version: 0) => broker_id
  broker_id => INT32
""",
    (7, "request", 3): """
ControlledShutdown Request (Version: 3) => broker_id broker_epoch _tagged_fields
  broker_id => INT32
  broker_epoch => INT64
""",
    (7, "response", 3): """
ControlledShutdown Response (Version: 3) => error_code [remaining_partitions] _tagged_fields
  error_code => INT16
  remaining_partitions => topic_name partition_index _tagged_fields
    topic_name => COMPACT_STRING
    partition_index => INT32
""",
}


@pytest.mark.parametrize("key,kind,version", sorted(GUIDE), ids=lambda p: str(p))
def test_inter_broker_grammar_matches_protocol_guide(key, kind, version):
    a = registry()[key]
    head = f"{a.name} {kind.capitalize()} (Version: {version})"
    ours = _guide(getattr(a, kind), version, a.is_flexible(version), head)
    assert ours == GUIDE[(key, kind, version)].strip().splitlines()


def test_update_metadata_v8_carries_type_as_tag_0():
    """The migration's full/incremental marker travels as tagged field 0
    (KIP-866), so it is absent from the v8 grammar above."""
    (t,) = [f for f in registry()[6].request if f.name == "type"]
    assert (t.tag, str(t.tagged), t.type) == (0, "8+", "int8")


def test_controlled_shutdown_v0_has_header_without_client_id():
    a = registry()[7]
    assert [a.request_header_version(v) for v in range(4)] == [0, 1, 1, 2]
