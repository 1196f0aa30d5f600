"""A real broker with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners
at once (plus a second SASL_PLAINTEXT listener whose sessions expire, for
KIP-368), and the clients people use connecting to each:

- confluent-kafka, kafka-python, aiokafka and kcat, over SSL (the server's
  certificate checked against the test CA, host name included), mutual TLS
  (a client certificate), SASL_PLAINTEXT with PLAIN, SASL_SSL with PLAIN and
  SASL_SSL with SCRAM-SHA-512 (users made with AlterUserScramCredentials),
  each producing, consuming in a group and committing;
- a wrong password refused cleanly for each client;
- the principal a connection gets (certificate DN through
  ssl.principal.mapping.rules, the SASL user) is what the ACL authorizer
  sees;
- Metadata on each listener advertises that listener's endpoint;
- DescribeConfigs shows no secret;
- the bad-input list against the running broker (TLS on the PLAINTEXT port,
  plaintext on a TLS port, a certificate from another CA, an unknown
  mechanism, a token before the handshake, a request before authentication,
  an expired session), each logged once with the peer, costing the broker no
  thread, while a good client keeps producing;
- librdkafka re-authenticates (KIP-368) on the listener whose sessions
  expire and keeps producing across several session lifetimes.

Inter-broker traffic stays on PLAINTEXT here (one broker talking to its own
controller).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from security.certs import Pki  # tests/security/certs.py

from kavka.tools.cluster import LocalCluster
from kavka.tools.ports import free_port

from .cluster_helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KCAT = shutil.which("kcat")
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" '
              + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
REAUTH_MS = 3000
RECORDS = 20


@dataclass(frozen=True)
class Files:
    ca: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    stranger_key: Path


@dataclass(frozen=True)
class Secure:
    cluster: LocalCluster
    ports: dict[str, int]
    files: Files
    pki: Pki

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    @property
    def broker_log(self) -> str:
        return self.cluster.brokers[0].log_path.read_text(errors="replace")

    @property
    def pid(self) -> int:
        process = self.cluster.brokers[0].process
        assert process is not None
        return process.pid


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    pki = Pki(tmp_path_factory.mktemp("pki"))
    stranger = pki.other_ca.issue("mallory")
    files = Files(
        ca=pki.ca_file(),
        client_cert=_write(pki.dir / "alice.pem", pki.client.chain_pem()),
        client_key=_write(pki.dir / "alice.key", pki.client.key_pem()),
        stranger_cert=_write(pki.dir / "mallory.pem", stranger.chain_pem()),
        stranger_key=_write(pki.dir / "mallory.key", stranger.key_pem()),
    )
    cluster = LocalCluster(1, tmp_path_factory.mktemp("security-listeners"),
                           zookeeper=f"{zookeeper}/kavka-sec-{uuid.uuid4().hex[:8]}")
    ports = {"PLAINTEXT": cluster.brokers[0].port, "SSL": free_port(), "SASL_PLAINTEXT": free_port(),
             "SASL_SSL": free_port(), "SASL_REAUTH": free_port()}
    cluster.config.update({
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "SASL_SSL:SASL_SSL,SASL_REAUTH:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.broker.write_pkcs12(pki.dir / "broker.p12", "broker-store-pass")),
        "ssl.keystore.password": "broker-store-pass",
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca),
        "listener.name.ssl.ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),O=Kavka Tests,C=CZ$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_reauth.plain.connections.max.reauth.ms": str(REAUTH_MS),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    })
    cluster.start()
    _add_scram_users(f"127.0.0.1:{ports['PLAINTEXT']}")
    yield Secure(cluster, ports, files, pki)
    cluster.stop()


def _add_scram_users(bootstrap: str) -> None:
    """AlterUserScramCredentials through librdkafka's AdminClient (what
    kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[password=...]' sends)."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                            password.encode()) for user, password in USERS.items()]
    for f in admin.alter_user_scram_credentials(upserts, request_timeout=20).values():
        f.result(20)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- per client, per mode ----------------------------------------------------------------

