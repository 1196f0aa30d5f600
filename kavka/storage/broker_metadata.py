"""``meta.properties``: which broker and which cluster a log directory
belongs to (Kafka's BrokerMetadataCheckpoint, ZooKeeper mode).

Each directory of ``log.dirs`` holds, once a broker has started on it::

    #
    #<when it was written>
    version=0
    broker.id=1001
    cluster.id=2nqn6fnsQ5aISlfqxeTyHA

At startup, before the logs are loaded (Kafka's KafkaServer.startup):

- every directory's file is read (a missing one is fine: a new directory);
  two directories that disagree stop the broker, naming both files — one
  broker's data copied into another's directories, or two brokers sharing
  one;
- a ``version`` other than 0 is KRaft's (``node.id``), refused;
- a stored ``cluster.id`` other than the one in ZooKeeper's ``/cluster/id``
  stops the broker (InconsistentClusterIdException: the broker is joining
  the wrong cluster; ``zookeeper.connect`` may be wrong);
- ``resolve_broker_id``: a configured ``broker.id`` that differs from the
  stored one stops the broker (InconsistentBrokerIdException); with
  ``broker.id=-1`` the stored id is used, and without one a new id is
  generated from ZooKeeper's ``/brokers/seqid`` above
  ``reserved.broker.max.id`` (``broker.id.generation.enable``).

Once the logs are loaded the file is written to every directory that lacks
it or holds less (``write``, atomically and durably, as the checkpoints), so
that a broker started with ``broker.id=-1`` keeps its generated id across
restarts.

Every error is a ``BrokerMetadataError`` naming the file. Blocking file
I/O: call from a thread.
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kavka.common.config import ConfigError, load_properties
from kavka.storage.checkpoint import write_durably

META_PROPERTIES = "meta.properties"
ZK_VERSION = 0  # KRaft writes version 1 (node.id); ZooKeeper-mode brokers only 0
logger = logging.getLogger(__name__)

MAX_META_PROPERTIES_BYTES = 64 << 10  # bound the read of a damaged or foreign file


class BrokerMetadataError(Exception):
    """``meta.properties`` is unreadable, malformed, or disagrees with the
    config, ZooKeeper or another directory (Kafka's
    InconsistentBrokerIdException, InconsistentClusterIdException,
    InconsistentBrokerMetadataException); the message starts with the file."""

    def __init__(self, message: str, path: str | os.PathLike[str], cause: OSError | None = None) -> None:
        self.path = os.fspath(path)
        detail = f" ({cause.strerror or cause})" if cause is not None else ""
        super().__init__(f"{self.path} {message}{detail}")


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """What one ``meta.properties`` holds."""

    broker_id: int
    cluster_id: str | None = None

    def to_text(self, now: datetime.datetime | None = None) -> str:
        stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%a %b %d %H:%M:%S UTC %Y")
        lines = ["#", f"#{stamp}", f"version={ZK_VERSION}", f"broker.id={self.broker_id}"]
        if self.cluster_id is not None:
            lines.append(f"cluster.id={self.cluster_id}")
        return "\n".join(lines) + "\n"


def meta_properties_path(log_dir: str | Path) -> Path:
    return Path(log_dir) / META_PROPERTIES


def read(log_dir: str | Path) -> BrokerMetadata | None:
    """The directory's ``meta.properties``; None when it has none."""
    path = meta_properties_path(log_dir)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_META_PROPERTIES_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BrokerMetadataError("cannot be read", path, e) from e
    if len(raw) > MAX_META_PROPERTIES_BYTES:
        raise BrokerMetadataError(f"is larger than {MAX_META_PROPERTIES_BYTES} bytes: not a meta.properties", path)
    try:
        props = load_properties(raw.decode("utf-8"), source=str(path))
    except UnicodeDecodeError as e:
        raise BrokerMetadataError(f"is not UTF-8 text (byte {e.start})", path) from None
    except ConfigError as e:
        raise BrokerMetadataError(f"is not a properties file ({e})", path) from None
    return parse(props, path)


