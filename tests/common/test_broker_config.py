"""KafkaConfig: Kafka's names and defaults, precedence rules, cross-checks,
error messages that name the key, the source and the allowed values."""

from __future__ import annotations

import pytest

from kavka.common.broker_config import (
    ConfigError,
    ConfigFileError,
    KafkaConfig,
    from_properties_file,
    log_defaults,
    parse_overrides,
)
from kavka.common.broker_config_keys import BROKER_CONFIG, DYNAMIC_BROKER_KEYS, TOPIC_SYNONYMS

ZK = {"zookeeper.connect": "127.0.0.1:2181/kavka"}


def cfg(**kw: object) -> KafkaConfig:
    props = dict(ZK)
    props.update({k.replace("_", "."): v for k, v in kw.items()})
    return KafkaConfig.from_props(props)


# A Kafka 2.x sample server.properties: it must parse unchanged.
KAFKA_SAMPLE = """\
# The id of the broker. This must be set to a unique integer for each broker.
broker.id=0
listeners=PLAINTEXT://127.0.0.1:9092
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
group.initial.rebalance.delay.ms=0
"""


def test_kafka_sample_server_properties_parses_unchanged(tmp_path):
    """Kafka's sample sets num.network.threads, which Kavka accepts and
    validates (it has no network threads to size: it logs a value other
    than the default as ignored, kavka.server.ignored_configs)."""
    p = tmp_path / "server.properties"
    p.write_text(KAFKA_SAMPLE)
    c = from_properties_file(str(p))
    assert c.broker_id == 0
    assert c.listeners[0].host == "127.0.0.1" and c.listeners[0].port == 9092
    assert c.log_dirs == ("/tmp/kafka-logs",)
    assert c.zookeeper.hosts == (("localhost", 2181),) and c.zookeeper.chroot == ""
    assert c["offsets.topic.replication.factor"] == 1
    assert c["group.initial.rebalance.delay.ms"] == 0
    assert c.source == str(p)
    assert c["num.network.threads"] == 3


def test_kafka_defaults():
    c = cfg(broker_id=3)
    expected = {
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "unclean.leader.election.enable": False,
        "auto.create.topics.enable": True,
        "delete.topic.enable": True,
        "message.max.bytes": 1048588,
        "socket.request.max.bytes": 104857600,
        "connections.max.idle.ms": 600000,
        "replica.lag.time.max.ms": 30000,
        "replica.fetch.max.bytes": 1048576,
        "replica.fetch.wait.max.ms": 500,
        "replica.fetch.backoff.ms": 1000,
        "num.replica.fetchers": 1,
        "replica.truncation.mode": "leader-epoch",
        "controller.socket.timeout.ms": 30000,
        "auto.leader.rebalance.enable": True,
        "leader.imbalance.per.broker.percentage": 10,
        "leader.imbalance.check.interval.seconds": 300,
        "controlled.shutdown.enable": True,
        "controlled.shutdown.max.retries": 3,
        "controlled.shutdown.retry.backoff.ms": 5000,
        "offsets.topic.num.partitions": 50,
        "offsets.topic.replication.factor": 3,
        "transaction.state.log.num.partitions": 50,
        "transaction.state.log.min.isr": 2,
        "group.min.session.timeout.ms": 6000,
        "group.max.session.timeout.ms": 1800000,
        "request.timeout.ms": 30000,
        "num.recovery.threads.per.data.dir": 1,
        "log.segment.bytes": 1073741824,
        "log.cleanup.policy": ["delete"],
        "log.index.size.max.bytes": 10485760,
        "log.index.interval.bytes": 4096,
        "log.segment.delete.delay.ms": 60000,
        "zookeeper.session.timeout.ms": 18000,
    }
    assert {k: c[k] for k in expected} == expected
    assert c.retention_ms == 168 * 3600 * 1000
    assert c.roll_ms == 168 * 3600 * 1000
    assert c.zookeeper_connection_timeout_ms == 18000


def test_every_default_is_valid_for_its_own_key():
    c = cfg(broker_id=0)
    assert set(c.values) == set(BROKER_CONFIG.names())


@pytest.mark.parametrize(
    "props, expected",
    [
        ({}, 168 * 3_600_000),
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.minutes": "-5"}, -1),
    ],
)
def test_retention_precedence_ms_minutes_hours(props, expected):
    c = KafkaConfig.from_props({**ZK, **props})
    assert c.retention_ms == expected
    assert log_defaults(c)["retention.ms"] == expected