# mode -> (listener, SASL mechanism)
MODES = {"ssl": ("SSL", None), "mtls": ("SSL", None), "sasl_plaintext-plain": ("SASL_PLAINTEXT", "PLAIN"),
         "sasl_ssl-plain": ("SASL_SSL", "PLAIN"), "sasl_ssl-scram512": ("SASL_SSL", "SCRAM-SHA-512")}
LISTENER = {mode: listener for mode, (listener, _) in MODES.items()}
MECHANISM = {mode: mechanism for mode, (_, mechanism) in MODES.items()}


def _librdkafka(s: Secure, mode: str, password: str = USERS["alice"]) -> dict[str, str]:
    listener = LISTENER[mode]
    conf = {"bootstrap.servers": s.address(listener), "security.protocol": listener.lower()}
    if listener in ("SSL", "SASL_SSL"):
        conf["ssl.ca.location"] = str(s.files.ca)
    if mode == "mtls":
        conf.update({"ssl.certificate.location": str(s.files.client_cert),
                     "ssl.key.location": str(s.files.client_key)})
    if listener.startswith("SASL"):
        conf.update({"sasl.mechanisms": MECHANISM[mode], "sasl.username": "alice", "sasl.password": password})
    return conf


def _kafka_python(s: Secure, mode: str, password: str = USERS["alice"]) -> dict:
    listener = LISTENER[mode]
    conf: dict = {"bootstrap_servers": s.address(listener), "security_protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        conf.update({"ssl_cafile": str(s.files.ca), "ssl_check_hostname": True})
    if mode == "mtls":
        conf.update({"ssl_certfile": str(s.files.client_cert), "ssl_keyfile": str(s.files.client_key)})
    if listener.startswith("SASL"):
        conf.update({"sasl_mechanism": MECHANISM[mode], "sasl_plain_username": "alice",
                     "sasl_plain_password": password})
    return conf


def _aiokafka(s: Secure, mode: str, password: str = USERS["alice"]) -> dict:
    from aiokafka.helpers import create_ssl_context

    listener = LISTENER[mode]
    conf: dict = {"bootstrap_servers": s.address(listener), "security_protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        conf["ssl_context"] = create_ssl_context(
            cafile=str(s.files.ca),
            **({"certfile": str(s.files.client_cert), "keyfile": str(s.files.client_key)} if mode == "mtls" else {}))
    if listener.startswith("SASL"):
        conf.update({"sasl_mechanism": MECHANISM[mode], "sasl_plain_username": "alice",
                     "sasl_plain_password": password})
    return conf


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(RECORDS)]


def _create_topic(s: Secure, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": s.address("PLAINTEXT")})
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=20)[topic].result(30)


