"""The dispatcher table: which handler module serves which API key.

One module per API under ``kavka.server.handlers``; each declares its key
(``API_KEY``) and the versions it fully implements (``MIN_VERSION``/
``MAX_VERSION``), and ApiVersions advertises exactly those. The handlers
themselves, with everything they depend on, are built by the broker's
composition root (``kavka.server.broker``). Adding an API means adding its
module, one line here and its construction there.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

from kavka.server.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
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
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from kavka.server.network import Dispatcher, Handler

# Every API this broker serves besides ApiVersions (which answers from the
# dispatcher itself), in API key order.
API_MODULES: tuple[ModuleType, ...] = (
    produce,  # 0
    fetch,  # 1
    list_offsets,  # 2
    metadata,  # 3
    leader_and_isr,  # 4
    stop_replica,  # 5
    update_metadata,  # 6
    controlled_shutdown,  # 7
    offset_commit,  # 8
    offset_fetch,  # 9
    find_coordinator,  # 10
    join_group,  # 11
    heartbeat,  # 12
    leave_group,  # 13
    sync_group,  # 14
    describe_groups,  # 15
    list_groups,  # 16
    sasl_handshake,  # 17
    create_topics,  # 19
    delete_topics,  # 20
    delete_records,  # 21
    init_producer_id,  # 22
    offset_for_leader_epoch,  # 23
    add_partitions_to_txn,  # 24
    add_offsets_to_txn,  # 25
    end_txn,  # 26
    write_txn_markers,  # 27
    txn_offset_commit,  # 28
    describe_acls,  # 29
    create_acls,  # 30
    delete_acls,  # 31
    describe_configs,  # 32
    alter_configs,  # 33
    describe_log_dirs,  # 35
    sasl_authenticate,  # 36
    create_partitions,  # 37
    delete_groups,  # 42
    elect_leaders,  # 43
    incremental_alter_configs,  # 44
    alter_partition_reassignments,  # 45
    list_partition_reassignments,  # 46
    offset_delete,  # 47
    describe_client_quotas,  # 48
    alter_client_quotas,  # 49
    describe_user_scram_credentials,  # 50
    alter_user_scram_credentials,  # 51
    describe_cluster,  # 60
    describe_producers,  # 61
    describe_transactions,  # 65
    list_transactions,  # 66
    consumer_group_heartbeat,  # 68
    consumer_group_describe,  # 69
    describe_topic_partitions,  # 75
)


def register_all(dispatcher: Dispatcher, handlers: Mapping[int, Handler]) -> None:
    """Register ``handlers`` (API key -> handler) for every API of
    ``API_MODULES``, with the versions its module serves, and ApiVersions.
    A missing or an unknown key is a wiring mistake: refused here, at
    startup."""
    keys = {m.API_KEY for m in API_MODULES}
    missing, unknown = keys - set(handlers), set(handlers) - keys
    if missing or unknown:
        raise ValueError(f"handlers missing for API keys {sorted(missing)}, unknown API keys {sorted(unknown)}")
    api_versions.register(dispatcher)
    for module in API_MODULES:
        dispatcher.register(module.API_KEY, handlers[module.API_KEY], module.MIN_VERSION, module.MAX_VERSION)