def test_roll_and_jitter_and_flush_precedence():
    c = KafkaConfig.from_props({**ZK, "log.roll.hours": "2", "log.roll.jitter.hours": "1", "log.flush.scheduler.interval.ms": "700"})
    assert (c.roll_ms, c.roll_jitter_ms, c.flush_ms) == (7_200_000, 3_600_000, 700)
    c = KafkaConfig.from_props({**ZK, "log.roll.hours": "2", "log.roll.ms": "10", "log.roll.jitter.ms": "3", "log.flush.interval.ms": "9"})
    assert (c.roll_ms, c.roll_jitter_ms, c.flush_ms) == (10, 3, 9)


def test_log_defaults_use_topic_level_names():
    c = KafkaConfig.from_props(
        {
            **ZK,
            "log.segment.bytes": "1048576",
            "log.cleanup.policy": "compact,delete",
            "message.max.bytes": "2000",
            "log.segment.delete.delay.ms": "5",
            "log.cleaner.min.cleanable.ratio": "0.25",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
        }
    )
    d = log_defaults(c)
    assert set(d) == set(TOPIC_SYNONYMS)
    assert d["segment.bytes"] == 1048576
    assert d["cleanup.policy"] == ["compact", "delete"]
    assert d["max.message.bytes"] == 2000
    assert d["file.delete.delay.ms"] == 5
    assert d["min.cleanable.dirty.ratio"] == 0.25
    assert d["min.insync.replicas"] == 2
    assert d["unclean.leader.election.enable"] is True
    # the dict is a copy: changing it does not change the config
    d["cleanup.policy"].append("x")
    assert c["log.cleanup.policy"] == ["compact", "delete"]


