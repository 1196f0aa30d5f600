"""ZooKeeper session expiry of a live broker (seed 002 §9, seed 003 §2 and
§4), with real processes.

The mechanism is the one seed 003 names first: the broker stands still
(SIGSTOP — a long GC pause or a hung host) for longer than
``zookeeper.session.timeout.ms``, so ZooKeeper expires its session and
deletes its ephemeral znodes; then it runs again (SIGCONT), learns the
session is gone, and must register again under a new session: a new
``/brokers/ids/<id>`` whose czxid (the broker epoch) is larger. If it was
the controller, another broker has taken over meanwhile and it must not
act as controller any more.

The ZOOKEEPER-1740 case (seed 003): the broker finds ``/brokers/ids/<id>``
still present, owned by another session; it must wait for that node to go
rather than give up or carry on unregistered.
"""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from .cluster_helpers import (
    ZkView,
    consume,
    create_topic,
    leaders,
    metadata_from,
    produce,
    produce_error,
    set_topic_config,
    wait_until,
)

pytestmark = pytest.mark.cluster

SESSION_TIMEOUT_MS = 2000
CONFIG = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)}


def _pause_until_expired(cluster, zk: ZkView, broker_id: int) -> None:
    """SIGSTOP the broker and wait until ZooKeeper dropped its registration."""
    cluster.pause_broker(broker_id)
    try:
        wait_until(lambda: broker_id not in zk.broker_ids(), 20, f"/brokers/ids/{broker_id} to expire")
    except BaseException:
        cluster.resume_broker(broker_id)
        raise


def _serves_its_partition(cluster, topic: str, broker_id: int, before: list[bytes]) -> None:
    """The broker leads its RF=1 partition again, takes new records and
    serves the old ones."""
    wait_until(lambda: leaders(cluster, topic).get(broker_id) == broker_id, 30,
               f"broker {broker_id} to lead partition {broker_id} of {topic} again")
    # idempotent: the partition is read back exactly, and the broker has just come back
    produce(cluster, topic, {broker_id: [b"after-expiry"]}, idempotent=True)
    got = consume(cluster, topic, [broker_id], len(before) + 1)
    assert got[broker_id] == before + [b"after-expiry"]


