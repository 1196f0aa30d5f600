"""``kavka preferred-replica-election`` against a real 3-broker cluster: after
the preferred leader of a partition is bounced, leadership stays with
another replica (seed 000 §Preferred Replica Leader Election Tool); the tool
with a JSON file restores it for that partition, and without one reports
every partition already led by its preferred replica; after a second
bounce ``--zookeeper`` (the znode the seed's tool writes) does the same for
all partitions. Bad files are
refused with exit code 2."""

from __future__ import annotations

import json

import pytest

from .repl_cli_helpers import describe, fully_replicated, ids, wait_until

CONFIG = {"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "30000"}


@pytest.mark.cluster
def test_election_restores_the_preferred_leader(make_cluster, kavka, tmp_path) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    bs = cluster.bootstrap
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", "pe", "--replica-assignment",
              "0:1:2,1:2:0")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: fully_replicated(kavka, bs, "pe", 2, 3), 30, "pe fully replicated")

    cluster.restart_broker(0)  # its controlled shutdown moves partition 0's leadership away
    wait_until(lambda: fully_replicated(kavka, bs, "pe", 2, 3), 40, "broker 0 back in the ISR")
    before = describe(kavka, bs, "pe")
    assert ids(before[0]["Replicas"])[0] == 0 and before[0]["Leader"] != "0"

    plan = tmp_path / "elect.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "pe", "partition": 0}]}))
    r = kavka("preferred-replica-election", "--bootstrap-server", bs, "--path-to-json-file", str(plan))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "Successfully elected the preferred replica as leader of partition pe-0\n"
    after = describe(kavka, bs, "pe")
    assert after[0]["Leader"] == "0" and after[1]["Leader"] == "1"

    # No file: every partition of the cluster; all now preferred.
    r = kavka("preferred-replica-election", "--bootstrap-server", bs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Partition pe-0 is already led by its preferred replica\n" in r.stdout
    assert "Partition pe-1 is already led by its preferred replica\n" in r.stdout
    assert "Failed" not in r.stdout

    # The seed's way: /admin/preferred_replica_election, here for every partition.
    cluster.restart_broker(1)  # partition 1's preferred leader
    wait_until(lambda: fully_replicated(kavka, bs, "pe", 2, 3), 40, "broker 1 back in the ISR")
    assert describe(kavka, bs, "pe")[1]["Leader"] != "1"
    r = kavka("preferred-replica-election", "--zookeeper", cluster.zk_connect)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Successfully started preferred replica election for partitions " in r.stdout
    assert "pe-0" in r.stdout and "pe-1" in r.stdout
    wait_until(lambda: describe(kavka, bs, "pe")[1]["Leader"] == "1", 30, "broker 1 to lead pe-1 again")


@pytest.mark.parametrize("doc, message", [
    ("{", "not valid JSON"),
    ('{"partitions": []}', 'non-empty "partitions"'),
    ('{"partitions": [{"topic": "t"}]}', "partitions[0].partition"),
    ('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}', "more than once"),
])
def test_bad_election_files_are_refused(kavka, tmp_path, doc: str, message: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(doc)
    r = kavka("preferred-replica-election", "--bootstrap-server", "127.0.0.1:1", "--path-to-json-file", str(f))
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_help(kavka) -> None:
    r = kavka("preferred-replica-election", "--help")
    assert r.returncode == 0 and "--path-to-json-file" in r.stdout
