"""The schema tables, one module per group of APIs (API keys in
parentheses); each exposes ``APIS: list[Api]`` and ``registry()`` finds
every module here.

* ``core`` — Produce (0), Fetch (1), Metadata (3), ApiVersions (18).
* ``offsets`` — ListOffsets (2), OffsetCommit (8), OffsetFetch (9),
  DeleteRecords (21), OffsetForLeaderEpoch (23).
* ``inter_broker`` — the controller's requests to brokers: LeaderAndIsr (4),
  StopReplica (5), UpdateMetadata (6), ControlledShutdown (7).
* ``groups`` — the classic group APIs: FindCoordinator (10), JoinGroup (11),
  Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15),
  ListGroups (16).
* ``next_gen_groups`` — KIP-848: ConsumerGroupHeartbeat (68),
  ConsumerGroupDescribe (69).
* ``admin_topics`` — CreateTopics (19), DeleteTopics (20).
* ``admin`` — DescribeLogDirs (35), CreatePartitions (37), DeleteGroups (42),
  ElectLeaders (43), AlterPartitionReassignments (45),
  ListPartitionReassignments (46), OffsetDelete (47), DescribeCluster (60),
  DescribeProducers (61).
* ``configs`` — DescribeConfigs (32), AlterConfigs (33),
  IncrementalAlterConfigs (44).
* ``auth_producer`` — SaslHandshake (17), InitProducerId (22);
  ``sasl`` — SaslAuthenticate (36).
* ``transactions`` — AddPartitionsToTxn (24), AddOffsetsToTxn (25),
  EndTxn (26), WriteTxnMarkers (27), TxnOffsetCommit (28).
* ``acls`` — DescribeAcls (29), CreateAcls (30), DeleteAcls (31).
* ``client_quotas`` — DescribeClientQuotas (48), AlterClientQuotas (49).
* ``scram_credentials`` — DescribeUserScramCredentials (50),
  AlterUserScramCredentials (51).
* ``telemetry`` — KIP-714: GetTelemetrySubscriptions (71), PushTelemetry (72).
"""
