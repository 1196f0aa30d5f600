"""The transaction coordinator (KIP-98): transactional ids' producer ids and
epochs, the partitions of their open transactions and their outcome, kept
as records in the compacted ``__transaction_state`` topic.

* ``state`` — the transaction states and their valid previous states, and
  ``TransactionMetadata`` (one transactional id's current value);
  ``partition_for`` (an id's ``__transaction_state`` partition).
* ``records`` — the key and value layout of ``__transaction_state``.
* ``coordinator`` — ``TransactionCoordinator``: its answers to
  InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn;
  ownership by ``__transaction_state`` partition leadership, load and
  resume, writes (``TransactionLog`` seam), the end of a transaction
  (markers through the ``MarkerWriter`` seam), timeouts and id expiry;
  ``TransactionConfig``.

The server builds the coordinator and its seams (``kavka.server``'s
transaction wiring and marker writer); everything runs on the broker's
event loop.
"""
