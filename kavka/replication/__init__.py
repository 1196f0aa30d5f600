"""Replication: partitions with a leader, an ISR and a high watermark, the
replica manager, and the delayed-operation purgatory (seed 002 §6, seed 000
§Data Replication, seed 001 #3/#7, KIP-101/279/320).

Modules, by Kafka concept:

* ``state`` — values from and to the controller: ``PartitionState`` (one
  LeaderAndIsr entry), ``isr_proposal`` (a proposed ISR write, as
  ``kavka.common``'s ``LeaderIsrAndControllerEpoch``), ``BrokerEndPoint``,
  the request results.
* ``replica`` — a follower's LEO and caught-up time as its leader sees them.
* ``partition`` (+ ``partition_reads``) — one hosted partition: make
  leader/follower, HW = min LEO over the ISR, ISR shrink/expand proposals,
  appends with acks and min.insync.replicas, reads bounded by the HW,
  ListOffsets, OffsetsForLeaderEpoch, KIP-320 epoch checks.
* ``purgatory``, ``delayed_produce``, ``delayed_fetch`` — requests that
  wait (acks=-1 for the ISR, fetches for min_bytes) on the event loop.
* ``isr`` — seams ``IsrWriter`` (conditional state-znode write; a conflict
  fences the leader) and ``IsrChangeListener``
  (``/isr_change_notification``), their ZooKeeper implementations, and the
  propagation schedule; ``isr_updates`` runs them as tasks.
* ``fetcher_manager`` — the ``FetcherManager`` seam and the table of
  followed partitions (``FetcherAssignments``) that the follower fetcher
  builds on.
* ``replica_manager`` (+ ``data_path``) — the broker's entry point:
  LeaderAndIsr, StopReplica, produce, fetch, offsets, DeleteRecords, and
  the isr-expiration / isr-change-propagation tasks.
* ``requests`` — produce/fetch request and result values, error mapping.

Everything runs on the broker's asyncio event loop; the only blocking work
is the log's page-cache appends and reads.
"""
