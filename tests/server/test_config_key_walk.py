"""The config-key walk: every broker and topic config key Kavka accepts is
honoured — read by the code of a running broker — or refused with a
message naming it (``REFUSED_BROKER_KEYS``), and every broker key accepted
as dynamic is read again after a live change.

Truth comes from a run, not from the source: two brokers run in this
process on a real ZooKeeper with the reads recorded — every broker key
read by name from a ``KafkaConfig`` (its ``values``, and the raw values its
derived fields are computed from), every topic key read as a ``LogConfig``
field or by name from a topic's overrides — while they start, serve real
clients (confluent-kafka: topics with every kind of policy, idempotent and
transactional producers, a consumer group), run their periodic jobs
(retention, cleaning, checkpoints, producer expiration, leader
rebalance), take a live change of every dynamic broker key through
IncrementalAlterConfigs, and shut down in order. What only validates or
describes a config (``ConfigRepository``, dataclass equality and repr)
does not count. A key nobody reads fails the test by name, whatever a
docstring says; reading a key without acting on it is left to each key's
own behaviour test.

The features a default broker leaves off are switched on here (the ACL
authorizer, replication throttles, auto leader rebalance, TLS and SASL
listeners with their stores in files on one broker and inline PEM on the
other, log.dir on one and log.dirs on the other) so that their keys are
read; whoever adds a key for a feature extends the brokers' config below
so that the walk sees it read.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import pytest
from security.certs import Pki  # tests/security/certs.py

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import AlterOp, NewTopic, ResourceType
from kavka.client.cluster import Cluster
from kavka.common import broker_config as bc
from kavka.common.broker_config_keys import BROKER_CONFIG, DYNAMIC_BROKER_KEYS, REFUSED_BROKER_KEYS
from kavka.common.config import ConfigKey, ConfigType, OneOf, Range
from kavka.server.broker import KafkaServer
from kavka.storage.log_config import TOPIC_CONFIG_DEF, LogConfig
from kavka.tools.ports import free_port
from kavka.zk.client import KavkaZkClient

pytestmark = [pytest.mark.cluster, pytest.mark.async_timeout(240.0)]  # a bound on a hung run

# Reads made under these validate, merge, derive or describe a config: they
# are not uses of it. (file suffix, function name or None for any function)
NOT_A_USE = (
    ("kavka/server/config_repository.py", None),  # DescribeConfigs, validating an alteration
    ("kavka/common/broker_config.py", "_derive"),  # cross-checks (derived fields are counted when read)
    ("kavka/common/broker_config.py", "from_props"),
    ("kavka/common/broker_config.py", "with_dynamic"),
    ("kavka/storage/log_config.py", "to_props"),
    ("kavka/storage/log_config.py", "from_props"),
    ("kavka/storage/log_config.py", "with_defaults"),
    ("kavka/storage/log_config.py", "__post_init__"),
    ("dataclasses.py", None),  # replace, asdict
    # dataclass-generated methods (by name: under pytest-xdist the worker's
    # own bootstrap code is a "<string>" frame at the bottom of every stack)
    *(("<string>", name) for name in ("__init__", "__eq__", "__repr__", "__hash__", "__lt__", "__le__", "__gt__",
                                      "__ge__", "__setattr__", "__delattr__", "__getstate__", "__setstate__",
                                      "__replace__")),
)
# The recording's own functions, skipped at the top of the stack.
RECORDING_FRAMES = frozenset({"_a_use", "broker_key", "topic_key", "__getitem__", "get", "recording_getattribute",
                              "recording_config_getattribute"})


@dataclass
class Reads:
    """Keys read so far, and since the live change."""

    broker: set[str] = field(default_factory=set)
    topic: set[str] = field(default_factory=set)
    broker_after_change: set[str] = field(default_factory=set)
    changed: bool = False

    def broker_key(self, key: str) -> None:
        if _a_use():
            self.broker.add(key)
            if self.changed:
                self.broker_after_change.add(key)

    def topic_key(self, key: str) -> None:
        if _a_use():
            self.topic.add(key)


def _a_use() -> bool:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name in RECORDING_FRAMES and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    while frame is not None:
        code = frame.f_code
        for suffix, function in NOT_A_USE:
            if code.co_filename.endswith(suffix) and function in (None, code.co_name):
                return False
        frame = frame.f_back
    return True


class RecordingMapping(Mapping[str, Any]):
    """A read-only view recording each key read by name (``[]``, ``get``);
    iterating or testing membership reads nothing."""

    def __init__(self, data: Mapping[str, Any], record) -> None:
        self._data = data
        self._record = record

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self._record(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class RecordingDict(dict):
    """The raw values ``KafkaConfig`` derives its fields from."""

    record: Any = None

    def __getitem__(self, key):
        self.record(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self.record(key)
        return dict.get(self, key, default)


@pytest.fixture
def reads(monkeypatch) -> Reads:
    reads = Reads()
    derive = bc.KafkaConfig._derive.__func__

    def recording_derive(cls, v, *rest):
        raw = RecordingDict(v)
        raw.record = reads.broker_key
        config = derive(cls, raw, *rest)
        object.__setattr__(config, "values", RecordingMapping(dict(config.values), reads.broker_key))
        return config

    monkeypatch.setattr(bc.KafkaConfig, "_derive", classmethod(recording_derive))

    field_keys = {name.replace(".", "_"): name for name in TOPIC_CONFIG_DEF.names()}
    plain_getattribute = object.__getattribute__

    def recording_getattribute(self, name):
        key = field_keys.get(name)
        if key is not None:
            reads.topic_key(key)
        return plain_getattribute(self, name)

    monkeypatch.setattr(LogConfig, "__getattribute__", recording_getattribute)

    derived = bc.KafkaConfig.DERIVED_FROM

    def recording_config_getattribute(self, name):
        for key in derived.get(name, ()):
            reads.broker_key(key)
        return plain_getattribute(self, name)

    monkeypatch.setattr(bc.KafkaConfig, "__getattribute__", recording_config_getattribute)

    get_entity_config = KavkaZkClient.get_entity_config

    async def recording_entity_config(self, entity_type, name):
        config = await get_entity_config(self, entity_type, name)
        return RecordingMapping(config, reads.topic_key) if entity_type == "topics" else config

    monkeypatch.setattr(KavkaZkClient, "get_entity_config", recording_entity_config)
    return reads


PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def broker_props(broker_id: int, zk: str, data, pki: Pki) -> dict[str, str]:
    listeners = {"PLAINTEXT": free_port(), "SSL": free_port(), "SASL_SSL": free_port(), "SASL_PLAINTEXT": free_port()}
    props = {
        # broker 1 takes a generated id above reserved.broker.max.id (/brokers/seqid)
        "broker.id": str(broker_id) if broker_id == 0 else "-1", "reserved.broker.max.id": "500",
        "zookeeper.connect": zk,
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in listeners.items()),
        # the brokers talk SASL_SSL to each other: their own clients read the
        # inter-broker mechanism and check the host name in the certificate
        "inter.broker.listener.name": "SASL_SSL", "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "ssl.endpoint.identification.algorithm": "https",
        # log.dir is read where log.dirs is unset: one broker each way
        ("log.dirs" if broker_id == 0 else "log.dir"): str(data / f"broker-{broker_id}"),
        "offsets.topic.num.partitions": "2", "offsets.topic.replication.factor": "2",
        "transaction.state.log.num.partitions": "2", "transaction.state.log.replication.factor": "2",
        "transaction.state.log.min.isr": "1",
        # periodic jobs due within the run
        "log.retention.check.interval.ms": "300", "producer.id.expiration.check.interval.ms": "300",
        "log.flush.offset.checkpoint.interval.ms": "300", "log.flush.start.offset.checkpoint.interval.ms": "300",
        "replica.high.watermark.checkpoint.interval.ms": "300", "log.cleaner.backoff.ms": "200",
        "log.segment.delete.delay.ms": "100", "leader.imbalance.check.interval.seconds": "1",
        "offsets.retention.check.interval.ms": "500", "group.initial.rebalance.delay.ms": "0",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
        # features a default broker leaves off
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS",
        "leader.replication.throttled.rate": str(1 << 40), "follower.replication.throttled.rate": str(1 << 40),
        "metrics.port": "0", "metrics.host": "127.0.0.1",
        # TLS and SASL listeners
        "ssl.client.auth": "requested", "ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
        "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,"
                             "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),O=Kavka Tests,C=CZ$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512", "sasl.jaas.config": PLAIN_JAAS,
        "sasl.server.max.receive.size": "65536", "connections.max.reauth.ms": "3600000",
        "connection.failed.authentication.delay.ms": "50",
        # keys Kafka's stock configuration sets that do nothing here, logged as ignored
        "num.network.threads": "3", "sasl.kerberos.min.time.before.relogin": "58000",
        "background.threads": "3",
    }
    if broker_id == 0:  # stores in files
        props.update({
            "ssl.keystore.type": "PKCS12", "ssl.keystore.password": "store-pass",
            "ssl.keystore.location": str(pki.broker.write_pkcs12(pki.dir / "broker.p12", "store-pass")),
            "ssl.truststore.type": "PKCS12", "ssl.truststore.password": "trust-pass",
            "ssl.truststore.location": str(pki.truststore_p12("trust-pass")),
        })
    else:  # inline PEM, the key encrypted
        props.update({
            "ssl.keystore.type": "PEM", "ssl.key.password": "key-pass",
            "ssl.keystore.key": pki.broker.key_pem("key-pass").decode(),
            "ssl.keystore.certificate.chain": pki.broker.chain_pem().decode(),
            "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pki.ca_file().read_text(),
        })
    return props


# Accepted keys whose behaviour Kavka does not have yet, each with what is
# missing. The walk fails on any other unread key, and on a key here that the
# run reads (so the table cannot outlive the gap it records). Each entry is a
# known defect, not an exemption: honour the key, or refuse it in
# REFUSED_BROKER_KEYS, and take it out.
PENDING_KEYS: dict[str, str] = {}


# Valid new values of the dynamic keys whose form no validator tells.
FREE_FORM_VALUES = {"max.connections.per.ip.overrides": "127.0.0.2:1000"}


def changed_value(key: ConfigKey, current: Any) -> str:
    """A valid value of ``key`` other than ``current``."""
    if key.name in FREE_FORM_VALUES:
        return FREE_FORM_VALUES[key.name]
    validator = key.validator
    if key.type is ConfigType.BOOLEAN:
        return str(not current).lower()
    if isinstance(validator, OneOf):
        now = current if isinstance(current, list) else [current]
        return next(a for a in validator.allowed if a not in now)
    if key.type in (ConfigType.INT, ConfigType.LONG):
        hi = 2**31 - 1 if key.type is ConfigType.INT else 2**63 - 1
        if isinstance(validator, Range) and validator.hi is not None:
            hi = min(hi, int(validator.hi))
        value = current if current is not None else (validator.lo if isinstance(validator, Range) and validator.lo else 1)
        return str(int(value) - 1 if value >= hi else int(value) + 1)
    if key.type is ConfigType.DOUBLE:
        lo = validator.lo if isinstance(validator, Range) and validator.lo is not None else 0.0
        return str(max(lo, float(current) * 0.9) if current not in (None, float("inf")) else 1e12)
    # a string or list in a form of its own: the first candidate its validator takes
    text = ",".join(current) if isinstance(current, list) else str(current or "")
    for candidate in (text + "-changed", text + ",DEFAULT", "changed"):
        try:
            if BROKER_CONFIG.parse_value(key.name, candidate) != current:
                return candidate
        except ValueError:
            continue
    raise AssertionError(f"no changed value for {key.name} ({key.type}); add one to FREE_FORM_VALUES")


def produce_and_consume(bootstrap: str, rounds: int = 1) -> None:
    """Real clients: an idempotent producer (keys, for the compacted
    topic), a transactional one, a consumer group committing offsets."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "batch.size": 4000})
    for r in range(rounds):
        for i in range(600):
            producer.produce("walk-delete", b"v" * 100, key=b"k%d" % i)
            producer.produce("walk-compact", b"w%d-%d" % (r, i), key=b"k%d" % (i % 20))
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "walk-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce("walk-delete", b"in a transaction", key=b"t")  # keyed: a live change may make it compacted
    txn.commit_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "walk-group", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe(["walk-delete", "walk-compact"])
    got, deadline = 0, time.monotonic() + 30
    while got < 100 and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got >= 100


