"""Kafka's on-disk log: segments, indexes, checkpoints, recovery, retention.

Layout of a log directory (seed 002 §5.2, byte-compatible with Kafka)::

    <log.dir>/.lock                                  flock'ed by the owning broker
    <log.dir>/.kafka_cleanshutdown                   present after a clean shutdown
    <log.dir>/recovery-point-offset-checkpoint       "0", count, "topic partition offset"
    <log.dir>/replication-offset-checkpoint          (high watermarks)
    <log.dir>/log-start-offset-checkpoint
    <log.dir>/cleaner-offset-checkpoint              (the cleaner's)
    <log.dir>/<topic>-<partition>/
        00000000000000000000.log                     v2 record batches as on the wire
        00000000000000000000.index                   8-byte (relative offset, position)
        00000000000000000000.timeindex               12-byte (timestamp, relative offset)
        leader-epoch-checkpoint                      "0", count, "epoch start_offset"

Modules, by Kafka concept: ``log_config`` (topic-level settings),
``offset_index``/``time_index`` (on ``index_file``), ``file_records`` (the
``.log`` file), ``segment`` (+ ``segment_recovery``), ``log`` (+
``log_append`` validation, ``log_roll``, ``log_flush``, ``log_truncation`` over ``log_state``,
``log_offsets`` for ListOffsets, ``log_loader`` for seed 002 §5.3,
``log_transactions`` with ``transaction_index`` for KIP-98's ``.txnindex``),
the idempotent/transactional producer state (``producer_state`` with
``producer_state_entry``, ``producer_append_check``, ``end_txn_marker`` and
``producer_state_snapshot``), ``leader_epoch_cache``,
``checkpoint``, ``retention``, ``log_dir`` (+ ``log_dir_names``: the
partition directory names) and ``log_manager`` (+
``log_manager_config``, and ``log_manager_cleaning``: truncation, deletion
and retention coordinated with the cleaner); the log cleaner (compaction,
seed 002 §5.4.2) is ``cleaner_thread`` (``LogCleaner``, owned and started by
the log manager), ``cleaner_manager``, ``cleaner``, ``offset_map``,
``cleaner_keys``, ``cleaner_segments``, ``cleaner_transactions`` (aborted
data and markers, KIP-98) and ``cleaner_config``; typed errors in ``errors`` carry the
Kafka error-code name.
"""
