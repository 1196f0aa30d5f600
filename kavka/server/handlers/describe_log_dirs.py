"""DescribeLogDirs (key 35): per log directory of this broker, the
partitions it holds with their size in bytes (v4+: the disk's total and
usable bytes). ``topics`` null means every partition. A directory that
cannot be read, or that failed (KIP-112: an I/O error took it offline),
reports KAFKA_STORAGE_ERROR. ``offset_lag`` is 0: Kavka has
no future (intra-broker move) replicas, whose lag the field measures.
Needs DESCRIBE on the cluster (Kafka's rule), else CLUSTER_AUTHORIZATION_FAILED
(v3+ carry the code) and no directories.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterable
from pathlib import Path

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.storage.log_manager import LogManager

API_KEY = 35
MIN_VERSION = 0
MAX_VERSION = 4


class DescribeLogDirsHandler:
    def __init__(self, log_manager: LogManager, auth: AuthHelper) -> None:
        self.log_manager = log_manager
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
        version = ctx.api_version
        R = DescribeLogDirsResponse
        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE):
            return R(throttle_time_ms=0, error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), results=[])
        wanted = None
        if request.topics is not None:
            wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
        held: list[tuple[TopicPartition, Path, int]] = []  # (partition, its directory, its size)
        for tp, log in sorted(self.log_manager.all_logs().items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            if wanted is not None and (tp.topic, tp.partition) not in wanted:
                continue
            directory = self.log_manager.log_dir_of(tp.topic, tp.partition)
            if directory is None:
                continue
            held.append((tp, directory, log.size_in_bytes()))
        # Resolving paths and reading disk usage are file system calls: off the event loop.
        log_dirs = self.log_manager.config.log_dirs
        resolved, usage = await asyncio.to_thread(_inspect, [*log_dirs, *(d for _, d, _ in held)])
        per_dir: dict[str, dict[str, list]] = {resolved[d]: {} for d in log_dirs}
        for tp, directory, size in held:
            per_dir.setdefault(resolved[directory], {}).setdefault(tp.topic, []).append(
                R.Results.Topics.Partitions(partition_index=tp.partition, partition_size=size,
                                            offset_lag=0, is_future_key=False))
        offline = {resolved[d] for d in log_dirs if not self.log_manager.is_log_dir_online(d)}
        results = []
        for dir_name, topics in per_dir.items():
            entry = R.Results(error_code=int(ErrorCode.NONE), log_dir=dir_name, topics=[
                R.Results.Topics(name=name, partitions=parts) for name, parts in topics.items()])
            disk = usage[dir_name]
            if disk is None or dir_name in offline:  # KIP-112: a failed directory
                entry.error_code = int(ErrorCode.KAFKA_STORAGE_ERROR)
                entry.topics = []
            elif version >= 4:
                entry.total_bytes, entry.usable_bytes = disk
            results.append(entry)
        return R(throttle_time_ms=0, error_code=int(ErrorCode.NONE), results=results)


def _inspect(dirs: Iterable[str | Path]) -> tuple[dict[str | Path, str], dict[str, tuple[int, int] | None]]:
    """Each directory's resolved path (symlinks followed), and the total and
    free bytes of each resolved directory's disk (None: it cannot be read)."""
    resolved = {d: str(Path(d).resolve()) for d in dirs}
    usage: dict[str, tuple[int, int] | None] = {}
    for path in set(resolved.values()):
        try:
            disk = shutil.disk_usage(path)
        except OSError:
            usage[path] = None
        else:
            usage[path] = (disk.total, disk.free)
    return resolved, usage


def register(dispatcher: Dispatcher, handler: DescribeLogDirsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
