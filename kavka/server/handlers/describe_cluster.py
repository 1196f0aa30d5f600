"""DescribeCluster (key 60, KIP-700): cluster id, controller id and the live
brokers with their endpoint for the listener the request came in on.
``endpoint_type`` 2 (KRaft controllers) does not exist in a ZooKeeper
cluster: UNSUPPORTED_ENDPOINT_TYPE. No broker is ever fenced here.
``cluster_authorized_operations`` (when asked for, KIP-430): the operations
the session may do on the cluster, 0 without DESCRIBE on it (Kafka's rule).
"""

from __future__ import annotations

from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeClusterRequest, DescribeClusterResponse
from kavka.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kavka.server.authorization import AUTHORIZED_OPERATIONS_OMITTED, AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 60
MIN_VERSION = 0
MAX_VERSION = 2
ENDPOINT_BROKERS = 1


class DescribeClusterHandler:
    def __init__(self, cache: MetadataCache, cluster_id: Callable[[], str | None], auth: AuthHelper) -> None:
        self.cache = cache
        self.cluster_id = cluster_id
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
        R = DescribeClusterResponse
        endpoint_type = request.endpoint_type if ctx.api_version >= 1 else ENDPOINT_BROKERS
        if endpoint_type != ENDPOINT_BROKERS:
            return R(error_code=int(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE), endpoint_type=endpoint_type,
                     error_message="this is a ZooKeeper cluster: only broker endpoints (endpoint_type 1) exist",
                     cluster_id=self.cluster_id() or "")
        brokers = []
        for b in self.cache.alive_brokers():
            ep = b.endpoint(ctx.listener)
            if ep is not None:
                brokers.append(R.Brokers(broker_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if request.include_cluster_authorized_operations:
            operations = (self.auth.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                          if self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE) else 0)
        return R(
            throttle_time_ms=0, error_code=int(ErrorCode.NONE), error_message=None,
            endpoint_type=endpoint_type, cluster_id=self.cluster_id() or "",
            controller_id=self.cache.controller_id, brokers=brokers,
            cluster_authorized_operations=operations,
        )


def register(dispatcher: Dispatcher, handler: DescribeClusterHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
