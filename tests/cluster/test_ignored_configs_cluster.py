"""Kafka keys that do nothing in Kavka, as an operator and a Kafka tool see
them: a server.properties setting num.network.threads and Kerberos tuning
starts, and says each value is ignored and why; the Kerberos keys and a
topic's message.format.version change live through librdkafka's
AdminClient (as librdkafka's own tests 0081 and 0092 do), are accepted and
logged, and produce and consume keep working in record format v2; a
listener enabling GSSAPI, or a Kerberos rule that does not parse, stops the
broker naming the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kavka.tools.ports import free_port

from .cluster_helpers import admin, consume, create_topic, produce, set_topic_config, wait_until

pytestmark = pytest.mark.cluster


def alter_broker(cluster, broker: str, configs: dict[str, str], timeout: float = 20.0) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    client = admin(cluster)
    for future in client.incremental_alter_configs([resource], request_timeout=timeout).values():
        future.result(timeout)


def test_ignored_keys_are_accepted_said_and_change_live(make_cluster):
    cluster = make_cluster(brokers=1, config={
        "num.network.threads": "5", "sasl.kerberos.principal.to.local.rules": "RULE:[1:$1]/L,DEFAULT",
        "log.message.format.version": "2.8"})
    b = cluster.brokers[0]
    log = b.log_path
    wait_until(lambda: "num.network.threads=5 is ignored: Kavka serves every connection on one event loop"
               in log.read_text(), 30, "the num.network.threads warning")
    text = log.read_text()
    assert "sasl.kerberos.principal.to.local.rules=RULE:[1:$1]/L,DEFAULT is ignored" in text
    assert "log.message.format.version=2.8 is ignored: deprecated (KIP-724)" in text

    alter_broker(cluster, "0", {"sasl.kerberos.min.time.before.relogin": "58000"})
    wait_until(lambda: "sasl.kerberos.min.time.before.relogin=58000 is ignored" in log.read_text(), 30,
               "the live Kerberos change said as ignored")
    client = admin(cluster)  # kept alive until the future settles
    entries = next(iter(client.describe_configs([_broker_resource("0")]).values())).result(20)
    assert entries["sasl.kerberos.min.time.before.relogin"].value == "58000"

    create_topic(cluster, "old-format")
    produce(cluster, "old-format", {0: [b"before-%d" % i for i in range(20)]})
    set_topic_config(cluster, "old-format", {"message.format.version": "0.10.0"})
    wait_until(lambda: "message.format.version=0.10.0 of topic old-format is ignored" in log.read_text(), 30,
               "the topic's message.format.version said as ignored")
    produce(cluster, "old-format", {0: [b"after-%d" % i for i in range(20)]})
    got = consume(cluster, "old-format", [0], 40)
    assert got[0] == [b"before-%d" % i for i in range(20)] + [b"after-%d" % i for i in range(20)]
    # the batches written after the change are format v2 (magic 2) on disk
    segment = next((b.directory / "logs" / "old-format-0").glob("*.log")).read_bytes()
    assert segment[16] == 2 and segment.count(b"after-19") == 1


def _broker_resource(broker: str):
    from confluent_kafka.admin import ConfigResource, ResourceType

    return ConfigResource(ResourceType.BROKER, broker)


def _start(tmp_path, zk: str, extra: dict[str, str]) -> subprocess.CompletedProcess:
    props = {"broker.id": "0", "log.dirs": str(tmp_path / "logs"), "zookeeper.connect": zk,
             "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}", **extra}
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return subprocess.run([sys.executable, "-m", "kavka", "server", "start", str(path)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("extra", "says"), [
    ({"listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SASL_PLAINTEXT://127.0.0.1:{free_port()}",
      "sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka"},
     r"sasl.enabled.mechanisms.*GSSAPI is not supported"),
    ({"sasl.kerberos.principal.to.local.rules": "RULE:[1:$1](()s/a/b/"},
     r"'sasl.kerberos.principal.to.local.rules'.*does not compile"),
])
def test_gssapi_and_bad_kerberos_rules_stop_the_broker_naming_the_key(tmp_path, zk_chroot, extra, says):
    import re

    out = _start(tmp_path, zk_chroot, extra)
    assert out.returncode != 0
    assert re.search(says, out.stderr), out.stderr[-2000:]
    assert "Traceback" not in out.stderr
