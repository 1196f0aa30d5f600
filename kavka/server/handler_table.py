"""The dispatcher table: which handler module serves which API key.

One module per API under ``kavka.server.handlers``; each declares the
versions it fully implements (``MIN_VERSION``/``MAX_VERSION``), and
ApiVersions advertises exactly those. Adding an API means adding its module
and one line here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kavka.group.coordinator import GroupConfig, GroupCoordinator

from kavka.server.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_partition_reassignments,
    api_versions,
    controlled_shutdown,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from kavka.server.group_wiring import OffsetsTopic, ReplicaGroupLog, leadership_changed, replicas_stopped
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher
from kavka.server.producer_id_manager import ProducerIdManager
from kavka.server.txn_markers import BrokerMarkerWriter
from kavka.server.txn_wiring import (
    ReplicaTransactionLog,
    TransactionStateTopic,
    txn_leadership_changed,
    txn_replicas_stopped,
)
from kavka.transaction.coordinator import TransactionConfig, TransactionCoordinator

if TYPE_CHECKING:
    from kavka.server.admin_manager import AdminManager
    from kavka.server.broker import KafkaServer
    from kavka.server.config_repository import ConfigRepository


def register_all(d: Dispatcher, server: "KafkaServer", admin: "AdminManager", repo: "ConfigRepository") -> None:
    cache = server.metadata_cache
    rm = server.replica_manager
    cfg = server.config
    cluster_id = lambda: server.cluster_id  # noqa: E731
    auto_create = admin.auto_create if cfg["auto.create.topics.enable"] else None

    api_versions.register(d)
    metadata.register(d, metadata.MetadataHandler(cache, cluster_id, auto_create))
    produce.register(d, produce.ProduceHandler(rm, cache))
    fetch.register(d, fetch.FetchHandler(rm, cache))
    list_offsets.register(d, list_offsets.ListOffsetsHandler(rm))
    offset_for_leader_epoch.register(d, offset_for_leader_epoch.OffsetForLeaderEpochHandler(rm))
    delete_records.register(d, delete_records.DeleteRecordsHandler(rm))
    producer_ids = ProducerIdManager(server.broker_id, lambda broker_id: server.zk.claim_producer_id_block(broker_id))
    txns = TransactionCoordinator(
        server.broker_id, TransactionConfig.from_broker(cfg),
        ReplicaTransactionLog(rm, cfg["transaction.state.log.load.buffer.size"]),
        BrokerMarkerWriter(cache, cfg.inter_broker_listener_name, request_timeout_ms=max(cfg["request.timeout.ms"], 1)),
        producer_ids.generate_producer_id)
    init_producer_id.register(d, init_producer_id.InitProducerIdHandler(producer_ids, txns))
    create_topics.register(d, create_topics.CreateTopicsHandler(admin, cache))
    delete_topics.register(d, delete_topics.DeleteTopicsHandler(admin, cache, cfg["delete.topic.enable"]))
    create_partitions.register(d, create_partitions.CreatePartitionsHandler(admin, cache))
    describe_configs.register(d, describe_configs.DescribeConfigsHandler(repo, cache))
    alter_configs.register(d, alter_configs.AlterConfigsHandler(repo, cache))
    incremental_alter_configs.register(d, incremental_alter_configs.IncrementalAlterConfigsHandler(repo, cache))
    describe_log_dirs.register(d, describe_log_dirs.DescribeLogDirsHandler(server.log_manager))
    describe_cluster.register(d, describe_cluster.DescribeClusterHandler(cache, cluster_id))
    groups = GroupCoordinator(server.broker_id, GroupConfig.from_broker(cfg), ReplicaGroupLog(
        rm, cfg["offsets.commit.timeout.ms"], cfg["offsets.load.buffer.size"]))
    leader_and_isr.register(d, leader_and_isr.LeaderAndIsrHandler(
        rm, server.ensure_topic_config, server.broker_epoch,
        lambda states, errors: _leadership_changed(groups, txns, server.broker_id, states, errors)))
    _register_groups(d, groups, OffsetsTopic(groups, cache, admin, cfg), TransactionStateTopic(txns, cache, admin, cfg))
    _register_transactions(d, txns, groups, cache)
    write_txn_markers.register(d, write_txn_markers.WriteTxnMarkersHandler(
        rm, lambda: int(time.time() * 1000), groups.complete_txn_offsets))
    update_metadata.register(d, update_metadata.UpdateMetadataHandler(
        cache, server.broker_epoch, lambda update: _metadata_updated(rm, groups, update)))
    stop_replica.register(d, stop_replica.StopReplicaHandler(
        rm, server.broker_epoch, lambda tps: (replicas_stopped(groups, tps), txn_replicas_stopped(txns, tps))))
    controller = lambda: server.controller  # noqa: E731 - created after the handlers
    controlled_shutdown.register(d, controlled_shutdown.ControlledShutdownHandler(controller))
    elect_leaders.register(d, elect_leaders.ElectLeadersHandler(controller, cache))
    alter_partition_reassignments.register(d, alter_partition_reassignments.AlterPartitionReassignmentsHandler(controller))
    list_partition_reassignments.register(d, list_partition_reassignments.ListPartitionReassignmentsHandler(controller))


def _leadership_changed(groups: GroupCoordinator, txns: TransactionCoordinator, broker_id: int, states,
                        errors) -> None:
    leadership_changed(groups, broker_id, states, errors)
    txn_leadership_changed(txns, broker_id, states, errors)


def _register_transactions(d: Dispatcher, txns: TransactionCoordinator, groups: GroupCoordinator,
                           cache: MetadataCache) -> None:
    """The transaction coordinator's APIs (kavka.transaction)."""
    add_partitions_to_txn.register(d, add_partitions_to_txn.AddPartitionsToTxnHandler(txns, cache))
    add_offsets_to_txn.register(d, add_offsets_to_txn.AddOffsetsToTxnHandler(txns, groups))
    end_txn.register(d, end_txn.EndTxnHandler(txns))
    txn_offset_commit.register(d, txn_offset_commit.TxnOffsetCommitHandler(groups))


def _register_groups(d: Dispatcher, groups: GroupCoordinator, offsets_topic: OffsetsTopic,
                     transaction_topic: TransactionStateTopic) -> None:
    """The group coordinator's APIs (kavka.group) and FindCoordinator."""
    find_coordinator.register(d, find_coordinator.FindCoordinatorHandler(offsets_topic, transaction_topic))
    join_group.register(d, join_group.JoinGroupHandler(groups))
    sync_group.register(d, sync_group.SyncGroupHandler(groups))
    heartbeat.register(d, heartbeat.HeartbeatHandler(groups))
    leave_group.register(d, leave_group.LeaveGroupHandler(groups))
    offset_commit.register(d, offset_commit.OffsetCommitHandler(groups))
    offset_fetch.register(d, offset_fetch.OffsetFetchHandler(groups))
    describe_groups.register(d, describe_groups.DescribeGroupsHandler(groups))
    list_groups.register(d, list_groups.ListGroupsHandler(groups))
    delete_groups.register(d, delete_groups.DeleteGroupsHandler(groups))
    offset_delete.register(d, offset_delete.OffsetDeleteHandler(groups))


def _metadata_updated(rm, groups: GroupCoordinator, update) -> None:
    for tp in _tps(update):
        rm.complete_delayed_requests(tp)
    groups.partitions_deleted(list(update.deleted))


def _tps(update):
    from kavka.common.topic_partition import TopicPartition

    return [TopicPartition(t, p) for t, p in (*update.updated, *update.deleted)]