async def eventually(probe, what: str) -> None:
    deadline = time.monotonic() + 60
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_every_accepted_key_is_read_by_a_running_broker(reads: Reads, zk_chroot: str, tmp_path):
    pki = Pki(tmp_path / "pki")
    servers = [KafkaServer(bc.KafkaConfig.from_props(broker_props(i, zk_chroot, tmp_path, pki))) for i in (0, 1)]
    for s in servers:
        await s.start()
    bootstrap = ",".join(f"{h}:{p}" for s in servers for h, p in s.bound[:1])  # the PLAINTEXT listeners
    try:
        await eventually(lambda: all(len(s.metadata_cache.brokers) == 2 for s in servers), "both brokers known")
        async with Cluster(bootstrap) as cluster:
            admin = KafkaAdmin(cluster)
            await admin.create_topics([
                NewTopic("walk-delete", 2, 2, configs={
                    "segment.bytes": "8192", "retention.ms": "2000", "min.insync.replicas": "1",
                    "leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*",
                    "message.timestamp.type": "CreateTime", "message.format.version": "0.10.0"}),
                NewTopic("walk-compact", 1, 2, configs={
                    "cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
                    "delete.retention.ms": "100", "unclean.leader.election.enable": "false"}),
            ])
            await asyncio.to_thread(produce_and_consume, bootstrap, 3)
            await asyncio.sleep(3)  # retention, cleaning, checkpoints, expirations, rebalance checks

            # Every dynamic key changed live (cluster-wide default), then used.
            current = servers[0].config
            ops = [(key, AlterOp.SET, changed_value(BROKER_CONFIG.keys[key], current.values._data[key]))
                   for key in sorted(DYNAMIC_BROKER_KEYS)]
            reads.changed = True
            await admin.incremental_alter_configs(ResourceType.BROKER, "", ops)
            probe_key, probe_value = ops[0][0], ops[0][2]
            await eventually(lambda: all(str(s.config.values._data[probe_key]).lower() == probe_value.lower()
                                         or s.config.values._data[probe_key] == float(probe_value)
                                         for s in servers), "the change to reach both brokers")
            await asyncio.to_thread(produce_and_consume, bootstrap, 1)
            await asyncio.sleep(3)
    finally:
        for s in reversed(servers):
            await s.shutdown()

    never = set(BROKER_CONFIG.names()) - reads.broker - set(REFUSED_BROKER_KEYS)
    topic_never = set(TOPIC_CONFIG_DEF.names()) - reads.topic
    stale = DYNAMIC_BROKER_KEYS - reads.broker_after_change
    problems = []
    for unread, what in (
        (never, "broker keys accepted but never read by a running broker (honour them, or refuse them in "
                "REFUSED_BROKER_KEYS with a message)"),
        (topic_never, "topic keys accepted but never read (as a LogConfig field or from a topic's overrides)"),
        (stale, "broker keys accepted as dynamic but not read again after a live change (re-read them where used, "
                "listen to BrokerConfigs, or drop them from DYNAMIC_BROKER_KEYS)"),
    ):
        if unread - set(PENDING_KEYS):
            problems.append(what + ":\n    " + "\n    ".join(sorted(unread - set(PENDING_KEYS))))
    honoured = sorted(set(PENDING_KEYS) - never - topic_never - stale)
    if honoured:
        problems.append("keys in PENDING_KEYS that the run now reads (and re-reads after a live change, if "
                        "dynamic): take them out of PENDING_KEYS:\n    " + "\n    ".join(honoured))
    assert not problems, "\n".join(problems)


