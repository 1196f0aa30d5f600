"""Request builders and response parsers for ``kavka.client.admin``.

Each builder picks the version with ``conn.version_for`` and fills only the
fields that version has (the codec refuses a non-default value in a version
without the field), returning ``(request, version)``. Each parser turns a
response into ``{entity: (error code, error message, value)}`` so the admin
client can retry or report entities one by one.

Pure functions over message values (plus the connection's negotiated
ranges); called on the event loop by ``KafkaAdmin``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kavka.client.admin_types import AbortTransactionSpec, ConfigEntry, ListedOffset, ProducerState
from kavka.client.connection import BrokerConnection
from kavka.client.errors import UnsupportedVersion
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m

if TYPE_CHECKING:
    # The ACL, quota and SCRAM types are imported by the functions that
    # build or parse those requests (see kavka.client.admin).
    from kavka.security.acl import AclBinding, AclBindingFilter, PatternType
    from kavka.security.quota.entity import ClientQuotaEntity
    from kavka.security.sasl.credentials import ScramMechanism

DEFAULT_CONFIG_SOURCE = 5  # DescribeConfigs config_source DEFAULT_CONFIG (KIP-226)


def create_topics(topics, timeout_ms: int, validate_only: bool, conn: BrokerConnection):
    R = m.CreateTopicsRequest
    version = conn.version_for(19)
    if validate_only and version < 1:
        raise UnsupportedVersion("CreateTopics validate_only needs v1+; the broker offers only v0")
    req = R(timeout_ms=timeout_ms, topics=[
        R.Topics(name=t.name,
                 num_partitions=-1 if t.replica_assignment else t.num_partitions,
                 replication_factor=-1 if t.replica_assignment else t.replication_factor,
                 assignments=[R.Topics.Assignments(partition_index=p, broker_ids=list(b))
                              for p, b in sorted(t.replica_assignment.items())],
                 configs=[R.Topics.Configs(name=k, value=v) for k, v in t.configs.items()])
        for t in topics])
    if version >= 1:
        req.validate_only = validate_only
    return req, version


def parse_create_topics(resp) -> dict:
    return {t.name: (t.error_code, t.error_message, None) for t in resp.topics}


def delete_topics(names: Iterable[str], timeout_ms: int, conn: BrokerConnection):
    version = conn.version_for(20)
    R = m.DeleteTopicsRequest
    if version >= 6:
        req = R(timeout_ms=timeout_ms, topics=[R.Topics(name=n) for n in names])
    else:
        req = R(timeout_ms=timeout_ms, topic_names=list(names))
    return req, version


def parse_delete_topics(resp) -> dict:
    return {t.name: (t.error_code, t.error_message, None) for t in resp.responses}


def create_partitions(counts: Mapping[str, int], assignments: Mapping[str, list[list[int]]],
                      timeout_ms: int, validate_only: bool, conn: BrokerConnection):
    R = m.CreatePartitionsRequest
    req = R(timeout_ms=timeout_ms, validate_only=validate_only, topics=[
        R.Topics(name=n, count=c,
                 assignments=None if n not in assignments else
                 [R.Topics.Assignments(broker_ids=list(b)) for b in assignments[n]])
        for n, c in counts.items()])
    return req, conn.version_for(37)


def parse_create_partitions(resp) -> dict:
    return {t.name: (t.error_code, t.error_message, None) for t in resp.results}


def describe_cluster(conn: BrokerConnection):
    return m.DescribeClusterRequest(), conn.version_for(60)


def describe_topic_partitions(names: list[str], limit: int, cursor: tuple[str, int] | None,
                              conn: BrokerConnection):
    R = m.DescribeTopicPartitionsRequest
    req = R(topics=[R.Topics(name=n) for n in names], response_partition_limit=limit,
            cursor=None if cursor is None else R.Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    return req, conn.version_for(75)


def describe_configs(rtype: int, name: str, keys: Iterable[str] | None, conn: BrokerConnection,
                     include_synonyms: bool = False):
    R = m.DescribeConfigsRequest
    req = R(resources=[R.Resources(resource_type=int(rtype), resource_name=name,
                                   configuration_keys=None if keys is None else list(keys))])
    version = conn.version_for(32)
    if include_synonyms and version >= 1:
        req.include_synonyms = True
    return req, version


def parse_describe_configs(resp) -> dict:
    out = {}
    for r in resp.results:
        entries = {}
        for c in r.configs:
            is_default = c.is_default if c.config_source == -1 else c.config_source == DEFAULT_CONFIG_SOURCE
            entries[c.name] = ConfigEntry(c.name, c.value, c.read_only, is_default, c.is_sensitive,
                                          c.config_source, tuple((s.name, s.value, s.source) for s in c.synonyms or ()))
        out[r.resource_name] = (r.error_code, r.error_message, entries)
    return out


def alter_configs(rtype: int, name: str, configs: Mapping[str, str | None], validate_only: bool,
                  conn: BrokerConnection):
    R = m.AlterConfigsRequest
    req = R(validate_only=validate_only, resources=[R.Resources(
        resource_type=int(rtype), resource_name=name,
        configs=[R.Resources.Configs(name=k, value=v) for k, v in configs.items()])])
    return req, conn.version_for(33)


def incremental_alter_configs(rtype: int, name: str, ops, validate_only: bool, conn: BrokerConnection):
    R = m.IncrementalAlterConfigsRequest
    req = R(validate_only=validate_only, resources=[R.Resources(
        resource_type=int(rtype), resource_name=name,
        configs=[R.Resources.Configs(name=k, config_operation=int(op), value=v) for k, op, v in ops])])
    return req, conn.version_for(44)


def parse_alter_configs(resp) -> dict:
    return {r.resource_name: (r.error_code, r.error_message, None) for r in resp.responses}


def _by_topic(items: Mapping[TopicPartition, int]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for tp, value in sorted(items.items()):
        out.setdefault(tp.topic, []).append((tp.partition, value))
    return out


def list_offsets(specs: Mapping[TopicPartition, int], isolation_level: int, timeout_ms: int,
                 conn: BrokerConnection):
    R = m.ListOffsetsRequest
    # v1 is the first version that answers a single offset with its timestamp.
    version = conn.version_for(2)
    if version < 1:
        raise UnsupportedVersion("ListOffsets v1+ is needed; the broker offers only v0")
    req = R(replica_id=-1, topics=[
        R.Topics(name=t, partitions=[R.Topics.Partitions(partition_index=p, timestamp=ts) for p, ts in parts])
        for t, parts in _by_topic(specs).items()])
    if version >= 2:
        req.isolation_level = isolation_level
    if version >= 10:
        req.timeout_ms = timeout_ms
    return req, version


def parse_list_offsets(resp) -> dict:
    return {TopicPartition(t.name, p.partition_index):
            (p.error_code, None, ListedOffset(p.offset, p.timestamp, p.leader_epoch))
            for t in resp.topics for p in t.partitions}


def delete_records(before: Mapping[TopicPartition, int], timeout_ms: int, conn: BrokerConnection):
    R = m.DeleteRecordsRequest
    req = R(timeout_ms=timeout_ms, topics=[
        R.Topics(name=t, partitions=[R.Topics.Partitions(partition_index=p, offset=o) for p, o in parts])
        for t, parts in _by_topic(before).items()])
    return req, conn.version_for(21)


def parse_delete_records(resp) -> dict:
    return {TopicPartition(t.name, p.partition_index): (p.error_code, None, p.low_watermark)
            for t in resp.topics for p in t.partitions}


# -- ACLs (KIP-140; pattern types from v1, KIP-290) --------------------------------------

def _acl_version(api_key: int, patterns: Iterable[PatternType], conn: BrokerConnection) -> int:
    from kavka.security.acl import PatternType

    version = conn.version_for(api_key)
    if version == 0 and any(p is not PatternType.LITERAL for p in patterns):
        raise UnsupportedVersion("the broker offers only v0 of the ACL APIs, which know LITERAL patterns only "
                                 "(PREFIXED, ANY and MATCH need v1+, Kafka 2.0+)")
    return version


def describe_acls(binding_filter: AclBindingFilter, conn: BrokerConnection):
    from kavka.security.acl import PatternType

    p, e = binding_filter.pattern, binding_filter.entry
    pattern_type = p.pattern_type
    if conn.version_for(29) == 0 and pattern_type is PatternType.ANY:
        pattern_type = PatternType.LITERAL  # v0 brokers hold LITERAL patterns only
    version = _acl_version(29, [pattern_type], conn)
    req = m.DescribeAclsRequest(resource_type_filter=int(p.resource_type), resource_name_filter=p.name,
                                principal_filter=e.principal, host_filter=e.host, operation=int(e.operation),
                                permission_type=int(e.permission_type))
    if version >= 1:
        req.pattern_type_filter = int(pattern_type)
    return req, version


def parse_describe_acls(resp) -> list[AclBinding]:
    return [_binding(r.resource_type, r.resource_name, r.pattern_type, a) for r in resp.resources for a in r.acls]


def _binding(resource_type: int, resource_name: str, pattern_type: int, a) -> AclBinding:
    from kavka.security.acl import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
        enum_code,
    )

    return AclBinding(ResourcePattern(enum_code(ResourceType, resource_type), resource_name,
                                      enum_code(PatternType, pattern_type)),
                      AccessControlEntry(a.principal, a.host, enum_code(AclOperation, a.operation),
                                         enum_code(AclPermissionType, a.permission_type)))


def create_acls(bindings: list[AclBinding], conn: BrokerConnection):
    version = _acl_version(30, [b.pattern.pattern_type for b in bindings], conn)
    R = m.CreateAclsRequest
    creations = []
    for b in bindings:
        c = R.Creations(resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
                        principal=b.entry.principal, host=b.entry.host, operation=int(b.entry.operation),
                        permission_type=int(b.entry.permission_type))
        if version >= 1:
            c.resource_pattern_type = int(b.pattern.pattern_type)
        creations.append(c)
    return R(creations=creations), version


def delete_acls(filters: list[AclBindingFilter], conn: BrokerConnection):
    version = _acl_version(31, [f.pattern.pattern_type for f in filters], conn)
    R = m.DeleteAclsRequest
    out = []
    for f in filters:
        p, e = f.pattern, f.entry
        item = R.Filters(resource_type_filter=int(p.resource_type), resource_name_filter=p.name,
                         principal_filter=e.principal, host_filter=e.host, operation=int(e.operation),
                         permission_type=int(e.permission_type))
        if version >= 1:
            item.pattern_type_filter = int(p.pattern_type)
        out.append(item)
    return R(filters=out), version


def parse_describe_acls_matches(matches) -> list[AclBinding]:
    """DeleteAcls' matching_acls as bindings."""
    return [_binding(a.resource_type, a.resource_name, a.pattern_type, a) for a in matches]


