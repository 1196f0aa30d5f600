"""Typed ids and the "none" sentinels, with Kafka's names.

The ``NewType`` ids cost nothing at run time (they are plain ``int``s) and
let a type checker tell a broker id from a leader epoch in the central
signatures (partition state, the LeaderAndIsr value, the controller
context):

- ``BrokerId``: ``broker.id``; a replica's id is its broker's (seed 000).
- ``LeaderEpoch``: bumped by the controller at every leader change (seed 000,
  KIP-101 truncation by epoch).
- ``ControllerEpoch``: the version of ``/controller_epoch``; fences a deposed
  controller's requests and writes (seed 001).
- ``BrokerEpoch``: the czxid of ``/brokers/ids/<id>`` (KIP-380); fences
  requests meant for an earlier incarnation of a broker.
- ``ProducerId`` / ``ProducerEpoch``: an idempotent or transactional
  producer and its generation (KIP-98).

Sentinels: ``NO_LEADER`` and ``NO_EPOCH`` are -1, what Kafka writes on the
wire (Metadata, LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown, Fetch's current leader epoch) and in the partition
state znode (``"leader": -1``) for "no leader" and "no / unknown epoch":
a partition without a live leader, a request that does not fence on an
epoch, a leader epoch not known yet. ``NO_PRODUCER_ID`` and
``NO_PRODUCER_EPOCH`` are -1 for "no producer" (InitProducerId before a
producer has an id, the producer state of the log; KIP-98); the record
batch header's own defaults are the codec's, in
``kavka.protocol.records.batch``, with the same values.

Pure values; any thread.
"""

from __future__ import annotations

from typing import NewType

BrokerId = NewType("BrokerId", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ControllerEpoch = NewType("ControllerEpoch", int)
BrokerEpoch = NewType("BrokerEpoch", int)
ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)

NO_LEADER = BrokerId(-1)
"""No leader: the partition is offline, or its leader is not known."""

NO_EPOCH = -1
"""No epoch: unknown, or "do not fence" in a request (leader, controller or broker epoch)."""

NO_PRODUCER_ID = ProducerId(-1)
NO_PRODUCER_EPOCH = ProducerEpoch(-1)
