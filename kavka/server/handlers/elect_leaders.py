"""ElectLeaders (key 43, v0-2; KIP-183, KIP-460): preferred (type 0; v0
has no type and means preferred) or unclean (type 1) leader election for
the listed partitions, or every partition when the list is null. Served by
the active controller (``kavka.controller.preferred_election``); any other
broker answers NOT_CONTROLLER (top level from v1, and per partition).

Per partition: NONE, ELECTION_NOT_NEEDED (already led by the preferred
replica / already has a live leader; reported as NONE to v0 clients, which
predate that code), PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. An election the
controller made is answered once this broker's metadata shows the new
leader, or with REQUEST_TIMED_OUT after ``timeout_ms``. Needs ALTER on the
cluster (Kafka's rule), else CLUSTER_AUTHORIZATION_FAILED for the request
(v1+) and every listed partition.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode, KafkaError
from kavka.controller.events import ElectLeaders
from kavka.protocol.messages import ElectLeadersRequest, ElectLeadersResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

if TYPE_CHECKING:
    from kavka.controller.controller import KafkaController

API_KEY = 43
MIN_VERSION = 0
MAX_VERSION = 2
PREFERRED, UNCLEAN = 0, 1


class ElectLeadersHandler:
    def __init__(self, controller: KafkaController, cache: MetadataCache, auth: AuthHelper) -> None:
        self.controller = controller
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext,
                       request: ElectLeadersRequest) -> Awaitable[ElectLeadersResponse] | ElectLeadersResponse:
        version = ctx.api_version
        election_type = request.election_type if version >= 1 else PREFERRED
        wanted = None
        if request.topic_partitions is not None:
            wanted = tuple((t.topic, p) for t in request.topic_partitions for p in t.partitions)
        if not self.auth.authorize_cluster(ctx, AclOperation.ALTER):
            denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return self._response(version, denied, {k: (denied, None) for k in wanted or ()})
        return self._answer(version, election_type, wanted, request.timeout_ms)

    async def _answer(self, version: int, election_type: int, wanted, timeout_ms: int) -> ElectLeadersResponse:
        if election_type not in (PREFERRED, UNCLEAN):
            msg = f"election type {election_type} is neither 0 (preferred) nor 1 (unclean)"
            return self._response(version, ErrorCode.INVALID_REQUEST, {k: (ErrorCode.INVALID_REQUEST, msg) for k in wanted or ()})
        try:
            results = await self.controller.ask(lambda reply: ElectLeaders(reply, partitions=wanted, election_type=election_type))
        except KafkaError as e:  # NOT_CONTROLLER, or the controller failed
            return self._response(version, e.code, {k: (e.code, e.message) for k in wanted or ()})
        out = {(tp.topic, tp.partition): (r.code, r.message) for tp, r in results.items()}
        elected = [k for k, (code, _) in out.items() if code is ErrorCode.NONE]
        if elected and not await self.cache.wait_until(lambda c: all(_shows(c, k, election_type) for k in elected), max(timeout_ms, 0) / 1000):
            for k in elected:
                if not _shows(self.cache, k, election_type):
                    out[k] = (ErrorCode.REQUEST_TIMED_OUT, "the election was made but this broker's metadata does not show it yet")
        if version == 0:
            out = {k: ((ErrorCode.NONE, None) if code is ErrorCode.ELECTION_NOT_NEEDED else (code, m)) for k, (code, m) in out.items()}
        return self._response(version, ErrorCode.NONE, out)

    @staticmethod
    def _response(version: int, top: ErrorCode, results: dict) -> ElectLeadersResponse:
        R = ElectLeadersResponse
        by_topic: dict[str, list] = {}
        for (topic, partition), (code, message) in sorted(results.items()):
            by_topic.setdefault(topic, []).append(
                R.ReplicaElectionResults.PartitionResult(partition_id=partition, error_code=int(code), error_message=None if code is ErrorCode.NONE else message)
            )
        return R(
            throttle_time_ms=0,
            error_code=int(top),
            replica_election_results=[R.ReplicaElectionResults(topic=t, partition_result=ps) for t, ps in by_topic.items()],
        )


def _shows(cache: MetadataCache, key: tuple[str, int], election_type: int) -> bool:
    meta = cache.partition(*key)
    if meta is None:
        return False
    return meta.leader == meta.replicas[0] if election_type == PREFERRED else meta.leader >= 0


def register(dispatcher: Dispatcher, handler: ElectLeadersHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