# -- client quotas (KIP-546) and SCRAM credentials (KIP-554) ---------------------------

def describe_client_quotas(components: Iterable[tuple[str, int, str | None]], strict: bool,
                           conn: BrokerConnection):
    R = m.DescribeClientQuotasRequest
    req = R(components=[R.Components(entity_type=t, match_type=mt, match=n) for t, mt, n in components],
            strict=strict)
    return req, conn.version_for(48)


def parse_describe_client_quotas(resp) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
    from kavka.security.quota.entity import ClientQuotaEntity

    return [(ClientQuotaEntity.from_components([(e.entity_type, e.entity_name) for e in entry.entity]),
             {v.key: v.value for v in entry.values}) for entry in resp.entries or ()]


def alter_client_quotas(entries: Iterable[tuple[ClientQuotaEntity, Mapping[str, float | None]]],
                        validate_only: bool, conn: BrokerConnection):
    R = m.AlterClientQuotasRequest
    req = R(validate_only=validate_only, entries=[
        R.Entries(entity=[R.Entries.Entity(entity_type=t, entity_name=n) for t, n in entity.components()],
                  ops=[R.Entries.Ops(key=k, value=0.0 if v is None else float(v), remove=v is None)
                       for k, v in ops.items()])
        for entity, ops in entries])
    return req, conn.version_for(49)