def parse(props: Mapping[str, str], path: Path) -> BrokerMetadata:
    version = props.get("version", str(ZK_VERSION))  # a missing version is 0, as in Kafka
    if version != str(ZK_VERSION):
        raise BrokerMetadataError(
            f"has version={version}: a ZooKeeper-mode broker reads version 0 only (version 1 is written by a "
            "KRaft node); this directory belongs to a KRaft cluster", path)
    raw_id = props.get("broker.id")
    if raw_id is None:
        raise BrokerMetadataError("has no broker.id", path)
    try:
        broker_id = int(raw_id)
    except ValueError:
        broker_id = -1
    if broker_id < 0 or str(broker_id) != raw_id.strip():
        raise BrokerMetadataError(f"has broker.id={raw_id!r}, not an id >= 0", path)
    cluster_id = props.get("cluster.id") or None
    return BrokerMetadata(broker_id, cluster_id)


def load(log_dirs: Iterable[str | Path], offline: set[str] | None = None) -> BrokerMetadata | None:
    """The metadata the directories agree on (None if none has a file);
    directories that disagree raise, naming each file and what it holds.
    With ``offline`` given, a directory whose file cannot be read for an
    I/O error is added to it and skipped instead (Kafka's
    getBrokerMetadataAndOfflineDirs: a failed disk at startup, KIP-112)."""
    found: dict[Path, BrokerMetadata] = {}
    for d in log_dirs:
        try:
            m = read(d)
        except BrokerMetadataError as e:
            if offline is None or not isinstance(e.__cause__, OSError):
                raise
            logger.error("Fail to read %s under log directory %s: %s", META_PROPERTIES, d, e)
            offline.add(str(d))
            continue
        if m is not None:
            found[meta_properties_path(d)] = m
    if len(set(found.values())) > 1:
        listing = "; ".join(f"{path}: broker.id={m.broker_id}, cluster.id={m.cluster_id}"
                            for path, m in sorted(found.items()))
        raise BrokerMetadataError(
            "is not consistent across log.dirs (multiple brokers sharing a log directory, or part of another "
            f"broker's data copied in): {listing}", next(iter(sorted(found))))
    return next(iter(found.values()), None)


def check_cluster_id(stored: BrokerMetadata | None, cluster_id: str, log_dirs: Iterable[str | Path]) -> None:
    """InconsistentClusterIdException: the directories belong to another cluster."""
    if stored is not None and stored.cluster_id is not None and stored.cluster_id != cluster_id:
        path = _path_holding(stored, log_dirs)
        raise BrokerMetadataError(
            f"records cluster.id {stored.cluster_id}, but the cluster in ZooKeeper (/cluster/id) is {cluster_id}: "
            "the broker is trying to join the wrong cluster; zookeeper.connect may be wrong", path)


def resolve_broker_id(configured: int, stored: BrokerMetadata | None, log_dirs: Iterable[str | Path], *,
                      generation_enabled: bool) -> int | None:
    """The broker's id (Kafka's getOrGenerateBrokerId): the configured one,
    which must match a stored one; else the stored one; None when neither
    exists and ``broker.id.generation.enable`` lets the caller generate one
    (``broker.id=-1``)."""
    if stored is not None:
        if configured >= 0 and configured != stored.broker_id:
            raise BrokerMetadataError(
                f"records broker.id {stored.broker_id}, but broker.id is {configured}: if you moved your data, "
                "make sure the configured broker.id matches; if you intend to create a new broker, remove all data "
                "in its data directories (log.dirs)", _path_holding(stored, log_dirs))
        return stored.broker_id
    if configured >= 0:
        return configured
    if not generation_enabled:
        raise ConfigError("broker.id", "is -1 and no log directory records an id (meta.properties), but "
                                       "broker.id.generation.enable is false; set broker.id to an id >= 0")
    return None


def write(log_dirs: Iterable[str | Path], metadata: BrokerMetadata) -> list[Path]:
    """Write ``meta.properties`` where it is missing or differs; returns the
    files written."""
    written = []
    for d in log_dirs:
        if read(d) != metadata:
            path = meta_properties_path(d)
            write_durably(path, metadata.to_text())
            written.append(path)
    return written


def _path_holding(stored: BrokerMetadata, log_dirs: Iterable[str | Path]) -> Path:
    for d in log_dirs:
        if read(d) == stored:
            return meta_properties_path(d)
    raise AssertionError("the stored metadata came from one of the directories")
