"""Replication: partitions with a leader, an ISR and a high watermark, the
replica manager, the follower's fetchers, and the delayed-operation
purgatory (seed 002 §6, seed 000 §Data Replication, seed 001 #3/#7,
KIP-101/279/320).

Modules, by Kafka concept:

* ``state`` — values from and to the controller: ``PartitionState`` (one
  LeaderAndIsr entry), ``isr_proposal`` (a proposed ISR write, as
  ``kavka.common``'s ``LeaderIsrAndControllerEpoch``), ``BrokerEndPoint``,
  the LeaderAndIsr and StopReplica results.
* ``requests`` — produce/fetch/offset request and result values
  (``FetchIsolation``, ``FetchParams``, ``LogReadResult``...), error mapping.
* ``replica`` — ``Replica``: a follower's LEO and caught-up time as its
  leader sees them.
* ``partition`` — ``Partition``: one hosted partition: make
  leader/follower, HW = min LEO over the ISR, ISR shrink/expand proposals,
  appends with acks and min.insync.replicas, reads bounded by the HW or
  LSO, ListOffsets, OffsetsForLeaderEpoch, KIP-320 epoch checks.
* ``isr`` — seams ``IsrWriter`` (conditional state-znode write; a conflict
  fences the leader) and ``IsrChangeListener``
  (``/isr_change_notification``), their ZooKeeper implementations, and the
  propagation schedule ``IsrChangePropagation``.
* ``log_dir_events`` — the seam ``LogDirEventNotifier`` and its ZooKeeper
  implementation: ``/log_dir_event_notification`` tells the controller
  that a log directory of this broker failed (KIP-112).
* ``isr_updates`` — ``IsrUpdates``: runs the writes and the
  "isr-expiration" / "isr-change-propagation" tasks on the event loop.
* ``purgatory`` — ``DelayedOperation`` and ``DelayedOperationPurgatory``.
* ``delayed_produce`` — ``DelayedProduce``: acks=-1 waiting for the HW.
* ``delayed_fetch`` — ``DelayedFetch`` (waiting for ``min_bytes``) and
  ``read_from_local_log``, the read across a Fetch's partitions.
* ``fetch_session`` — incremental fetch sessions, the leader's side
  (KIP-227): ``FetchManager``, ``FetchSessionCache`` and the fetch
  contexts that say which partitions a Fetch reads and which its answer
  carries.
* ``quota`` — replication throttling (seed 002 §8, KIP-73): the
  ``ReplicationQuota`` token bucket, ``LeaderReplicationQuota``, which
  partitions each side throttles.
* ``replica_manager`` — ``ReplicaManager``, the broker's entry point:
  LeaderAndIsr, StopReplica, produce, fetch, offsets, DeleteRecords, the
  ISR tasks; its class docstring walks the produce and fetch routes.
* ``fetcher/`` — the follower side (seed 002 §6.7): ``assignments`` (the
  ``FetcherManager`` seam and the table of followed partitions),
  ``manager`` (``ReplicaFetcherManager``), ``task`` (``ReplicaFetcher``,
  one fetch task per leader), ``state`` (a partition's fetch state and
  KIP-279's truncation point), ``config`` (``ReplicaFetcherConfig``),
  ``leader_endpoint`` (the ``LeaderEndPoint`` seam),
  ``remote_leader_endpoint`` (it over the Kafka wire) and
  ``fetch_session_handler`` (the follower's half of a fetch session).

Everything runs on the broker's asyncio event loop; the only blocking work
is the log's page-cache appends and reads.
"""
