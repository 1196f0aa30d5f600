"""``kavka configs`` as a subprocess against a real broker (and real
ZooKeeper): topics and brokers through DescribeConfigs/IncrementalAlterConfigs,
users and client ids through the quota and SCRAM APIs — what lands in
ZooKeeper where Kafka keeps it, kafka-configs.sh's output, the errors."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kavka.security.sasl.credentials import ScramCredential, ScramFormatter, ScramMechanism

pytestmark = pytest.mark.cluster


def znode(cluster, path: str) -> dict:
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(15)
    try:
        data, _ = client.get(path)
        return json.loads(data)
    finally:
        client.stop()
        client.close()


def test_configs_of_every_entity_type(make_cluster, kavka):
    cluster = make_cluster(brokers=1)
    bs = ("configs", "--bootstrap-server", cluster.bootstrap)

    def ok(*args: str) -> str:
        r = kavka(*bs, *args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stdout, r.stderr)
        return r.stdout

    def fails(code: int, *args: str) -> str:
        r = kavka(*bs, *args)
        assert r.returncode == code and r.stderr.startswith("Error: ") and "Traceback" not in r.stderr, (args, r.stderr)
        return r.stderr

    # users: quotas, then SCRAM credentials (never both in one command)
    assert ok("--alter", "--entity-type", "users", "--entity-name", "CN=alice,O=acme",
              "--add-config", "producer_byte_rate=1048576,request_percentage=200") == \
        "Completed updating config for user CN=alice,O=acme.\n"
    assert ok("--alter", "--user", "CN=alice,O=acme", "--add-config",
              "SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=alice-secret]") == \
        "Completed updating config for user CN=alice,O=acme.\n"
    stored = znode(cluster, "/config/users/CN%3Dalice%2CO%3Dacme")
    assert stored["version"] == 1
    config = stored["config"]
    assert config["producer_byte_rate"] == "1048576" and config["request_percentage"] == "200.0"
    sha256 = ScramCredential.parse(config["SCRAM-SHA-256"], ScramMechanism.SCRAM_SHA_256)
    assert sha256.iterations == 8192
    assert sha256.stored_key == ScramFormatter(ScramMechanism.SCRAM_SHA_256).generate_credential(
        "alice-secret", 8192, sha256.salt).stored_key  # the password logs in; it is stored nowhere
    assert "secret" not in json.dumps(stored)

    out = ok("--describe", "--entity-type", "users", "--entity-name", "CN=alice,O=acme")
    assert out.splitlines() == [
        "Quota configs for user-principal 'CN=alice,O=acme' are producer_byte_rate=1048576.0, request_percentage=200.0",
        "SCRAM credential configs for user-principal 'CN=alice,O=acme' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096"]
    assert "salt" not in out and "stored_key" not in out

    # the KIP-55 defaults and a user's client id
    ok("--alter", "--user-defaults", "--add-config", "consumer_byte_rate=2000")
    ok("--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-default",
       "--add-config", "producer_byte_rate=500")
    ok("--alter", "--client", "app", "--add-config", "controller_mutation_rate=10")
    assert znode(cluster, "/config/users/bob/clients/<default>")["config"] == {"producer_byte_rate": "500"}
    assert znode(cluster, "/config/users/<default>")["config"] == {"consumer_byte_rate": "2000"}
    assert ok("--describe", "--entity-type", "users").splitlines() == [
        "Quota configs for the default user-principal are consumer_byte_rate=2000.0",
        "Quota configs for user-principal 'CN=alice,O=acme' are producer_byte_rate=1048576.0, request_percentage=200.0",
        "SCRAM credential configs for user-principal 'CN=alice,O=acme' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096"]
    # with a client entity type, credentials are not described
    assert ok("--describe", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients").splitlines() \
        == ["Quota configs for user-principal 'bob', the default client-id are producer_byte_rate=500.0"]
    assert ok("--describe", "--user", "bob").splitlines() == [
        "Error retrieving SCRAM credential configs for user-principal 'bob': ResourceNotFoundException: "
        "Attempt to describe a user credential that does not exist: bob"]
    assert ok("--describe", "--entity-type", "clients").splitlines() == [
        "Quota configs for client-id 'app' are controller_mutation_rate=10.0"]

    # deleting: a quota, a credential; deleting what is not set is refused
    ok("--alter", "--user", "CN=alice,O=acme", "--delete-config", "request_percentage")
    ok("--alter", "--user", "CN=alice,O=acme", "--delete-config", "SCRAM-SHA-256")
    config = znode(cluster, "/config/users/CN%3Dalice%2CO%3Dacme")["config"]
    assert sorted(config) == ["SCRAM-SHA-512", "producer_byte_rate"]
    assert "Invalid config(s): request_percentage" in fails(1, "--alter", "--user", "CN=alice,O=acme",
                                                            "--delete-config", "request_percentage")
    assert "does not exist" in fails(1, "--alter", "--user", "CN=alice,O=acme", "--delete-config", "SCRAM-SHA-256")

    # refused by the broker or by the tool, with Kafka's words
    assert "must be a LONG value" in fails(1, "--alter", "--client", "x", "--add-config", "producer_byte_rate=1.5")
    assert "must not be negative" in fails(1, "--alter", "--client", "x", "--add-config", "request_percentage=-1")
    assert "Only quota configs can be added for 'clients'" in fails(
        2, "--alter", "--client", "x", "--add-config", "SCRAM-SHA-512=[password=p]")
    assert "Cannot alter both quota and SCRAM" in fails(
        2, "--alter", "--user", "u", "--add-config", "SCRAM-SHA-512=[password=p],producer_byte_rate=1")
    assert "not allowed with User SCRAM Credentials" in fails(
        2, "--alter", "--user-defaults", "--add-config", "SCRAM-SHA-512=[password=p]")
    assert "Too many iterations" in fails(1, "--alter", "--user", "u", "--add-config",
                                          "SCRAM-SHA-512=[iterations=20000,password=p]")

    # topics and brokers through the config APIs
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic("t1", 1, 1)]).values():
        f.result(30)
    assert ok("--alter", "--topic", "t1", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]") == \
        "Completed updating config for topic t1.\n"
    out = ok("--describe", "--topic", "t1").splitlines()
    assert out[0] == "Dynamic configs for topic t1 are:"
    assert out[1].startswith("  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                             "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}")
    assert out[2].startswith("  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000")
    assert "Invalid config(s): segment.ms" in fails(1, "--alter", "--topic", "t1", "--delete-config", "segment.ms")
    ok("--alter", "--topic", "t1", "--delete-config", "retention.ms,cleanup.policy")
    assert ok("--describe", "--topic", "t1") == "Dynamic configs for topic t1 are:\n"
    assert len(ok("--describe", "--topic", "t1", "--all").splitlines()) > 20

    broker = str(next(iter(cluster.brokers)))
    ok("--alter", "--broker", broker, "--add-config", "log.cleaner.backoff.ms=20000")
    ok("--alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000")
    out = ok("--describe", "--entity-type", "brokers").splitlines()
    assert f"Dynamic configs for broker {broker} are:" in out
    assert "Default configs for brokers in the cluster are:" in out
    assert any(line.startswith("  log.cleaner.backoff.ms=20000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:")
               for line in out)
    assert any(line.startswith("  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:")
               for line in out)
