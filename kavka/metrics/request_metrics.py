"""``RequestMetrics``: Kafka's RequestMetrics per request type, measured by
the socket server (``kavka.server.network``: each
connection records its requests).

For each request, as Kafka's RequestChannel splits it (times in ms):

- RequestQueueTimeMs: from its last byte read to its handler starting
  (waiting behind the connection's earlier requests: a connection's
  requests are handled in order);
- LocalTimeMs: its handler, from decoding to the response or to the
  delayed operation it parked in a purgatory; a Fetch waits out its long
  poll (the DelayedFetch) inside its handler, so here, unlike in Kafka,
  a fetch's park is local time;
- RemoteTimeMs: waiting in the purgatory (acks=all produce) until the
  delayed response is ready, including any wait behind an earlier
  response of the connection (Kavka writes responses in order);
- ResponseQueueTimeMs: a ready response waiting for the connection's
  writer;
- ResponseSendTimeMs: encoding it and handing it to the transport;
- TotalTimeMs: all of it.

RequestsPerSec counts requests per type and version. Fetch is split into
FetchConsumer and FetchFollower, as Kafka names it.

Event loop only (the connections record, the metrics scrape reads).
"""

from __future__ import annotations

from kavka.common.latency import LatencyHistogram
from kavka.protocol.schema import registry

FETCH_KEY = 1
# The time parts in the order ``ApiRequestMetrics.record`` takes them, by Kafka's metric names.
TIME_PARTS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs", "ResponseSendTimeMs",
              "TotalTimeMs")


class ApiRequestMetrics:
    """One request type's histograms (``parts``, in ``TIME_PARTS`` order)
    and its request count per version."""

    __slots__ = ("name", "parts", "versions")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts = tuple(LatencyHistogram() for _ in TIME_PARTS)
        self.versions: dict[int, int] = {}

    def record(self, version: int, read_ns: int, start_ns: int, local_end_ns: int, ready_ns: int,
               picked_ns: int, sent_ns: int) -> None:
        """One answered request: when its last byte was read, its handler
        started and returned, its response was ready, the writer took it
        up, and it was handed to the transport."""
        self.versions[version] = self.versions.get(version, 0) + 1
        queue, local, remote, response_queue, send, total = self.parts
        if read_ns:
            queue.record_ns(start_ns - read_ns)
        else:
            read_ns = start_ns
        local.record_ns(local_end_ns - start_ns)
        if ready_ns > local_end_ns:  # delayed: waited in the purgatory
            remote.record_ns(ready_ns - local_end_ns)
            response_queue.record_ns(0)
        else:
            remote.record_ns(0)
            response_queue.record_ns(picked_ns - local_end_ns)
        send.record_ns(sent_ns - max(ready_ns, picked_ns))
        total.record_ns(sent_ns - read_ns)


class RequestMetrics:
    """Every request type's ``ApiRequestMetrics`` (made on first use)."""

    def __init__(self) -> None:
        self.apis: dict[str, ApiRequestMetrics] = {}
        self._names = {key: api.name for key, api in registry().items()}

    def of(self, api_key: int, body: object) -> ApiRequestMetrics:
        """The metrics of a request with ``api_key`` (``body`` decoded:
        Fetch is a consumer's or a follower's by its replica id)."""
        name = self._names.get(api_key, str(api_key))
        if api_key == FETCH_KEY:
            state = getattr(body, "replica_state", None)
            replica = getattr(state, "replica_id", -1) if state is not None else -1
            if replica < 0:
                replica = getattr(body, "replica_id", -1)
            name = "FetchFollower" if replica is not None and replica >= 0 else "FetchConsumer"
        metrics = self.apis.get(name)
        if metrics is None:
            metrics = self.apis[name] = ApiRequestMetrics(name)
        return metrics
