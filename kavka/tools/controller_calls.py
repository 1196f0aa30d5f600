"""What ``kavka reassign-partitions`` and ``kavka preferred-replica-election``
share: one request to the active controller with Kafka's retry rule, the
cluster's present replica assignment, and per-partition result tables.

ElectLeaders (43), AlterPartitionReassignments (45) and
ListPartitionReassignments (46) are served only by the controller; any other
broker answers NOT_CONTROLLER (retriable), after which the metadata — and
with it the controller id — is refreshed and the request sent again until
the deadline. Runs on the command-line process's event loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from kavka.client.cluster import Cluster
from kavka.common.errors import ErrorCode, error_for
from kavka.protocol.messages import Request, Response
from kavka.tools.client_cli import CliError

Assignment = dict[tuple[str, int], tuple[int, ...]]
R = TypeVar("R", bound=Response)


async def controller_request(cluster: Cluster, body: Request[R], deadline_ms: int, what: str) -> R:
    """``body`` to the controller; a top-level error (NOT_CONTROLLER is
    retried) is raised as the typed error."""
    async def attempt() -> R:
        controller = await cluster.controller_id()
        resp = await cluster.send(controller, body)
        code = getattr(resp, "error_code", 0)
        if code:
            message = getattr(resp, "error_message", None)
            raise error_for(code, f"{what}: {message or ErrorCode.of(code).message}")
        return resp
    return await cluster.call(attempt, deadline_ms=deadline_ms)


async def current_assignment(cluster: Cluster, topics: Iterable[str]) -> Assignment:
    """(topic, partition) -> replicas of every partition of ``topics``; a
    topic the cluster does not have is a CliError naming it."""
    names = sorted(set(topics))
    md = await cluster.refresh_metadata(names)
    out: Assignment = {}
    for name in names:
        t = md.topics.get(name)
        if t is None or t.error not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE) or not t.partitions:
            raise CliError(f"topic '{name}' does not exist")
        for p in t.partitions:
            out[(name, p.partition)] = tuple(p.replicas)
    return out


def partition_codes(results: Iterable[tuple[str, int, int, str | None]]) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
    """(topic, partition, error_code, message) rows -> a table by partition."""
    return {(t, p): (ErrorCode.of(code), message) for t, p, code, message in results}