def test_pending_keys_are_keys_kavka_accepts():
    """A pending key is an accepted key whose behaviour is missing: not a
    refused key, not a typo (which the walk could never see read)."""
    for key in PENDING_KEYS:
        assert key in BROKER_CONFIG or key in TOPIC_CONFIG_DEF, f"{key} is not an accepted key"
        assert key not in REFUSED_BROKER_KEYS, f"{key} is refused; drop it from PENDING_KEYS"


def test_refused_keys_are_refused_with_a_message_naming_them():
    assert REFUSED_BROKER_KEYS
    for key, message in REFUSED_BROKER_KEYS.items():
        assert key not in BROKER_CONFIG, f"{key} is both accepted and refused"
        with pytest.raises(bc.ConfigError) as e:
            bc.KafkaConfig.from_props({"zookeeper.connect": "localhost:2181", key: "1"})
        assert key in str(e.value) and message in str(e.value)


def test_the_recording_sees_what_it_claims():
    """The walk's instruments: a key read through a KafkaConfig is seen,
    iteration and membership are not; a LogConfig field read is seen as
    its key. (A walk whose recording saw nothing would pass nothing.)"""
    seen: list[str] = []
    m = RecordingMapping({"a": 1, "b": 2}, seen.append)
    assert "a" in m and list(m) == ["a", "b"] and seen == []
    assert m["a"] == 1 and m.get("b") == 2 and seen == ["a", "b"]
    assert {f.name for f in fields(LogConfig)} >= {k.replace(".", "_") for k in TOPIC_CONFIG_DEF.names()}
