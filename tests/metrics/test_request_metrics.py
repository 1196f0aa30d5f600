"""RequestMetrics: the parts of a request's time, per type and version."""

from __future__ import annotations

from kavka.metrics.request_metrics import TIME_PARTS, RequestMetrics
from kavka.protocol.messages import FetchRequest, ProduceRequest

MS = 1_000_000


def test_an_immediate_response_has_no_remote_time() -> None:
    m = RequestMetrics()
    api = m.of(0, ProduceRequest())
    # read at 0, handled 1-3 ms, taken by the writer at 4 ms, sent at 4.5 ms
    api.record(9, 0 * MS + 1, 1 * MS, 3 * MS, 0, 4 * MS, 4 * MS + MS // 2)
    times = dict(zip(TIME_PARTS, (h.quantiles_ms([0.5], now=0.0)[0] for h in api.parts), strict=True))
    assert abs(times["RequestQueueTimeMs"] - 1) < 0.13
    assert abs(times["LocalTimeMs"] - 2) < 0.26
    assert times["RemoteTimeMs"] == 0
    assert abs(times["ResponseQueueTimeMs"] - 1) < 0.13
    assert abs(times["ResponseSendTimeMs"] - 0.5) < 0.07
    assert abs(times["TotalTimeMs"] - 4.5) < 0.57
    assert api.versions == {9: 1}
    assert m.apis["Produce"] is api


def test_a_delayed_response_counts_its_wait_as_remote_time() -> None:
    api = RequestMetrics().of(0, ProduceRequest())
    # handled by 1 ms, ready at 21 ms (acks=all), the writer waited on it since 1 ms
    api.record(9, 1, 1, 1 * MS, 21 * MS, 1 * MS, 22 * MS)
    remote = api.parts[TIME_PARTS.index("RemoteTimeMs")].quantiles_ms([0.5], now=0.0)[0]
    send = api.parts[TIME_PARTS.index("ResponseSendTimeMs")].quantiles_ms([0.5], now=0.0)[0]
    assert abs(remote - 20) < 2.6
    assert abs(send - 1) < 0.13


def test_fetch_is_split_into_consumer_and_follower_as_kafka_names_it() -> None:
    m = RequestMetrics()
    assert m.of(1, FetchRequest(replica_id=-1)).name == "FetchConsumer"
    assert m.of(1, FetchRequest(replica_id=2)).name == "FetchFollower"
    follower_v15 = FetchRequest(replica_state=FetchRequest.ReplicaState(replica_id=1, replica_epoch=7))
    assert m.of(1, follower_v15).name == "FetchFollower"
    assert m.of(3, None).name == "Metadata"
    assert m.of(999, None).name == "999"  # a key the codec does not know never reaches here, but stays apart
