"""Which broker a data directory belongs to, as an operator sees it
(Kafka's meta.properties and broker id generation): a broker started with
``broker.id=-1`` takes an id above ``reserved.broker.max.id`` from
ZooKeeper's ``/brokers/seqid``, serves real clients under it, records it in
``meta.properties`` in every log directory and keeps it across restarts;
started on those directories with another ``broker.id``, or against another
cluster, it refuses to start, naming the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .cluster_helpers import ZkView, admin, consume, create_topic, produce, wait_until

pytestmark = pytest.mark.cluster


def set_props(path: Path, **changes: str) -> None:
    """Replace keys of a server.properties (dots as double underscores)."""
    lines = path.read_text().splitlines()
    keys = {k.replace("__", "."): v for k, v in changes.items()}
    lines = [line for line in lines if line.split("=", 1)[0] not in keys]
    path.write_text("\n".join(lines + [f"{k}={v}" for k, v in keys.items()]) + "\n")


def meta(log_dir: Path) -> dict[str, str]:
    text = (log_dir / "meta.properties").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_a_generated_broker_id_is_served_kept_and_checked(make_cluster, zk_chroot):
    cluster = make_cluster(brokers=2, config={"reserved.broker.max.id": "100"})
    b = cluster.brokers[1]
    dirs = [b.directory / "logs-a", b.directory / "logs-b"]
    cluster.stop_broker(1)
    set_props(b.properties, broker__id="-1", log__dirs=",".join(map(str, dirs)))
    cluster.start_broker(1)
    with ZkView(cluster) as zk:
        wait_until(lambda: zk.broker_ids() == {0, 101}, 60, "broker 1 registered under the generated id 101")
        cluster_id = json.loads(zk.client.get("/cluster/id")[0])["id"]
        seqid_version = zk.client.exists("/brokers/seqid").version
    assert seqid_version == 1
    md = admin(cluster).list_topics(timeout=20)
    assert set(md.brokers) == {0, 101}

    create_topic(cluster, "identity", partitions=2, assignment=[[101, 0], [0, 101]])
    produce(cluster, "identity", {0: [b"a%d" % i for i in range(50)], 1: [b"b%d" % i for i in range(50)]})
    for d in dirs:
        assert meta(d) == {"version": "0", "broker.id": "101", "cluster.id": cluster_id}

    # Restarted with broker.id=-1: the id the directories record, not a new one.
    cluster.stop_broker(1)
    cluster.start_broker(1)
    with ZkView(cluster) as zk:
        wait_until(lambda: zk.broker_ids() == {0, 101}, 60, "broker 101 back under its recorded id")
        assert zk.client.exists("/brokers/seqid").version == 1
    cluster.stop_broker(0)  # the partitions are read from broker 101 alone
    got = consume(cluster_without(cluster, 0), "identity", [0, 1], 100, timeout=60)
    assert got[0] == [b"a%d" % i for i in range(50)] and got[1] == [b"b%d" % i for i in range(50)]

    # Another configured id on the same directories: refused, naming the file.
    cluster.stop_broker(1)
    set_props(b.properties, broker__id="7")
    cluster.start_broker(1)
    assert b.popen().wait(60) == 1
    out = b.log_path.read_text()
    assert re.search(r"meta\.properties records broker\.id 101, but broker\.id is 7", out), out[-2000:]
    assert str(dirs[0] / "meta.properties") in out or str(dirs[1] / "meta.properties") in out

    # The same directories pointed at another cluster: refused too.
    other = zk_chroot + "-other"
    set_props(b.properties, broker__id="-1", zookeeper__connect=other)
    cluster.start_broker(1)
    assert b.popen().wait(60) == 1
    out = b.log_path.read_text()
    assert re.search(f"records cluster.id {cluster_id}, but the cluster in ZooKeeper", out), out[-2000:]
    assert "join the wrong cluster" in out


def cluster_without(cluster, stopped: int):
    """The cluster as a client bootstraps it once broker ``stopped`` is down."""

    class View:
        bootstrap = ",".join(b.address for i, b in cluster.brokers.items() if i != stopped)

    return View()
