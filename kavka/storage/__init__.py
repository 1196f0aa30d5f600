"""Kafka's on-disk log: segments, indexes, checkpoints, recovery, retention.

Layout of a log directory (seed 002 §5.2, byte-compatible with Kafka)::

    <log.dir>/.lock                                  flock'ed by the owning broker
    <log.dir>/.kafka_cleanshutdown                   present after a clean shutdown
    <log.dir>/meta.properties                        version=0, broker.id, cluster.id
    <log.dir>/recovery-point-offset-checkpoint       "0", count, "topic partition offset"
    <log.dir>/replication-offset-checkpoint          (high watermarks)
    <log.dir>/log-start-offset-checkpoint
    <log.dir>/cleaner-offset-checkpoint              (the cleaner's)
    <log.dir>/<topic>-<partition>/
        00000000000000000000.log                     v2 record batches as on the wire
        00000000000000000000.index                   8-byte (relative offset, position)
        00000000000000000000.timeindex               12-byte (timestamp, relative offset)
        00000000000000000000.txnindex                34-byte aborted transactions (KIP-98)
        00000000000000000000.snapshot                producer state at that offset (KIP-98)
        leader-epoch-checkpoint                      "0", count, "epoch start_offset"

The log, by level of abstraction (as Kafka cuts it):

* ``segment``: one ``LogSegment`` (``.log`` in ``file_records``, the
  indexes of ``index/``); ``segment_recovery`` is its recovery scan.
* ``log_segments``: ``LogSegments``, a log's segments in base-offset order
  and their lookup by offset.
* ``local_log``: ``LocalLog``, the segments on this broker's disk with the
  log end offset, recovery point, roll, flush, truncation, reads, segment
  removal and compaction's swap, and the ``.txnindex`` entries (KIP-98).
* ``log``: ``Log`` (Kafka's UnifiedLog), the local log plus the log start
  offset, high watermark and last stable offset, producer state,
  leader-epoch cache and append validation; its docstring traces a produce.
  Beside it: ``log_append`` (validation and offset assignment of appended
  batches), ``log_validator`` (Kafka's LogValidator: every record of a
  leader append walked, timestamps, keys of compacted topics, LogAppendTime,
  the topic's compression.type; ``append_origin`` says whose append it is),
  ``log_loader`` (loading and recovery, seed 002 §5.3),
  ``log_offsets`` (ListOffsets by timestamp), ``retention`` (seed 002
  §5.4.1), ``leader_epoch_cache`` (KIP-101), ``log_config`` (topic-level
  settings), ``fetch_data_info`` (what reads return) and
  ``read_buffers`` (the reused buffers a Fetch's large reads land in).
* ``log_manager``: ``LogManager``, every log of the broker over its
  ``log.dirs`` (each a ``log_dir``, with its ``checkpoint`` files), its
  periodic jobs and the cleaner it owns; settings in ``log_manager_config``.
* ``log_dir_failure_channel``: ``LogDirFailureChannel`` (KIP-112), where
  every I/O error reports its log directory, once, for the replica manager
  to take that directory offline.
* ``broker_metadata``: ``meta.properties`` in each log directory, which
  broker and cluster it belongs to (Kafka's BrokerMetadataCheckpoint).

Subpackages: ``index`` (``index_file`` under ``offset_index`` and
``time_index``, each opened on first use through ``lazy_index``;
``transaction_index``, the ``.txnindex``), ``producer_state``
(idempotent and transactional producers, KIP-98: ``manager``, ``entry``,
``append_check``, ``snapshot``, ``end_txn_marker``) and ``cleaner`` (log
compaction, seed 002 §5.4.2: ``thread``, ``manager``, ``cleaner``,
``offset_map``, ``keys``, ``segments``, ``transactions``, ``config``).

Also: ``log_dir_names`` (a partition's directory name and its
``-delete`` name, parsed back into ``kavka.common``'s ``TopicPartition``)
and ``errors``, typed errors carrying the Kafka error-code name. The clock
is ``kavka.common.clock``.
"""
