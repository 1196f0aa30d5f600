"""``kavka reassign-partitions`` against a real 6-broker cluster: the seed's
example (seed 000 §Kafka Reassign Partitions Tool) — generate a plan moving
a live RF=3 topic from brokers {0,1,2} to {3,4,5}, execute it (the output
is the rollback plan), verify until every partition completed, and the
topic then lives on {3,4,5} with all its records and identical replicas;
then the rollback plan goes back through ``--zookeeper`` (the znode the
seed's tool writes).
Without a cluster: bad plans and options are refused with exit code 2."""

from __future__ import annotations

import json

import pytest

from kavka.tools.reassign_plan import parse_reassignment

from .repl_cli_helpers import describe, fully_replicated, ids, produce, wait_until

CONFIG = {"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "30000"}


@pytest.mark.cluster
def test_generate_execute_verify_moves_a_live_topic(make_cluster, kavka, tmp_path) -> None:
    cluster = make_cluster(brokers=6, config=CONFIG)
    bs = cluster.bootstrap
    t = ("reassign-partitions", "--bootstrap-server", bs)
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", "mv", "--replica-assignment",
              "0:1:2,1:2:0")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: fully_replicated(kavka, bs, "mv", 2, 3), 30, "mv fully replicated")
    produce(kavka, bs, "mv", [f"before-{i}" for i in range(30)])

    topics = tmp_path / "topics-to-move.json"
    topics.write_text('{"topics":[{"topic":"mv"}],"version":1}')
    r = kavka(*t, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "3,4,5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": "mv", "partition": 0, "replicas": [0, 1, 2]},
        {"topic": "mv", "partition": 1, "replicas": [1, 2, 0]}]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = parse_reassignment(lines[4])
    assert [(m.topic, m.partition) for m in proposed] == [("mv", 0), ("mv", 1)]
    assert all(sorted(m.replicas) == [3, 4, 5] for m in proposed)
    plan = tmp_path / "reassign-plan.json"
    plan.write_text(lines[4])

    r = kavka(*t, "--execute", "--reassignment-json-file", str(plan))
    assert r.returncode == 0, r.stdout + r.stderr
    rollback = tmp_path / "rollback.json"
    rollback.write_text(r.stdout.splitlines()[2])
    assert json.loads(rollback.read_text())["partitions"][0]["replicas"] == [0, 1, 2]
    assert "Save this to use as the --reassignment-json-file option during rollback" in r.stdout
    assert r.stdout.endswith("Successfully started partition reassignments for mv-0,mv-1\n")
    produce(kavka, bs, "mv", [f"during-{i}" for i in range(30)])

    def verified():
        r = kavka(*t, "--verify", "--reassignment-json-file", str(plan))
        assert r.returncode == 0, r.stdout + r.stderr  # in progress or complete, never failed
        return r.stdout if r.stdout.count("completed successfully") == 2 else None
    out = wait_until(verified, 60, "the reassignment to complete")
    assert out.splitlines() == ["Status of partition reassignment:",
                                "Reassignment of partition mv-0 completed successfully",
                                "Reassignment of partition mv-1 completed successfully"]
    parts = describe(kavka, bs, "mv")
    for m in proposed:
        assert ids(parts[m.partition]["Replicas"]) == list(m.replicas)
    wait_until(lambda: fully_replicated(kavka, bs, "mv", 2, 3), 30, "the new replicas in sync")

    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "mv", "--from-beginning",
              "--max-messages", "60", "--timeout-ms", "20000")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted([f"before-{i}" for i in range(30)] + [f"during-{i}" for i in range(30)])
    r = kavka("replica-verification", "--bootstrap-server", bs, "--topic-white-list", "mv",
              "--max-wait-ms", "100", "--time-limit-ms", "1500")
    assert r.returncode == 0 and " 0 mismatch(es)" in r.stdout, r.stdout + r.stderr

    # Roll back the seed's way: the saved plan becomes /admin/reassign_partitions.
    z = ("reassign-partitions", "--zookeeper", cluster.zk_connect)
    r = kavka(*z, "--execute", "--reassignment-json-file", str(rollback))
    assert r.returncode == 0, r.stdout + r.stderr
    assert parse_reassignment(r.stdout.splitlines()[2]) == tuple(sorted(proposed, key=lambda m: m.partition))

    def rolled_back():
        r = kavka(*z, "--verify", "--reassignment-json-file", str(rollback))
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.count("completed successfully") == 2
    wait_until(rolled_back, 60, "the rollback through ZooKeeper to complete")
    parts = describe(kavka, bs, "mv")
    assert [ids(parts[p]["Replicas"]) for p in (0, 1)] == [[0, 1, 2], [1, 2, 0]]

    # A plan naming a partition that does not exist changes nothing.
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"mv","partition":7,"replicas":[3,4,5]}]}')
    r = kavka(*t, "--execute", "--reassignment-json-file", str(bad))
    assert r.returncode == 1 and "mv-7" in r.stderr, r.stdout + r.stderr
    # Verify a plan the cluster does not match: failed, exit 1.
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[3,4,5]}]}')
    r = kavka(*t, "--verify", "--reassignment-json-file", str(wrong))
    assert r.returncode == 1
    assert "Reassignment of partition mv-0 failed: its replicas are" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--generate", "--topics-to-move-json-file", "F"], "--generate needs --broker-list"),
    (["--execute"], "--reassignment-json-file is required"),
    (["--verify", "--reassignment-json-file", "F", "--broker-list", "1"], "belong to --generate"),
    (["--verify", "--reassignment-json-file", "F", "--additional"], "--additional belongs to --execute"),
    (["--cancel", "--reassignment-json-file", "F", "--zookeeper", "127.0.0.1:1"], "need --bootstrap-server"),
])
def test_bad_options(kavka, tmp_path, args, message) -> None:
    f = tmp_path / "plan.json"
    f.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    args = [str(f) if a == "F" else a for a in args]
    where = [] if "--zookeeper" in args else ["--bootstrap-server", "127.0.0.1:1"]
    r = kavka("reassign-partitions", *where, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_bad_plan_file(kavka, tmp_path) -> None:
    f = tmp_path / "plan.json"
    f.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    r = kavka("reassign-partitions", "--bootstrap-server", "127.0.0.1:1", "--execute",
              "--reassignment-json-file", str(f))
    assert r.returncode == 2 and "lists a broker twice" in r.stderr, r.stderr


def test_help(kavka) -> None:
    r = kavka("reassign-partitions", "--help")
    assert r.returncode == 0
    for opt in ("--generate", "--execute", "--verify", "--topics-to-move-json-file", "--broker-list",
                "--reassignment-json-file"):
        assert opt in r.stdout
