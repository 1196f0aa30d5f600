"""``OffsetLookup`` tries a look-up once more on new connections when a
connection failed, but within the one ``default.api.timeout.ms`` the
look-up was given: a leader that cannot be reached fails a query after one
deadline, not two. The client is a stand-in (no broker): what is under test
is the look-up's own retry and its deadline."""

from __future__ import annotations

import asyncio

import pytest

from kavka.client.errors import ClientConnectionError
from kavka.spark import offset_lookup
from kavka.spark.offset_lookup import OffsetLookup
from kavka.spark.options import parse_source_options


class StandInCluster:
    def __init__(self) -> None:
        self.closed = False

    async def start(self) -> StandInCluster:
        return self

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def clusters(monkeypatch) -> list[StandInCluster]:
    made: list[StandInCluster] = []

    def stand_in(*args, **kwargs) -> StandInCluster:
        made.append(StandInCluster())
        return made[-1]

    monkeypatch.setattr(offset_lookup, "cluster_for", stand_in)
    return made


def lookup(deadline_ms: int) -> OffsetLookup:
    return OffsetLookup(parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
                                              "kafka.default.api.timeout.ms": str(deadline_ms)},
                                             streaming=False))


def test_a_look_up_whose_connection_failed_is_tried_once_more_on_a_new_client(clusters):
    attempts: list[int] = []

    async def request() -> str:
        attempts.append(len(clusters))
        if len(attempts) == 1:
            raise ClientConnectionError("connection to broker 1 lost")
        return "answered"

    with lookup(60_000) as it:
        assert it._run(request) == "answered"
    assert attempts == [1, 2]  # the second on a new client
    assert clusters[0].closed and clusters[1].closed


def test_the_second_try_gets_only_what_is_left_of_the_deadline(clusters):
    attempts: list[str] = []

    async def request() -> str:
        attempts.append("try")
        if len(attempts) == 1:
            await asyncio.sleep(0.3)
            raise ClientConnectionError("connection to broker 1 lost")
        await asyncio.sleep(5)  # an unreachable leader: would answer after the deadline
        return "too late"

    with lookup(600) as it, pytest.raises(ClientConnectionError, match=r"default\.api\.timeout\.ms \(600 ms\)"):
        it._run(request)
    assert attempts == ["try", "try"]


def test_no_second_try_once_the_first_took_the_whole_deadline(clusters):
    attempts: list[str] = []

    async def request() -> str:
        attempts.append("try")
        await asyncio.sleep(0.25)
        raise ClientConnectionError("no answer from broker 1")

    with lookup(200) as it, pytest.raises(ClientConnectionError, match="no answer from broker 1"):
        it._run(request)
    assert attempts == ["try"]
    assert len(clusters) == 1
