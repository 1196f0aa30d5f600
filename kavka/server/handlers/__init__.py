"""One module per Kafka API: its key (``API_KEY``), the versions it fully
implements (``MIN_VERSION``/``MAX_VERSION``), a handler class built by the
broker's composition root with the collaborators it uses, and
``register(dispatcher, handler)``. A handler turns exceptions into
per-partition error codes (docs/ARCHITECTURE.md convention 6). Each
checks what Kafka's request handler checks, through the ``AuthHelper`` it
is given (``kavka.server.authorization``), and answers TOPIC_/GROUP_/
CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED per resource as Kafka does;
the requests only brokers send also pass the ``InterBrokerFence``.

Data path (kavka.replication): ``produce`` (0), ``fetch`` (1),
``list_offsets`` (2), ``offset_for_leader_epoch`` (23), ``delete_records``
(21), ``describe_log_dirs`` (35), ``describe_producers`` (61, KIP-664: the
producers a replica's log remembers).

Metadata and administration: ``metadata`` (3), ``api_versions`` (18),
``describe_cluster`` (60), ``describe_topic_partitions`` (75, KIP-966), ``create_topics`` (19), ``delete_topics`` (20),
``create_partitions`` (37), ``describe_configs`` (32), ``alter_configs``
(33), ``incremental_alter_configs`` (44).

From the controller (seed 000): ``leader_and_isr`` (4), ``stop_replica``
(5), ``update_metadata`` (6). To the controller: ``controlled_shutdown``
(7), ``elect_leaders`` (43), ``alter_partition_reassignments`` (45),
``list_partition_reassignments`` (46).

Authentication (KIP-152), outside a connection's authentication phase
(``kavka.server.authenticator`` answers them during it): ``sasl_handshake``
(17), ``sasl_authenticate`` (36).

ACLs (KIP-140, KIP-290): ``describe_acls`` (29), ``create_acls`` (30),
``delete_acls`` (31), with what they share in ``acl_common``.

Users and client ids: ``describe_client_quotas`` (48),
``alter_client_quotas`` (49) (KIP-546), ``describe_user_scram_credentials``
(50), ``alter_user_scram_credentials`` (51) (KIP-554).

Group coordinator (kavka.group): ``find_coordinator`` (10), ``join_group``
(11), ``heartbeat`` (12), ``leave_group`` (13), ``sync_group`` (14),
``describe_groups`` (15), ``list_groups`` (16), ``offset_commit`` (8),
``offset_fetch`` (9), ``delete_groups`` (42), ``offset_delete`` (47).

Transactions (kavka.transaction, KIP-98): ``init_producer_id`` (22),
``add_partitions_to_txn`` (24), ``add_offsets_to_txn`` (25), ``end_txn``
(26), ``write_txn_markers`` (27), ``txn_offset_commit`` (28); for operators
(KIP-664) ``describe_transactions`` (65) and ``list_transactions`` (66).
"""