def parse_alter_client_quotas(resp) -> dict:
    from kavka.security.quota.entity import ClientQuotaEntity

    return {ClientQuotaEntity.from_components([(e.entity_type, e.entity_name) for e in r.entity]):
            (r.error_code, r.error_message, None) for r in resp.entries}


def describe_user_scram_credentials(users: Iterable[str] | None, conn: BrokerConnection):
    R = m.DescribeUserScramCredentialsRequest
    return R(users=None if users is None else [R.Users(name=u) for u in users]), conn.version_for(50)


def alter_user_scram_credentials(upsertions: Iterable[tuple[str, ScramMechanism, int, bytes, bytes]],
                                 deletions: Iterable[tuple[str, ScramMechanism]], conn: BrokerConnection):
    """``upsertions``: (user, mechanism, iterations, salt, salted password)."""
    R = m.AlterUserScramCredentialsRequest
    req = R(deletions=[R.Deletions(name=u, mechanism=mech.type_id) for u, mech in deletions],
            upsertions=[R.Upsertions(name=u, mechanism=mech.type_id, iterations=i, salt=salt, salted_password=salted)
                        for u, mech, i, salt, salted in upsertions])
    return req, conn.version_for(51)


# -- transactions (KIP-664) ----------------------------------------------------------

def list_transactions(states: list[str], producer_ids: list[int], duration_ms: int | None,
                      id_pattern: str | None, conn: BrokerConnection):
    version = conn.version_for(66)
    req = m.ListTransactionsRequest(state_filters=states, producer_id_filters=producer_ids)
    if duration_ms is not None:
        if version < 1:
            raise UnsupportedVersion("a ListTransactions duration filter needs v1+ (KIP-994); the broker offers v0")
        req.duration_filter = duration_ms
    if id_pattern:
        if version < 2:
            raise UnsupportedVersion(f"a ListTransactions transactional id pattern needs v2+ (KIP-1152); "
                                     f"the broker offers v{version}")
        req.transactional_id_pattern = id_pattern
    return req, version


