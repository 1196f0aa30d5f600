"""Who asked for an append (Kafka's ``AppendOrigin``): the leader validates
a client's batches more strictly than a coordinator's, and a follower's
replicated batches not at all (the leader validated them)."""

from __future__ import annotations

from enum import Enum


class AppendOrigin(Enum):
    # A producer through Produce: every rule of the LogValidator.
    CLIENT = "client"
    # The group and transaction coordinators (their topics, the markers):
    # the record rules, not the client-only ones (control batches, sequences).
    COORDINATOR = "coordinator"
    # A follower copying its leader: no record validation.
    REPLICATION = "replication"