def _committed(s: Secure, group: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": s.address("PLAINTEXT"), "group.id": group})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()


def confluent_roundtrip(s: Secure, mode: str, topic: str, group: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    conf = _librdkafka(s, mode)
    errors: list[str] = []
    p = Producer({**conf, "acks": "all", "linger.ms": 5,
                  "error_cb": lambda e: errors.append(str(e))})
    for v in _values(topic):
        p.produce(topic, v, partition=0)
    assert p.flush(30) == 0, errors
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < RECORDS and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def kafka_python_roundtrip(s: Secure, mode: str, topic: str, group: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    conf = _kafka_python(s, mode)
    p = KafkaProducer(acks="all", **conf)
    try:
        for v in _values(topic):
            p.send(topic, v, partition=0)
        p.flush(30)
    finally:
        p.close(10)
    c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **conf)
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < RECORDS and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        c.commit()
    finally:
        c.close()
    return got


def aiokafka_roundtrip(s: Secure, mode: str, topic: str, group: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        conf = _aiokafka(s, mode)
        p = AIOKafkaProducer(acks="all", **conf)
        await p.start()
        try:
            for v in _values(topic):
                await p.send_and_wait(topic, v, partition=0)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **conf)
        await c.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(got) < RECORDS:
                    for records in (await c.getmany(timeout_ms=500)).values():
                        got.extend(r.value for r in records)
            await c.commit()
        finally:
            await c.stop()
        return got

    return asyncio.run(run())


def _kcat_args(s: Secure, mode: str, password: str = USERS["alice"]) -> list[str]:
    args = []
    for k, v in _librdkafka(s, mode, password).items():
        args += ["-b", v] if k == "bootstrap.servers" else ["-X", f"{k}={v}"]
    return args


def kcat_roundtrip(s: Secure, mode: str, topic: str, group: str) -> list[bytes]:
    assert KCAT is not None, "kcat is not installed: run `make deps` (Debian package kcat)"
    base = [KCAT, *_kcat_args(s, mode)]
    data = b"\n".join(_values(topic)) + b"\n"
    proc = subprocess.run([*base, "-P", "-t", topic, "-p", "0", "-X", "acks=all"], input=data,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    # a balanced consumer (-G) reads to the end (-e) and commits as it stops
    proc = subprocess.run([*base, "-G", group, "-X", "auto.offset.reset=earliest", "-c", str(RECORDS),
                           "-f", "%s\n", "-e", topic], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.split(b"\n")[:RECORDS]


CLIENTS = {"confluent": confluent_roundtrip, "kafka-python": kafka_python_roundtrip,
           "aiokafka": aiokafka_roundtrip, "kcat": kcat_roundtrip}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_produces_consumes_and_commits(secure, client, mode):
    topic = f"sec-{client}-{mode}"
    group = f"group-{client}-{mode}"
    _create_topic(secure, topic)
    got = CLIENTS[client](secure, mode, topic, group)
    assert got == _values(topic), f"{client} over {mode}: read {len(got)} of {RECORDS}\n{secure.cluster.broker_logs(20)}"
    assert wait_until(lambda: _committed(secure, group, topic) == RECORDS, 15, f"{client}'s commit of {group}")


# -- a wrong password, for each client ---------------------------------------------------------

def _confluent_wrong(s: Secure, mode: str, caplog) -> str:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[str] = []
    admin = AdminClient({**_librdkafka(s, mode, "guess"), "error_cb": lambda e: errors.append(str(e)),
                         "log_level": 0})
    with pytest.raises(KafkaException) as e:
        admin.list_topics(timeout=5)
    admin.poll(1)  # serves error_cb
    return " ".join([str(e.value), *errors])


def _kafka_python_wrong(s: Secure, mode: str, caplog) -> str:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    caplog.set_level("WARNING", "kafka")
    with pytest.raises(KafkaError) as e:
        KafkaAdminClient(bootstrap_timeout_ms=3000, **_kafka_python(s, mode, "guess"))
    # kafka-python reports the broker's error in its log and gives up with a timeout
    return f"{type(e.value).__name__}: {e.value} {caplog.text}"


def _aiokafka_wrong(s: Secure, mode: str, caplog) -> str:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    caplog.set_level("WARNING", "aiokafka")

    async def run() -> str:
        p = AIOKafkaProducer(request_timeout_ms=10000, **_aiokafka(s, mode, "guess"))
        try:
            with pytest.raises(KafkaError) as e:
                await p.start()
            # aiokafka logs the broker's error and raises "Unable to bootstrap"
            return f"{type(e.value).__name__}: {e.value} {caplog.text}"
        finally:
            await p.stop()

    return asyncio.run(run())


def _kcat_wrong(s: Secure, mode: str, caplog) -> str:
    assert KCAT is not None
    proc = subprocess.run([KCAT, *_kcat_args(s, mode, "guess"), "-L", "-m", "10"], capture_output=True, timeout=60)
    assert proc.returncode != 0
    return proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("mode", ["sasl_plaintext-plain", "sasl_ssl-scram512"])
@pytest.mark.parametrize("client, attempt", [("confluent", _confluent_wrong), ("kafka-python", _kafka_python_wrong),
                                             ("aiokafka", _aiokafka_wrong), ("kcat", _kcat_wrong)])
def test_a_wrong_password_fails_cleanly(secure, client, attempt, mode, caplog):
    # Kafka's answers: PLAIN says so; SCRAM's never tells whether the user exists
    answer = ("Authentication failed: Invalid username or password" if MECHANISM[mode] == "PLAIN" else
              "Authentication failed during authentication due to invalid credentials with SASL mechanism "
              "SCRAM-SHA-512")
    failures = f"on listener {LISTENER[mode]} (User:ANONYMOUS): {MECHANISM[mode]}: "
    before = secure.broker_log.count(failures)
    said = attempt(secure, mode, caplog)
    assert "guess" not in said
    assert answer in said, said
    assert wait_until(lambda: secure.broker_log.count(failures) > before, 10,
                      "the broker's log line for the failed authentication")
    assert "guess" not in secure.broker_log


# -- principals, listeners, configs ----------------------------------------------------------

class RawClient:
    """Kafka requests over a blocking socket (TLS when ``tls``), optionally
    after a SASL/PLAIN login: to ask the broker itself, without a client
    library's interpretation of its answers."""

    def __init__(self, s: Secure, listener: str, tls: ssl.SSLContext | None = None) -> None:
        sock = _raw(s, listener)
        self.sock = tls.wrap_socket(sock, server_hostname="127.0.0.1") if tls is not None else sock
        self.correlation = 0

    def call(self, body, version: int):
        from kavka.protocol.headers import decode_response

        self.correlation += 1
        self.sock.sendall(_kafka_frame(body.API_KEY, version, body, self.correlation))
        size = int.from_bytes(self._read(4), "big")
        return decode_response(body.API_KEY, version, self._read(size))[1]

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {n} bytes")
            data += chunk
        return data

    def login(self, user: str, password: str) -> RawClient:
        from kavka.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest

        assert self.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        assert self.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2).error_code == 0
        return self

    def close(self) -> None:
        self.sock.close()


def test_principals_are_what_the_authorizer_sees(secure):
    """ALLOW everything on the cluster to User:*, DENY DESCRIBE to User:alice:
    DescribeAcls (DESCRIBE on the cluster) from the mutual-TLS client
    (CN=alice, mapped by the rule) and from SASL user alice is refused, from
    the anonymous TLS client and SASL user bob it is answered."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    from kavka.protocol.messages import DescribeAclsRequest

    admin = AdminClient({"bootstrap.servers": secure.address("PLAINTEXT")})
    bindings = [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:*", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW),
                AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                           AclOperation.DESCRIBE, AclPermissionType.DENY)]
    for binding in bindings:  # the ALLOW first: until then, no ACL means everyone may
        for f in admin.create_acls([binding], request_timeout=20).values():
            f.result(20)
    any_acl = DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                  principal_filter=None, host_filter=None, operation=1, permission_type=1)
    ca = ssl.create_default_context(cafile=str(secure.files.ca))
    mtls = ssl.create_default_context(cafile=str(secure.files.ca))
    mtls.load_cert_chain(secure.files.client_cert, secure.files.client_key)

    def describe_acls(client: RawClient) -> tuple[int, str | None]:
        try:
            r = client.call(any_acl, 1)
            return r.error_code, r.error_message
        finally:
            client.close()

    refused = (31, "User:alice may not DESCRIBE the cluster, which listing ACLs needs")  # CLUSTER_AUTHORIZATION_FAILED
    try:
        assert wait_until(lambda: describe_acls(RawClient(secure, "SSL", mtls)) == refused, 15,
                          "the DENY to reach the authorizer's cache, refusing the certificate's principal")
        assert describe_acls(RawClient(secure, "SASL_SSL", ca).login("alice", USERS["alice"])) == refused
        assert describe_acls(RawClient(secure, "SASL_PLAINTEXT").login("alice", USERS["alice"])) == refused
        assert describe_acls(RawClient(secure, "SSL", ca)) == (0, None)
        assert describe_acls(RawClient(secure, "SASL_PLAINTEXT").login("bob", USERS["bob"])) == (0, None)
    finally:
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        for f in admin.delete_acls([everything], request_timeout=20).values():
            f.result(20)


@pytest.mark.parametrize("mode", list(MODES))
def test_metadata_advertises_the_listener_the_request_came_in_on(secure, mode):
    from confluent_kafka.admin import AdminClient

    md = AdminClient(_librdkafka(secure, mode)).list_topics(timeout=15)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", secure.ports[LISTENER[mode]])]


def test_registration_lists_every_listener_with_its_protocol(secure):
    """/brokers/ids/0 as Kafka writes it: every advertised endpoint, the
    listener -> security protocol map, host/port of the PLAINTEXT one."""
    import json

    from .cluster_helpers import ZkView

    with ZkView(secure.cluster) as zk:
        data, _ = zk.client.get("/brokers/ids/0")
    doc = json.loads(data)
    assert doc["endpoints"] == [f"{name}://127.0.0.1:{port}" for name, port in secure.ports.items()]
    assert doc["listener_security_protocol_map"] == {
        "PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL",
        "SASL_REAUTH": "SASL_PLAINTEXT"}
    assert (doc["host"], doc["port"]) == ("127.0.0.1", secure.ports["PLAINTEXT"])


@pytest.mark.parametrize("listener", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_find_coordinator_answers_with_the_listener_the_request_came_in_on(secure, listener):
    from kavka.protocol.messages import FindCoordinatorRequest

    tls = ssl.create_default_context(cafile=str(secure.files.ca)) if "SSL" in listener else None
    client = RawClient(secure, listener, tls)
    try:
        if listener.startswith("SASL"):
            client.login("bob", USERS["bob"])

        def coordinator():
            r = client.call(FindCoordinatorRequest(key="coordinated-group", key_type=0), 3)
            return r if r.error_code == 0 else None

        r = wait_until(coordinator, 30, "a coordinator for the group")
        assert (r.host, r.port) == ("127.0.0.1", secure.ports[listener])
    finally:
        client.close()


def test_describe_configs_shows_no_secret(secure):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": secure.address("PLAINTEXT")})
    resource = ConfigResource(ResourceType.BROKER, "0")
    configs = admin.describe_configs([resource], request_timeout=20)[resource].result(20)
    for name in ("ssl.keystore.password", "sasl.jaas.config", "ssl.key.password"):
        assert configs[name].is_sensitive and configs[name].value is None, name
    assert configs["ssl.keystore.location"].value.endswith("broker.p12")
    override = configs["listener.name.sasl_reauth.plain.connections.max.reauth.ms"]
    assert override.value == str(REAUTH_MS)
    text = repr({k: (v.value, v.is_sensitive) for k, v in configs.items()})
    assert "secret" not in text and "broker-store-pass" not in text


# -- the bad inputs, against the running broker ----------------------------------------------

def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def _raw(s: Secure, listener: str) -> socket.socket:
    host, port = s.address(listener).split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(65536) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    finally:
        sock.close()


def _kafka_frame(api_key: int, version: int, body, correlation_id: int = 1) -> bytes:
    from kavka.protocol.framing import frame
    from kavka.protocol.headers import RequestHeader, encode_request

    return frame(encode_request(RequestHeader(api_key, version, correlation_id, "raw-test"), body))


def test_bad_inputs_are_refused_logged_and_cost_no_thread(secure):
    from confluent_kafka import Producer

    from kavka.protocol.messages import MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest

    topic = "sec-bystander"
    _create_topic(secure, topic)
    acked: list[int] = []
    good = Producer({**_librdkafka(secure, "sasl_ssl-plain"), "linger.ms": 1})
    threads_before = _threads(secure.pid)
    ctx = ssl.create_default_context(cafile=str(secure.files.ca))

    for _ in range(10):
        # a TLS handshake on the PLAINTEXT port
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)), \
                ctx.wrap_socket(_raw(secure, "PLAINTEXT"), server_hostname="127.0.0.1") as s:
            s.recv(1)
        # a plaintext Kafka request on the TLS port
        sock = _raw(secure, "SSL")
        sock.sendall(_kafka_frame(3, 9, MetadataRequest(topics=[])))
        assert _closed(sock)
        # a client certificate from another CA
        stranger = ssl.create_default_context(cafile=str(secure.files.ca))
        stranger.load_cert_chain(secure.files.stranger_cert, secure.files.stranger_key)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)), \
                stranger.wrap_socket(_raw(secure, "SSL"), server_hostname="127.0.0.1") as s:
            s.sendall(_kafka_frame(3, 9, MetadataRequest(topics=[])))
            if s.recv(1) == b"":
                raise ConnectionError("closed")
        # an unknown mechanism, a token before the handshake, a request before authentication
        for data in (_kafka_frame(17, 1, SaslHandshakeRequest(mechanism="GSSAPI")),
                     _kafka_frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret")),
                     _kafka_frame(3, 9, MetadataRequest(topics=[]))):
            sock = _raw(secure, "SASL_PLAINTEXT")
            sock.sendall(data)
            sock.settimeout(10)
            buf = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
            sock.close()
        good.produce(topic, b"still here", partition=0, on_delivery=lambda err, msg: acked.append(err is None))
        good.poll(0)
    assert good.flush(30) == 0 and acked == [True] * 10
    assert _threads(secure.pid) <= threads_before + 1  # no thread per bad connection
    log = secure.broker_log
    assert "on listener PLAINTEXT: frame size 369295617" in log or "listener PLAINTEXT: frame size" in log
    assert "on listener SSL: not a TLS handshake" in log
    assert "on listener SSL: the client's certificate was refused" in log
    assert "unsupported SASL mechanism 'GSSAPI'" in log
    assert "SaslAuthenticate request received before SaslHandshake" in log
    assert "unexpected Kafka request of type API 3 during SASL handshake" in log


def test_librdkafka_reauthenticates_and_a_client_that_does_not_is_disconnected(secure):
    """KIP-368 on the listener with connections.max.reauth.ms: librdkafka
    re-authenticates and keeps producing across several session lifetimes;
    a hand-made client that does not re-authenticate is disconnected at its
    first request after expiry."""
    from confluent_kafka import Producer

    from kavka.protocol.messages import MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest

    topic = "sec-reauth"
    _create_topic(secure, topic)
    conf = {"bootstrap.servers": secure.address("SASL_REAUTH"), "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": USERS["alice"]}
    acked: list[bool] = []
    p = Producer({**conf, "linger.ms": 1})
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000 + 1
    while time.monotonic() < deadline:
        p.produce(topic, b"r", partition=0, on_delivery=lambda err, msg: acked.append(err is None))
        p.poll(0.2)
    assert p.flush(30) == 0 and acked and all(acked), f"{acked.count(False)} of {len(acked)} failed"
    assert "expired (connections.max.reauth.ms)" not in secure.broker_log

    sock = _raw(secure, "SASL_REAUTH")
    sock.sendall(_kafka_frame(17, 1, SaslHandshakeRequest(mechanism="PLAIN")))
    sock.recv(65536)
    sock.sendall(_kafka_frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret")))
    sock.recv(65536)
    time.sleep(REAUTH_MS / 1000 + 0.5)
    sock.sendall(_kafka_frame(3, 9, MetadataRequest(topics=[])))
    assert _closed(sock)
    assert wait_until(lambda: "the SASL session of User:alice expired" in secure.broker_log, 10, "the expiry log line")
