"""The consumer group coordinator (seed 002 §6.5, §6.8 step 6; Kafka's
GroupCoordinator and GroupMetadataManager): groups live on the broker that
leads their ``__consumer_offsets`` partition, and every change to them is a
record appended there.

- ``coordinator``: ``GroupCoordinator``, what the broker builds and the API
  handlers call; it composes the parts below and moves partitions in and
  out as leadership changes;
- ``metadata_manager``: ``GroupMetadataManager`` — the groups, partition
  ownership, load from the log (``TxnOffsetReplay`` for transactional
  offsets) and writes through the ``GroupLog`` seam;
- ``membership``: ``GroupMembership`` — JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup (the classic rebalance protocol, KIP-345 static members,
  KIP-394 member ids) and session timers;
- ``offsets``: ``GroupOffsets`` — OffsetCommit, OffsetFetch, OffsetDelete,
  offsets of deleted partitions, expiry (KIP-211);
- ``txn_offsets``: ``GroupTxnOffsets`` — TxnOffsetCommit (KIP-98, KIP-447)
  and offsets pending until their marker;
- ``state``: the group state machine, group and member records, the
  partition of a group id;
- ``records``: the key and value formats of ``__consumer_offsets`` records;
- ``consumer_records``: those of consumer-protocol groups (KIP-848, Kafka
  4's record types 3-8), in the same partitions;
- ``consumer_group_replay``: a consumer-protocol group to its records
  (``snapshot``, ``changes``) and back (``ConsumerGroupReplay``, run by the
  load);
- ``config``: ``GroupConfig``;
- ``consumer_membership``: ``ConsumerGroupMembership`` — the
  consumer-protocol groups (KIP-848) by id, ConsumerGroupHeartbeat and
  ConsumerGroupDescribe, session and rebalance timeouts, the member-epoch
  checks of offset commits, the writes of each change before it is
  answered; ``ConsumerGroupConfig`` (``group.consumer.*``);
- ``consumer_group``: ``ConsumerGroup`` — the state machine of a
  consumer-protocol group: group, target assignment and member epochs,
  joins, leaves, static members, fencing (pure);
- ``reconciliation``: a member's steps towards its target assignment
  (revocation first, no partition owned twice);
- ``consumer_assignors``: the server-side assignors ``uniform`` and ``range``.
"""
