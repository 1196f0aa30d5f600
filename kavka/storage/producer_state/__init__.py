"""The state of idempotent and transactional producers kept beside each
partition log (Kafka's ProducerStateManager, KIP-98/KIP-360).

``manager`` (``ProducerStateManager``: the producers of one partition,
updated by appends, loaded from snapshots and the log, cut by truncation)
over ``entry`` (one producer's epoch, last batches and open transaction),
``append_check`` (the leader's checks before an append: fencing, sequence
order, duplicates), ``snapshot`` (the ``<offset>.snapshot`` files) and
``end_txn_marker`` (the coordinator epoch a transaction marker carries).
"""