def test_the_controller_paused_past_its_session_re_registers_and_control_moves(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    with ZkView(cluster) as zk:
        old_id, old_epoch = wait_until(zk.controller, 20, "a controller")
        create_topic(cluster, "t", assignment=[[0], [1], [2]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1, 2: 2}, 20, "leaders of t")
        before = [b"before-%d" % i for i in range(20)]
        produce(cluster, "t", {old_id: before})
        old_czxid, old_session = zk.broker_registration(old_id)

        _pause_until_expired(cluster, zk, old_id)
        try:
            new_id, new_epoch = wait_until(lambda: (c := zk.controller()) and c[0] != old_id and c, 20,
                                           "another broker to become controller")
        finally:
            cluster.resume_broker(old_id)
        assert new_epoch > old_epoch

        czxid, session = wait_until(lambda: zk.broker_registration(old_id), 30,
                                    f"broker {old_id} to register again")
        assert czxid > old_czxid and session != old_session
        # It stepped down: every broker, itself included, names the new controller.
        for b in cluster.brokers.values():
            wait_until(lambda b=b: metadata_from(b.address).controller_id == new_id, 20,
                       f"broker {b.broker_id} to name controller {new_id}")
        _serves_its_partition(cluster, "t", old_id, before)
        assert zk.controller() == (new_id, new_epoch)
        assert cluster.brokers[old_id].running()


def test_a_broker_paused_past_its_session_re_registers_and_leads_again(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    with ZkView(cluster) as zk:
        ctrl, epoch = wait_until(zk.controller, 20, "a controller")
        victim = (ctrl + 1) % 3
        create_topic(cluster, "t", assignment=[[0], [1], [2]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1, 2: 2}, 20, "leaders of t")
        before = [b"before-%d" % i for i in range(20)]
        produce(cluster, "t", {victim: before})
        old_czxid, _ = zk.broker_registration(victim)

        _pause_until_expired(cluster, zk, victim)
        try:
            # The controller saw it die: its partition has no leader.
            wait_until(lambda: zk.partition_state("t", victim).leader == -1, 20,
                       f"partition {victim} to go offline")
        finally:
            cluster.resume_broker(victim)

        czxid, _ = wait_until(lambda: zk.broker_registration(victim), 30, f"broker {victim} to register again")
        assert czxid > old_czxid
        _serves_its_partition(cluster, "t", victim, before)
        assert zk.controller() == (ctrl, epoch)
        # Its watches were lost with the session: it must still follow
        # dynamic config changes (seed 002 §8) made after the expiry.
        set_topic_config(cluster, "t", {"max.message.bytes": "200"})
        wait_until(lambda: produce_error(cluster, "t", ctrl, b"x" * 1000) == "MSG_SIZE_TOO_LARGE", 20,
                   f"broker {ctrl} (never expired) to apply the new max.message.bytes of t")
        wait_until(lambda: produce_error(cluster, "t", victim, b"x" * 1000) == "MSG_SIZE_TOO_LARGE", 20,
                   f"broker {victim} to apply the new max.message.bytes of t")


def test_a_registration_left_by_another_session_is_waited_out(make_cluster):
    """ZOOKEEPER-1740 as seed 003 tells it: after the expiry the broker's
    znode is still there (here: held by a stand-in session); the broker
    waits, registers once it is gone, and serves again."""
    cluster = make_cluster(brokers=2, config=CONFIG)
    with ZkView(cluster) as zk:
        ctrl, _ = wait_until(zk.controller, 20, "a controller")
        victim = 1 - ctrl
        create_topic(cluster, "t", assignment=[[0], [1]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 20, "leaders of t")
        before = [b"before"]
        produce(cluster, "t", {victim: before})
        path = f"/brokers/ids/{victim}"
        registration, _ = zk.client.get(path)

        _pause_until_expired(cluster, zk, victim)
        stale = KazooClient(hosts=cluster.zk_connect)
        stale.start(15)
        try:
            stale.create(path, registration, ephemeral=True)
            stale_owner = zk.client.exists(path).ephemeralOwner
            cluster.resume_broker(victim)
            # Running again, it finds its session expired and the node of
            # another session; for as long as that node stays, the broker
            # neither deletes it nor exits: it waits (and keeps serving).
            wait_until(lambda: metadata_from(cluster.brokers[victim].address).brokers, 20,
                       f"broker {victim} to answer again")
            time.sleep(2 * SESSION_TIMEOUT_MS / 1000)
            assert zk.client.exists(path).ephemeralOwner == stale_owner
            assert cluster.brokers[victim].running()
        finally:
            cluster.resume_broker(victim)
            stale.stop()  # the "old session" finally ends: its node goes
            stale.close()

        czxid, owner = wait_until(lambda: (r := zk.broker_registration(victim)) and r[1] != stale_owner and r, 30,
                                  f"broker {victim} to register under its own session")
        _serves_its_partition(cluster, "t", victim, before)


def test_a_broker_restarted_at_once_waits_out_its_previous_session(make_cluster):
    """kill -9 and start again before ZooKeeper noticed: the old process's
    /brokers/ids/<id> still stands (its session lives until the timeout);
    the new process waits for it to go, registers with a new broker epoch,
    and the controller hands it its partitions again."""
    cluster = make_cluster(brokers=2, config=CONFIG)
    with ZkView(cluster) as zk:
        ctrl, _ = wait_until(zk.controller, 20, "a controller")
        victim = 1 - ctrl
        create_topic(cluster, "t", assignment=[[0], [1]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 20, "leaders of t")
        before = [b"before-%d" % i for i in range(10)]
        produce(cluster, "t", {victim: before})
        old_czxid, old_session = zk.broker_registration(victim)

        cluster.kill_broker(victim)
        cluster.start_broker(victim)
        czxid, session = wait_until(lambda: (r := zk.broker_registration(victim)) and r[1] != old_session and r, 30,
                                    f"broker {victim} to register under its new session")
        assert czxid > old_czxid
        _serves_its_partition(cluster, "t", victim, before)


def _leaders_known_by(address: str, topic: str) -> dict[int, int]:
    """partition -> leader in this broker's own Metadata answer."""
    md = metadata_from(address, [topic])
    return {p.partition_index: p.leader_id for t in md.topics if t.name == topic and t.error_code == 0
            for p in t.partitions if p.error_code == 0}


def test_a_short_zookeeper_hang_keeps_sessions_and_the_data_path(make_cluster, zk_server):
    """Seed 003 §2 "Zookeeper Hang", shorter than the session timeout:
    produce and fetch on existing leaders do not need ZooKeeper and go on;
    when it answers again the sessions are intact (same registrations,
    same controller) and topics can be created."""
    cluster = make_cluster(brokers=2, config={"zookeeper.session.timeout.ms": "8000"})
    with ZkView(cluster) as zk:
        create_topic(cluster, "t", assignment=[[0], [1]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 20, "leaders of t")
        # "Existing leaders" as every broker's own metadata cache knows them:
        # the admin client above may have asked a broker the controller's
        # UpdateMetadata reached first, and a broker that does not know t
        # yet would take the producer's Metadata request for an
        # auto-creation, which needs ZooKeeper.
        for b in cluster.brokers.values():
            wait_until(lambda b=b: _leaders_known_by(b.address, "t") == {0: 0, 1: 1}, 20,
                       f"broker {b.broker_id} to know the leaders of t")
        registrations = {b: zk.broker_registration(b) for b in (0, 1)}
        controller = zk.controller()
        zk_server.pause()
        try:
            produce(cluster, "t", {0: [b"a0", b"a1"], 1: [b"b0"]}, timeout=10)
            got = consume(cluster, "t", [0, 1], 3, timeout=10)
        finally:
            zk_server.resume()
        assert got == {0: [b"a0", b"a1"], 1: [b"b0"]}
        wait_until(lambda: zk.controller() is not None, 20, "ZooKeeper to answer again")
        assert {b: zk.broker_registration(b) for b in (0, 1)} == registrations
        assert zk.controller() == controller
        create_topic(cluster, "after", assignment=[[1], [0]])
        wait_until(lambda: leaders(cluster, "after") == {0: 1, 1: 0}, 20, "leaders of 'after'")


def test_a_zookeeper_hang_past_the_session_timeout_is_survived(make_cluster, zk_server):
    """Seed 003 §2: a hang longer than the session timeout, when the
    controller and the brokers may all "fail" at once. On resuming,
    ZooKeeper expires the overdue sessions, unless a client reconnects
    first and keeps its own (a race the server decides). Either way, every
    broker ends up registered — re-registered under a new broker epoch if
    its session expired — a controller holds an epoch (a newer one if the
    old controller's session expired), and the cluster creates topics and
    serves the old and new data."""
    cluster = make_cluster(brokers=2, config=CONFIG)
    with ZkView(cluster) as zk:
        create_topic(cluster, "t", assignment=[[0], [1]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 20, "leaders of t")
        produce(cluster, "t", {0: [b"a0"], 1: [b"b0"]})
        old = {b: zk.broker_registration(b) for b in (0, 1)}
        old_controller, old_epoch = zk.controller()
        zk_server.pause()
        try:
            time.sleep(3 * SESSION_TIMEOUT_MS / 1000)  # the hang itself: longer than the sessions last
        finally:
            zk_server.resume()

        def registered_again():
            now = {b: zk.broker_registration(b) for b in (0, 1)}
            # Kept its session (same node) or a new one (a newer node).
            return all(r is not None and (r == old[b] or r[0] > old[b][0]) for b, r in now.items()) and now

        now = wait_until(registered_again, 30, "both brokers to be registered")
        controller, epoch = wait_until(zk.controller, 30, "a controller")
        if now[old_controller] != old[old_controller]:
            assert epoch > old_epoch  # the old controller's session expired: a new epoch
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 30, "leaders of t again")
        create_topic(cluster, "after", assignment=[[1], [0]])
        wait_until(lambda: leaders(cluster, "after") == {0: 1, 1: 0}, 20, "leaders of 'after'")
        produce(cluster, "t", {0: [b"a1"], 1: [b"b1"]})
        assert consume(cluster, "t", [0, 1], 4) == {0: [b"a0", b"a1"], 1: [b"b0", b"b1"]}
        assert all(b.running() for b in cluster.brokers.values())
