"""The ZooKeeper-era path of the replication tools (``--zookeeper``): read
topic assignments and live brokers from ZooKeeper and hand a request to the
controller by creating its ``/admin`` znode, as the seed's tools do (seed
000 §Kafka Reassign Partitions Tool 原理 1, §Preferred Replica Leader
Election Tool 原理 1). The controller watches those znodes, does the work
and deletes them; the tool exits at once.

Znodes and JSON: ``kavka.zk.brokers.TopicZNode`` (``/brokers/topics/<t>``),
``/brokers/ids/<id>``, ``kavka.zk.admin.ReassignPartitionsZNode`` and
``PreferredReplicaElectionZNode``. A pending request of the same kind makes
the tool refuse rather than overwrite it (the controller reads it once).

One short-lived kazoo session per run, synchronous; called from a
command-line process only.
"""

from __future__ import annotations

from collections.abc import Iterable

from kavka.tools.client_cli import CliError
from kavka.zk.admin import (
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)
from kavka.zk.brokers import BrokerIdZNode, TopicZNode

BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
CONNECT_TIMEOUT_S = 15

Assignment = dict[tuple[str, int], tuple[int, ...]]


class ZkAdmin:
    """A kazoo session on ``connect`` (``host:port[,host:port][/chroot]``);
    use as a context manager."""

    def __init__(self, connect: str) -> None:
        from kazoo.client import KazooClient  # imported only on the --zookeeper path

        self.connect = connect
        self._client = KazooClient(hosts=connect)

    def __enter__(self) -> ZkAdmin:
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            self._client.start(CONNECT_TIMEOUT_S)
        except KazooTimeoutError:
            self._client.close()
            raise CliError(f"cannot reach ZooKeeper at {self.connect} within {CONNECT_TIMEOUT_S} s") from None
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        from kazoo.exceptions import KazooException

        self._client.stop()
        self._client.close()
        if isinstance(exc, KazooException):
            # Connection loss, session expiry, no auth...: one Error line, not a traceback.
            raise CliError(f"ZooKeeper at {self.connect} failed: {type(exc).__name__} {exc}".rstrip()) from None

    def _children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return self._client.get_children(path)
        except NoNodeError:
            return []

    def live_brokers(self) -> set[int]:
        return {int(c) for c in self._children(BROKER_IDS_PATH) if c.isdigit()}

    def broker_racks(self) -> dict[int, str | None]:
        """Each registered broker's ``rack`` from ``/brokers/ids/<id>``
        (None: no ``broker.rack``); a broker gone meanwhile is left out."""
        from kazoo.exceptions import NoNodeError

        out: dict[int, str | None] = {}
        for broker_id in sorted(self.live_brokers()):
            path = BrokerIdZNode.path(broker_id)
            try:
                data, _ = self._client.get(path)
            except NoNodeError:
                continue
            out[broker_id] = BrokerIdZNode.decode(data, path).rack
        return out

    def topics(self) -> list[str]:
        return sorted(self._children(TOPICS_PATH))

    def assignment(self, topics: Iterable[str], *, missing_ok: bool = False) -> Assignment:
        """(topic, partition) -> replicas from ``/brokers/topics/<topic>``.
        During a reassignment these are OAR + RAR (seed 000 step 1)."""
        from kazoo.exceptions import NoNodeError

        out: Assignment = {}
        for topic in sorted(set(topics)):
            path = TopicZNode.path(topic)
            try:
                data, _ = self._client.get(path)
            except NoNodeError:
                if missing_ok:
                    continue
                raise CliError(f"topic '{topic}' does not exist") from None
            node = TopicZNode.decode(data, path)
            out.update({(topic, p): tuple(r) for p, r in node.partitions.items()})
        return out

    def pending_reassignment(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """The partitions of ``/admin/reassign_partitions`` (empty when none)."""
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._client.get(REASSIGN_PARTITIONS_PATH)
        except NoNodeError:
            return {}
        return ReassignPartitionsZNode.decode(data).as_dict()

    def _create(self, path: str, data: bytes, busy: str) -> None:
        from kazoo.exceptions import NodeExistsError

        try:
            self._client.create(path, data, makepath=True)
        except NodeExistsError:
            raise CliError(busy) from None

    def create_reassignment(self, moves: Iterable[tuple[str, int, tuple[int, ...]]]) -> None:
        self._create(REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode(tuple(moves)).encode(),
                     f"there is an existing assignment running ({REASSIGN_PARTITIONS_PATH} exists); "
                     f"wait for it (--verify) before starting another")

    def create_preferred_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._create(PREFERRED_REPLICA_ELECTION_PATH, PreferredReplicaElectionZNode(tuple(partitions)).encode(),
                     f"a preferred replica election is in progress ({PREFERRED_REPLICA_ELECTION_PATH} exists); "
                     f"try again when it is done")