def describe_producers(partitions: Iterable[TopicPartition], conn: BrokerConnection):
    R = m.DescribeProducersRequest
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return R(topics=[R.Topics(name=t, partition_indexes=ps) for t, ps in by_topic.items()]), conn.version_for(61)


def _present(value: int) -> int | None:
    return None if value < 0 else value


def parse_describe_producers(resp) -> dict:
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            producers = [ProducerState(a.producer_id, a.producer_epoch, _present(a.last_sequence),
                                       _present(a.last_timestamp), _present(a.coordinator_epoch),
                                       _present(a.current_txn_start_offset)) for a in p.active_producers]
            out[TopicPartition(t.name, p.partition_index)] = (p.error_code, p.error_message, producers)
    return out


def abort_transaction(spec: AbortTransactionSpec, conn: BrokerConnection):
    R = m.WriteTxnMarkersRequest
    tp = spec.topic_partition
    req = R(markers=[R.Markers(producer_id=spec.producer_id, producer_epoch=spec.producer_epoch,
                               transaction_result=False, coordinator_epoch=spec.coordinator_epoch,
                               topics=[R.Markers.Topics(name=tp.topic, partition_indexes=[tp.partition])])])
    return req, conn.version_for(27, max_version=1)


def parse_write_txn_markers(resp) -> dict:
    return {TopicPartition(t.name, p.partition_index): (p.error_code, None, None)
            for marker in resp.markers for t in marker.topics for p in t.partitions}
