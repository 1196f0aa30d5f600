"""``ControllerStats``: what Kafka's ControllerStats timers and meters
count, kept by a broker's controller component across its epochs.

- ``leader_elections``: the time of each round of leader elections the
  controller ran (offline partitions after a broker failure, new
  partitions, preferred, reassignment, controlled shutdown): Kafka's
  LeaderElectionRateAndTimeMs.
- ``unclean_elections``: leaders elected from outside the ISR
  (``unclean.leader.election.enable``): Kafka's UncleanLeaderElectionsPerSec.

Written by the controller's event task, read by the metrics scrape, both
on the event loop.
"""

from __future__ import annotations

from kavka.common.latency import LatencyHistogram


class ControllerStats:
    """See the module docstring."""

    def __init__(self) -> None:
        self.leader_elections = LatencyHistogram()
        self.unclean_elections = 0
