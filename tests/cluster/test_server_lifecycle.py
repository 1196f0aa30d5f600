"""A broker process's life as an operator sees it (seed 002 §5.2/§5.3,
seed 003 §2): SIGTERM is a clean shutdown (``.kafka_cleanshutdown`` in every
log directory, exit status 0); a second broker on the same ``log.dirs``, a
bad ``server.properties`` or an unreachable ZooKeeper stop it at startup
with a message naming what is wrong; state changes go to
``state-change.log``; idle connections are closed after
``connections.max.idle.ms``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kavka.protocol.messages import ApiVersionsRequest
from kavka.tools.ports import free_port

from .cluster_helpers import (
    ProducerThread,
    RawConnection,
    consume,
    consume_to_end,
    create_topic,
    leaders,
    produce,
    wait_until,
)

pytestmark = pytest.mark.cluster

MARKER = ".kafka_cleanshutdown"


def _run_broker(tmp_path: Path, props: dict[str, str], timeout: float = 30.0) -> subprocess.CompletedProcess:
    """``kavka server start`` in the foreground, expected to exit by itself."""
    path = tmp_path / f"server-{len(list(tmp_path.glob('server-*.properties')))}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return subprocess.run([sys.executable, "-m", "kavka", "server", "start", str(path)],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_sigterm_writes_the_clean_shutdown_marker_in_every_log_dir_and_exits_0(make_cluster, tmp_path):
    dirs = [tmp_path / "data-a", tmp_path / "data-b"]
    cluster = make_cluster(brokers=1, config={"log.dirs": ",".join(map(str, dirs))})
    create_topic(cluster, "t", partitions=4)
    wait_until(lambda: set(leaders(cluster, "t").values()) == {0}, 20, "leaders of t")
    produce(cluster, "t", {p: [b"r%d" % p] for p in range(4)})
    assert all(any(d.glob("t-*")) for d in dirs), "partitions were not spread over both log dirs"

    assert cluster.stop_broker(0) == 0, cluster.brokers[0].log_tail()
    for d in dirs:
        assert (d / MARKER).is_file(), f"no {MARKER} in {d}"
        assert not (d / ".lock").exists() or _unlocked(d / ".lock")

    # The next start skips recovery, consumes the markers, and has the data.
    cluster.start_broker(0)
    cluster.wait_registered({0}, 30)
    wait_until(lambda: set(leaders(cluster, "t").values()) == {0}, 20, "leaders of t after the restart")
    assert not any((d / MARKER).exists() for d in dirs), "the markers must go once the broker runs again"
    got = consume(cluster, "t", range(4), 4)
    assert got == {p: [b"r%d" % p] for p in range(4)}


def _unlocked(lock: Path) -> bool:
    """Nobody holds an exclusive lock on ``lock`` (we can take one)."""
    import fcntl

    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def test_a_second_broker_on_the_same_log_dirs_fails_naming_the_directory(make_cluster, tmp_path):
    cluster = make_cluster(brokers=1)
    log_dir = cluster.brokers[0].directory / "logs"
    # The same server.properties twice: the directories' lock stops the second.
    out = _run_broker(tmp_path, {"broker.id": "0", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                                 "log.dirs": str(log_dir), "zookeeper.connect": cluster.zk_connect})
    assert out.returncode != 0
    assert str(log_dir) in out.stderr, out.stderr
    assert "lock" in out.stderr.lower(), out.stderr
    assert "Traceback" not in out.stderr
    # Another broker.id on them: meta.properties stops it first, as in Kafka.
    out = _run_broker(tmp_path, {"broker.id": "7", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                                 "log.dirs": str(log_dir), "zookeeper.connect": cluster.zk_connect})
    assert out.returncode != 0
    assert f"{log_dir / 'meta.properties'} records broker.id 0, but broker.id is 7" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    # The running broker is untouched: still registered alone, still serving.
    assert cluster.registered() == {0}
    assert cluster.brokers[0].running()
    with RawConnection(cluster.brokers[0].address) as conn:
        assert conn.request(ApiVersionsRequest(), 0).error_code == 0


@pytest.mark.parametrize("key, value, says", [
    ("num.partitions", "many", ["num.partitions", "many"]),
    ("num.partitons", "3", ["num.partitons"]),
    ("log.cleanup.policy", "shred", ["log.cleanup.policy", "delete", "compact"]),
    ("broker.id", "-5", ["broker.id"]),
])
def test_an_invalid_server_properties_value_fails_naming_the_key(tmp_path, key, value, says):
    props = {"broker.id": "0", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
             "log.dirs": str(tmp_path / "logs"), "zookeeper.connect": "127.0.0.1:1", key: value}
    out = _run_broker(tmp_path, props)
    assert out.returncode == 2, out.stderr
    for word in says:
        assert word in out.stderr, f"{word!r} missing from: {out.stderr}"
    assert "Traceback" not in out.stderr


def test_an_unreachable_zookeeper_fails_the_start_with_a_clear_message(tmp_path):
    zk = f"127.0.0.1:{free_port()}"  # nothing listens there
    out = _run_broker(tmp_path, {"broker.id": "0", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                                 "log.dirs": str(tmp_path / "logs"), "zookeeper.connect": zk,
                                 "zookeeper.connection.timeout.ms": "2000"})
    assert out.returncode == 1, out.stderr
    assert zk in out.stderr and "ZooKeeper" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_listener_port_in_use_fails_the_start_naming_the_port(make_cluster, tmp_path):
    cluster = make_cluster(brokers=1)
    taken = cluster.brokers[0].port
    out = _run_broker(tmp_path, {"broker.id": "7", "listeners": f"PLAINTEXT://127.0.0.1:{taken}",
                                 "log.dirs": str(tmp_path / "logs-7"), "zookeeper.connect": cluster.zk_connect})
    assert out.returncode == 1, out.stderr
    assert str(taken) in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    # It never registered, and the broker owning the port is unaffected.
    assert cluster.registered() == {0}
    with RawConnection(cluster.brokers[0].address) as conn:
        assert conn.request(ApiVersionsRequest(), 0).error_code == 0


def test_state_changes_are_written_to_state_change_log(make_cluster):
    cluster = make_cluster(brokers=2)
    create_topic(cluster, "t", assignment=[[0, 1], [1, 0]], timeout=20)
    wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1}, 20, "leaders of t")
    for b in cluster.brokers.values():
        path = b.directory / "logs" / "state-change.log"
        wait_until(lambda path=path: path.is_file() and "t-0" in path.read_text(), 10, f"{path} to mention t-0")
        text = path.read_text()
        assert f"broker {b.broker_id}" in text
    # The controller's decisions are there too.
    with_controller = [b for b in cluster.brokers.values()
                       if "controller" in (b.directory / "logs" / "state-change.log").read_text().lower()]
    assert with_controller


def test_idle_connections_are_closed_after_connections_max_idle_ms(make_cluster):
    cluster = make_cluster(brokers=1, config={"connections.max.idle.ms": "1000"})
    address = cluster.brokers[0].address
    with RawConnection(address) as idle, RawConnection(address) as busy:
        assert idle.request(ApiVersionsRequest(), 0).error_code == 0
        # A connection in use is not idle: requests every 0.25 s for 3 s.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert busy.request(ApiVersionsRequest(), 0).error_code == 0
            time.sleep(0.25)
        assert idle.closed_by_peer(timeout=10), "the idle connection was not closed"
        assert busy.request(ApiVersionsRequest(), 0).error_code == 0


def test_a_second_broker_with_a_live_broker_id_fails_and_the_first_keeps_its_registration(make_cluster, tmp_path):
    cluster = make_cluster(brokers=1, config={"zookeeper.session.timeout.ms": "2000"})
    before = cluster.registered()
    out = _run_broker(tmp_path, {"broker.id": "0", "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                                 "log.dirs": str(tmp_path / "other-logs"), "zookeeper.connect": cluster.zk_connect,
                                 "zookeeper.session.timeout.ms": "2000"}, timeout=40)
    assert out.returncode == 1, out.stderr
    assert "/brokers/ids/0" in out.stderr and "broker.id" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert cluster.registered() == before and cluster.brokers[0].running()
    assert cluster.serves_metadata(0, {0})


def test_sigterm_while_waiting_to_register_stops_the_broker_cleanly(make_cluster, tmp_path):
    """The waiting of seed 003 must not make a broker deaf to SIGTERM."""
    cluster = make_cluster(brokers=1)  # session timeout 6 s: the newcomer would wait ~17 s
    log_dir = tmp_path / "waiting-logs"
    props = tmp_path / "waiting.properties"
    props.write_text(f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{free_port()}\nlog.dirs={log_dir}\n"
                     f"zookeeper.connect={cluster.zk_connect}\n")
    stderr = tmp_path / "waiting.log"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kavka", "server", "start", str(props)],
                                stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: "waiting up to" in stderr.read_text(), 20, "the broker to wait for /brokers/ids/0")
        proc.terminate()
        assert proc.wait(10) == 0, stderr.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert (log_dir / MARKER).is_file(), stderr.read_text()
    assert cluster.registered() == {0} and cluster.brokers[0].running()


def test_clean_bounces_under_load_skip_recovery_and_lose_nothing(make_cluster):
    """Kafka's clean-bounce system test on one broker: SIGTERM it three
    times while a producer runs. Each stop exits 0 and leaves the marker,
    each start skips recovery, and every acknowledged record is there, in
    order (the producer retries across the restarts)."""
    cluster = make_cluster(brokers=1)
    broker = cluster.brokers[0]
    log_dir = broker.directory / "logs"
    create_topic(cluster, "t")
    wait_until(lambda: leaders(cluster, "t") == {0: 0}, 20, "a leader for t")
    with ProducerThread(cluster.bootstrap, "t", message_timeout_ms=40000) as producer:
        for bounce in range(3):
            wait_until(lambda bounce=bounce: len(producer.acked) > 20 * (bounce + 1), 30,
                       f"records acked before bounce {bounce + 1}")
            assert cluster.stop_broker(0) == 0, broker.log_tail()
            assert (log_dir / MARKER).is_file()
            cluster.start_broker(0)
            cluster.wait_ready({0}, 30)
        wait_until(lambda: len(producer.acked) > 20 * 4, 30, "records acked after the last bounce")
    assert producer.unflushed == 0 and not producer.errors, producer.errors[:5]
    got = consume_to_end(cluster, "t", 0)
    acked = [v for _, v in producer.acked]
    assert not set(acked) - set(got), "acknowledged records lost"
    first = list(dict.fromkeys(got))
    assert first == sorted(first)
    # Only the very first start (an empty directory) went through recovery.
    assert broker.log_path.read_text().count("no clean shutdown marker") == 1