def test_bad_enum_value_names_key_file_and_allowed_values(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("zookeeper.connect=127.0.0.1:2181\nlog.cleanup.policy=foo\n")
    with pytest.raises(ConfigError) as e:
        from_properties_file(str(p))
    assert str(e.value) == f"config 'log.cleanup.policy' in {p}: value 'foo' is not allowed; allowed values: delete, compact"
    assert e.value.key == "log.cleanup.policy"


def test_unknown_key_fails_with_suggestion(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("zookeeper.connect=127.0.0.1:2181\nlog.retention.hour=5\n")
    with pytest.raises(ConfigError, match=r"config 'log.retention.hour' in .*server.properties: unknown configuration key; did you mean 'log.retention.hours'"):
        from_properties_file(str(p))


def test_bad_number_and_range():
    with pytest.raises(ConfigError, match=r"'num.partitions'.*'many' is not a valid int"):
        cfg(num_partitions="many")
    with pytest.raises(ConfigError, match=r"'num.partitions'.*out of range; allowed: \[1"):
        cfg(num_partitions="0")
    with pytest.raises(ConfigError, match=r"'replica.truncation.mode'.*allowed values: leader-epoch, hw"):
        cfg(**{"replica.truncation.mode": "raft"})


def test_missing_zookeeper_connect_is_named():
    with pytest.raises(ConfigError, match=r"'zookeeper.connect'.*required"):
        KafkaConfig.from_props({"broker.id": "1"})


def test_overrides_win_and_are_named_in_errors(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("zookeeper.connect=127.0.0.1:2181\nnum.partitions=3\n")
    c = from_properties_file(str(p), ["num.partitions=7", "broker.id=4"])
    assert c["num.partitions"] == 7 and c.broker_id == 4
    assert c.originals["num.partitions"] == "7"
    with pytest.raises(ConfigError, match=r"config 'num.partitions' in --override: value 'x' is not a valid int"):
        from_properties_file(str(p), ["num.partitions=x"])
    with pytest.raises(ConfigError, match=r"must be key=value"):
        parse_overrides(["num.partitions"])


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigFileError, match=r"cannot read .*nope.properties: No such file"):
        from_properties_file(str(tmp_path / "nope.properties"))


def test_listeners_and_advertised_listeners():
    c = cfg(
        listeners="PLAINTEXT://0.0.0.0:9092,INTERNAL://127.0.0.1:9093",
        advertised_listeners="PLAINTEXT://broker1:9092,INTERNAL://127.0.0.1:9093",
        **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT", "inter.broker.listener.name": "internal"},
    )
    assert [e.connection_string() for e in c.advertised_listeners] == ["PLAINTEXT://broker1:9092", "INTERNAL://127.0.0.1:9093"]
    assert c.inter_broker_listener_name == "INTERNAL"


@pytest.mark.parametrize(
    "props, message",
    [
        ({"listeners": "PLAINTEXT://127.0.0.1:99999"}, r"'listeners'.*port 99999 is out of range"),
        ({"listeners": "127.0.0.1:9092"}, r"'listeners'.*is not NAME://host:port"),
        ({"listeners": "FOO://:9092"}, r"'listeners'.*no security protocol for listener name FOO"),
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, r"listener name PLAINTEXT is used more than once"),
        ({"listeners": "PLAINTEXT://:9092,B://:9092", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,B:PLAINTEXT"}, r"port 9092 is used by more than one listener"),
        ({"listeners": "SASL_SSL://h:9093", "security.inter.broker.protocol": "SASL_SSL", "sasl.enabled.mechanisms": "PLAIN"}, r"'sasl.mechanism.inter.broker.protocol'.*GSSAPI is not among the SASL mechanisms of the inter-broker listener SASL_SSL \(PLAIN\)"),
        ({"connection.failed.authentication.delay.ms": "600000"}, r"'connection.failed.authentication.delay.ms'.*less than connections.max.idle.ms"),
        ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, r"'listeners'.*unroutable meta-address 0.0.0.0"),
        ({"advertised.listeners": "OTHER://h:1", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"}, r"'advertised.listeners'.*OTHER is not in listeners"),
        ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, r"not both"),
        ({"inter.broker.listener.name": "NOPE"}, r"'inter.broker.listener.name'.*NOPE is not among the advertised listeners"),
        ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, r"security protocol 'TLS' is not allowed; allowed values: PLAINTEXT, SSL"),
        ({"zookeeper.connect": "127.0.0.1"}, r"'zookeeper.connect'.*'127.0.0.1' is not host:port"),
        ({"zookeeper.connect": "127.0.0.1:2181/kavka/"}, r"'zookeeper.connect'.*chroot '/kavka/' is not a valid ZooKeeper path"),
        ({"broker.id": "-1", "broker.id.generation.enable": "false"}, r"'broker.id'.*set broker.id to an id >= 0"),
        ({"broker.id": "1001"}, r"'broker.id'.*above reserved.broker.max.id"),
        ({"replica.fetch.wait.max.ms": "40000"}, r"'replica.fetch.wait.max.ms'.*exceeds replica.lag.time.max.ms"),
        ({"log.dirs": "/a,/a"}, r"'log.dirs'.*listed twice"),
        ({"log.cleanup.policy": ""}, r"'log.cleanup.policy'.*empty"),
    ],
)
def test_cross_checks_name_the_key(props, message):
    with pytest.raises(ConfigError, match=message):
        KafkaConfig.from_props({**ZK, **props}, source="/x/server.properties")


def test_cross_check_errors_name_the_source(tmp_path):
    p = tmp_path / "s.properties"
    p.write_text("zookeeper.connect=127.0.0.1:2181\nlisteners=PLAINTEXT://h:70000\n")
    with pytest.raises(ConfigError, match=rf"config 'listeners' in {p}: listener"):
        from_properties_file(str(p))


def test_zookeeper_connect_with_chroot_and_many_hosts():
    c = cfg(**{"zookeeper.connect": "a:2181,b:2182,[::1]:2183/kavka/cluster1", "zookeeper.connection.timeout.ms": "500"})
    assert c.zookeeper.hosts == (("a", 2181), ("b", 2182), ("::1", 2183))
    assert c.zookeeper.chroot == "/kavka/cluster1"
    assert c.zookeeper.hosts_string() == "a:2181,b:2182,[::1]:2183"
    assert str(c.zookeeper) == "a:2181,b:2182,[::1]:2183/kavka/cluster1"
    assert c.zookeeper_connection_timeout_ms == 500


def test_log_dir_fallback_and_log_dirs():
    assert cfg(**{"log.dir": "/data/one"}).log_dirs == ("/data/one",)
    assert cfg(**{"log.dir": "/data/one", "log.dirs": "/d1, /d2"}).log_dirs == ("/d1", "/d2")


def test_dynamic_layers_precedence():
    c = cfg(broker_id=2, **{"log.retention.hours": "5", "num.partitions": "3"})
    d = c.with_dynamic({"log.retention.ms": "1000", "log.segment.bytes": "2048"}, {"log.retention.ms": "2000"})
    assert d.retention_ms == 2000
    assert d["log.segment.bytes"] == 2048
    assert d["num.partitions"] == 3
    assert c.retention_ms == 5 * 3_600_000  # the original is unchanged


def test_dynamic_rejects_static_and_unknown_keys():
    c = cfg(broker_id=2)
    with pytest.raises(ConfigError, match=r"config 'listeners' in /config/brokers/2: cannot be changed while the broker runs"):
        c.with_dynamic({}, {"listeners": "PLAINTEXT://:1"})
    with pytest.raises(ConfigError, match=r"config 'nope' in /config/brokers/<default>: unknown configuration key"):
        c.with_dynamic({"nope": "1"}, {})
    with pytest.raises(ConfigError, match=r"config 'log.segment.bytes' in /config/brokers/2: value 'big'"):
        c.with_dynamic({}, {"log.segment.bytes": "big"})


def test_kerberos_keys_change_live_as_in_kafka():
    """Kafka accepts AlterConfigs of its Kerberos login keys on a broker
    (DynamicListenerConfig): librdkafka's admin test sets
    sasl.kerberos.min.time.before.relogin and expects success."""
    c = cfg(broker_id=0)
    assert c["sasl.kerberos.min.time.before.relogin"] == 60000
    d = c.with_dynamic({}, {"sasl.kerberos.min.time.before.relogin": "58000",
                            "sasl.kerberos.principal.to.local.rules": "RULE:[1:$1]/L,DEFAULT"})
    assert d["sasl.kerberos.min.time.before.relogin"] == 58000
    assert d["sasl.kerberos.principal.to.local.rules"] == ["RULE:[1:$1]/L", "DEFAULT"]
    with pytest.raises(ConfigError, match=r"config 'sasl.kerberos.min.time.before.relogin' in /config/brokers/0: value 'soon'"):
        c.with_dynamic({}, {"sasl.kerberos.min.time.before.relogin": "soon"})


def test_dynamic_keys_and_synonyms_are_real_keys():
    for key in DYNAMIC_BROKER_KEYS:
        assert key in BROKER_CONFIG
    for keys in TOPIC_SYNONYMS.values():
        for key in keys:
            assert key in BROKER_CONFIG


def test_unknown_key_lookup_on_config():
    with pytest.raises(ConfigError, match="unknown configuration key"):
        cfg()["no.such.key"]


def test_authorizer_keys_are_kafkas_and_refused_by_name() -> None:
    c = cfg()
    assert (c["authorizer.class.name"], c["super.users"], c["allow.everyone.if.no.acl.found"]) == ("", "", False)
    for name in ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"):
        assert cfg(**{"authorizer.class.name": name})["authorizer.class.name"] == name
    with pytest.raises(ConfigError, match=r"config 'authorizer.class.name'.*StandardAuthorizer.*is not an authorizer"):
        cfg(**{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    assert cfg(**{"super.users": "User:admin;User:CN=broker,O=x;"})["super.users"] == "User:admin;User:CN=broker,O=x;"
    with pytest.raises(ConfigError, match=r"config 'super.users'.*principal 'admin' is not in the form Type:name"):
        cfg(**{"super.users": "User:a;admin"})


def test_an_assigned_broker_id_replaces_minus_one_and_survives_live_changes():
    """broker.id=-1 takes an id above reserved.broker.max.id at startup
    (meta.properties or /brokers/seqid): the config carries it, past the
    check that keeps configured ids at or below that bound, and a dynamic
    broker config layered on later keeps it."""
    c = cfg(broker_id=-1, reserved_broker_max_id=100)
    assert c.broker_id == -1
    with pytest.raises(ConfigError, match="above reserved.broker.max.id"):
        cfg(broker_id=101, reserved_broker_max_id=100)
    taken = c.with_broker_id(101)
    assert taken.broker_id == 101 and taken["broker.id"] == 101 and taken["reserved.broker.max.id"] == 100
    live = taken.with_dynamic({}, {"log.cleaner.threads": "2"})
    assert live.broker_id == 101 and live["log.cleaner.threads"] == 2
    with pytest.raises(ValueError):
        c.with_broker_id(-5)
