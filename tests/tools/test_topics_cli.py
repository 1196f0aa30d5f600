"""``kavka topics`` as a subprocess against a real 3-broker cluster: create
(counts, explicit assignment, configs), list, describe (kafka-topics.sh
lines, filters), alter (partitions, configs), delete, and the errors —
already exists, unknown topic, broker refusals, bad options, no broker —
each one ``Error:`` line with a non-zero exit code."""

from __future__ import annotations

import time

import pytest

from kavka.tools.ports import free_port


def _partition_lines(out: str) -> dict[int, dict[str, str]]:
    """``--describe`` partition lines -> {partition: {field: value}}."""
    parts = {}
    for line in out.splitlines():
        if line.startswith("\tTopic:"):
            fields = dict(f.split(": ", 1) for f in line.strip("\t").split("\t"))
            parts[int(fields["Partition"])] = fields
    return parts


def _topic_line(out: str, topic: str) -> dict[str, str]:
    for line in out.splitlines():
        if line.startswith(f"Topic: {topic}\t"):
            return dict(f.split(": ", 1) if ": " in f else (f.rstrip(":"), "") for f in line.split("\t"))
    raise AssertionError(f"no topic line for {topic} in {out!r}")


def _describe_until(kavka, bs: str, topic: str, ready, *extra: str, timeout: float = 30) -> str:
    """Describe until ``ready(stdout)`` holds (leaders are elected and
    metadata propagated asynchronously); bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        r = kavka("topics", "--bootstrap-server", bs, "--describe", "--topic", topic, *extra)
        assert r.returncode == 0, r.stderr
        if ready(r.stdout) or time.monotonic() > deadline:
            return r.stdout
        time.sleep(0.2)


def _all_led(n: int):
    return lambda out: len(_partition_lines(out)) == n and all(
        p["Leader"] != "none" for p in _partition_lines(out).values())


@pytest.mark.cluster
def test_topic_lifecycle(make_cluster, kavka):
    cluster = make_cluster(brokers=3)
    bs = cluster.bootstrap
    t = ("topics", "--bootstrap-server", bs)

    r = kavka(*t, "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1",
              "--config", "retention.ms=123456")
    assert (r.returncode, r.stdout) == (0, "Created topic orders.\n"), r.stderr
    r = kavka(*t, "--create", "--topic", "pinned", "--replica-assignment", "0:1,1:2,2:0")
    assert r.returncode == 0, r.stderr

    r = kavka(*t, "--list")
    assert r.returncode == 0 and {"orders", "pinned"} <= set(r.stdout.split()), r

    out = _describe_until(kavka, bs, "orders", _all_led(3))
    head = _topic_line(out, "orders")
    assert (head["PartitionCount"], head["ReplicationFactor"], head["Configs"]) == ("3", "1", "retention.ms=123456")
    assert len(head["TopicId"]) == 22 and head["TopicId"] != "A" * 22
    parts = _partition_lines(out)
    assert sorted(parts) == [0, 1, 2]
    assert {p["Leader"] for p in parts.values()} == {"0", "1", "2"}  # RF=1 topics spread over the brokers
    assert all(p["Replicas"] == p["Isr"] == p["Leader"] for p in parts.values())

    out = _describe_until(kavka, bs, "pinned", _all_led(3))
    assert _topic_line(out, "pinned")["ReplicationFactor"] == "2"
    assert [_partition_lines(out)[i]["Replicas"] for i in range(3)] == ["0,1", "1,2", "2,0"]
    assert [_partition_lines(out)[i]["Leader"] for i in range(3)] == ["0", "1", "2"]  # preferred leaders

    # A regex selects both; --under-replicated-partitions prints nothing for healthy RF=1 partitions.
    r = kavka(*t, "--describe", "--topic", "orders|pinned")
    assert {line.split("\t")[0] for line in r.stdout.splitlines() if not line.startswith("\t")} == \
        {"Topic: orders", "Topic: pinned"}
    # DescribeTopicPartitions (KIP-966) a partition per response: the same description, paged.
    paged = kavka(*t, "--describe", "--topic", "orders|pinned", "--partition-size-limit-per-response", "1")
    assert (paged.returncode, paged.stdout) == (0, r.stdout), paged.stderr
    r = kavka(*t, "--describe", "--topic", "orders", "--under-replicated-partitions")
    assert (r.returncode, r.stdout) == (0, "")
    # pinned (ISR of 2) with min.insync.replicas=3 is under it; orders (ISR of 1, default 1) is at it.
    assert kavka(*t, "--alter", "--topic", "pinned", "--config", "min.insync.replicas=3").returncode == 0
    r = kavka(*t, "--describe", "--topic", "orders|pinned", "--under-min-isr-partitions")
    assert r.returncode == 0 and {line.split("\t")[1] for line in r.stdout.splitlines()} == {"Topic: pinned"}
    assert len(r.stdout.splitlines()) == 3
    r = kavka(*t, "--describe", "--topic", "orders|pinned", "--at-min-isr-partitions")
    assert r.returncode == 0 and {line.split("\t")[1] for line in r.stdout.splitlines()} == {"Topic: orders"}

    r = kavka(*t, "--alter", "--topic", "orders", "--partitions", "5")
    assert r.returncode == 0 and "5 partitions" in r.stdout, r.stderr
    assert len(_partition_lines(_describe_until(kavka, bs, "orders", _all_led(5)))) == 5
    r = kavka(*t, "--alter", "--topic", "orders", "--partitions", "2")
    assert r.returncode == 1 and r.stderr.startswith("Error:") and "only increase" in r.stderr

    r = kavka(*t, "--alter", "--topic", "orders", "--config", "cleanup.policy=compact",
              "--delete-config", "retention.ms")
    assert r.returncode == 0, r.stderr
    out = _describe_until(kavka, bs, "orders", lambda o: _topic_line(o, "orders")["Configs"] == "cleanup.policy=compact")
    assert _topic_line(out, "orders")["Configs"] == "cleanup.policy=compact"

    # Broker 2 stops: the RF=1 partitions it led have no leader left.
    on_2 = sorted(p for p, f in _partition_lines(out).items() if f["Leader"] == "2")
    cluster.stop_broker(2)
    out = _describe_until(kavka, bs.split(",")[0], "orders",
                          lambda o: sorted(_partition_lines(o)) == on_2, "--unavailable-partitions")
    assert sorted(_partition_lines(out)) == on_2 and all(
        f["Leader"] == "none" for f in _partition_lines(out).values())
    cluster.start_broker(2)
    cluster.wait_registered({2})

    r = kavka(*t, "--delete", "--topic", "pinned")
    assert (r.returncode, r.stdout) == (0, "Deleted topic pinned.\n"), r.stderr
    r = kavka(*t, "--list")
    assert "pinned" not in r.stdout.split() and "orders" in r.stdout.split()


@pytest.mark.cluster
def test_topic_errors_from_the_cluster(make_cluster, kavka):
    cluster = make_cluster(brokers=3)
    t = ("topics", "--bootstrap-server", cluster.bootstrap)
    assert kavka(*t, "--create", "--topic", "dup", "--partitions", "1").returncode == 0

    r = kavka(*t, "--create", "--topic", "dup", "--partitions", "1")
    assert (r.returncode, r.stderr) == (1, "Error: topic 'dup' already exists\n")
    r = kavka(*t, "--create", "--topic", "dup", "--if-not-exists")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")

    for action in ("--describe", "--delete"):
        r = kavka(*t, action, "--topic", "missing")
        assert (r.returncode, r.stderr) == (1, "Error: topic 'missing' does not exist\n")
        r = kavka(*t, action, "--topic", "missing", "--if-exists")
        assert (r.returncode, r.stdout) == (0, "")
    r = kavka(*t, "--alter", "--topic", "missing", "--partitions", "3")
    assert r.returncode == 1 and "does not exist" in r.stderr

    r = kavka(*t, "--create", "--topic", "toomany", "--partitions", "1", "--replication-factor", "4")
    assert r.returncode == 1 and "INVALID_REPLICATION_FACTOR" in r.stderr, r.stderr
    r = kavka(*t, "--create", "--topic", "bad/name", "--partitions", "1")
    assert r.returncode == 1 and "INVALID_TOPIC_EXCEPTION" in r.stderr, r.stderr
    r = kavka(*t, "--create", "--topic", "badconf", "--config", "cleanup.policy=sometimes")
    assert r.returncode == 1 and r.stderr.startswith("Error: topic 'badconf'"), r.stderr
    for line in (r.stderr,):
        assert "Traceback" not in line


@pytest.mark.parametrize("args, words", [
    (["--list", "--create"], "not allowed with"),
    (["--topic", "x"], "one of the arguments"),
    (["--create"], "--create needs --topic"),
    (["--create", "--topic", "x", "--replica-assignment", "0:1,1:x"], "partition 1"),
    (["--create", "--topic", "x", "--replica-assignment", "0:0"], "twice"),
    (["--create", "--topic", "x", "--replica-assignment", "0,1", "--partitions", "2"], "leave out --partitions"),
    (["--create", "--topic", "x", "--partitions", "0"], "at least 1"),
    (["--create", "--topic", "x", "--config", "retention.ms"], "not KEY=VALUE"),
    (["--list", "--partitions", "3"], "--partitions cannot be used with --list"),
    (["--alter", "--topic", "x"], "--alter needs"),
    (["--describe", "--partition-size-limit-per-response", "0"], "at least 1"),
    (["--list", "--partition-size-limit-per-response", "5"], "cannot be used with --list"),
])
def test_bad_options_exit_2_before_connecting(kavka, args, words):
    # Port 1 is never a broker: these must fail before any connection.
    r = kavka("topics", "--bootstrap-server", "127.0.0.1:1", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_no_broker_is_a_clear_error(kavka):
    port = free_port()
    r = kavka("topics", "--bootstrap-server", f"127.0.0.1:{port}", "--list", timeout=30)
    assert r.returncode == 1 and r.stderr.startswith("Error: no broker reachable") and "Traceback" not in r.stderr
    r = kavka("topics", "--bootstrap-server", "localhost", "--list")
    assert r.returncode == 2 and "host:port" in r.stderr
