"""The broker's configuration keys: Kafka's names, types and defaults.

``BROKER_CONFIG`` is the ``ConfigDef`` of every key a ``server.properties``
may hold; ``kavka.common.broker_config.KafkaConfig`` parses and cross-checks
it. ``TOPIC_SYNONYMS`` maps each topic-level key (``segment.bytes`` ...) to
the broker keys that give its default, in precedence order, as Kafka's
DescribeConfigs reports them. ``DYNAMIC_BROKER_KEYS`` are the keys that may
be changed live through ``/config/brokers/<id>`` or ``/config/brokers/<default>``
(seed 002 §8).

Every key here is meant to be honoured by a running broker: the
config-key walk (``tests/server/test_config_key_walk.py``) runs brokers and
fails naming any key nothing reads, and any key of ``DYNAMIC_BROKER_KEYS``
not read again after a live change. ``REFUSED_BROKER_KEYS`` are Kafka keys
Kavka refuses, each with the reason the broker gives.

Pure data; any thread.
"""

from __future__ import annotations

import re

from kavka.common.config import NO_DEFAULT, ConfigDef, ConfigError, ConfigType, OneOf, Range

INT, LONG, DOUBLE, BOOL, STRING, LIST, PASSWORD = (
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
SHORT_MAX = 2**15 - 1
DOUBLE_MAX = 1.7976931348623157e308

CLEANUP_POLICIES = ("delete", "compact")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
# TLS versions Python's ssl (OpenSSL 3) negotiates at its default security
# level; Kafka's ssl.protocol also takes "TLS" (any version).
TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
KEYSTORE_TYPES = ("JKS", "PKCS12", "PEM")
SSL_CLIENT_AUTH = ("required", "requested", "none")
# Kavka-specific (docs/ARCHITECTURE.md): how a replica that becomes a follower truncates.
# leader-epoch is KIP-101's fix; hw is the seeds' original behaviour, kept so
# tests can show the data loss / divergence it allows.
TRUNCATION_MODES = ("leader-epoch", "hw")

# authorizer.class.name values: none, or Kafka's ACL authorizer under its
# current and its former class name.
AUTHORIZER_CLASSES = ("", "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")


# replica.selector.class values (KIP-392): unset (leader only) or Kafka's
# selectors by their class names (kavka.replication.replica_selector).
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
REPLICA_SELECTOR_CLASSES = (LEADER_SELECTOR, RACK_AWARE_REPLICA_SELECTOR)


def _replica_selector_class(key: str, value: object) -> None:
    if value not in (None, "") and value not in REPLICA_SELECTOR_CLASSES:
        raise ConfigError(key, f"value {value!r} is not a replica selector Kavka has; use {RACK_AWARE_REPLICA_SELECTOR} "
                               f"or {LEADER_SELECTOR}, or leave it unset (consumers read from the leader)")


def _authorizer_class(key: str, value: object) -> None:
    if value not in AUTHORIZER_CLASSES:
        raise ConfigError(key, f"value {value!r} is not an authorizer Kavka has; use {AUTHORIZER_CLASSES[1]} "
                               f"(or {AUTHORIZER_CLASSES[2]}), or leave it empty for no authorizer")


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:n,ip:n`` (an IPv6
    address keeps its colons: the count is after the last one; brackets
    around it are dropped). Raises ``ValueError`` naming the entry."""
    out: dict[str, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        try:
            n = int(count.strip())
        except ValueError:
            n = -1
        if not sep or not host or n < 0:
            raise ValueError(f"entry {entry!r} is not host:count with a count >= 0")
        out[host] = n
    return out


def _ip_overrides(key: str, value: object) -> None:
    try:
        parse_ip_overrides(str(value or ""))
    except ValueError as e:
        raise ConfigError(key, f"{e} (expected e.g. 'hostName:100,127.0.0.1:200')") from None


def _principal_list(key: str, value: object) -> None:
    """``super.users``: ``Type:name`` items separated by ';' (Kafka's
    SecurityUtils.parseKafkaPrincipal form)."""
    for item in str(value or "").split(";"):
        ptype, sep, name = item.strip().partition(":")
        if item.strip() and (not sep or not ptype.strip() or not name):
            raise ConfigError(key, f"principal {item.strip()!r} is not in the form Type:name (e.g. User:admin)")


# A Kafka release as (log.)message.format.version names one (Kafka's
# MetadataVersion.fromVersionString: 0.x.y[.z] or x.y[.z], optionally -IVn).
_KAFKA_VERSION = re.compile(r"(0\.(8|9|10|11)\.\d+(\.\d+)?|[1-3]\.\d+(\.\d+)?)(-IV\d+)?")


def kafka_version(key: str, value: object) -> None:
    if not _KAFKA_VERSION.fullmatch(str(value)):
        raise ConfigError(key, f"value {value!r} is not a Kafka version (e.g. 0.10.0, 2.8-IV1, 3.0)")


# Kafka's KerberosShortNamer.RULE_PARSER: DEFAULT, or
# RULE:[n:format](match)s/from/to/g followed by /L or /U.
_KERBEROS_RULE = re.compile(r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))")


def kerberos_rules(key: str, value: object) -> None:
    """``sasl.kerberos.principal.to.local.rules``: each rule as Kafka's
    KerberosShortNamer.parseRules takes it, its regexes compiling."""
    rules = value if isinstance(value, list) else str(value or "").split(",")
    for rule in (r.strip() for r in rules):
        m = _KERBEROS_RULE.match(rule)
        if not rule or m is None or m.end() != len(rule):
            rest = rule[m.end():] if m is not None else rule
            raise ConfigError(key, f"rule {rule!r} is not a Kerberos name rule (unmatched: {rest!r}); expected "
                                   "DEFAULT or RULE:[n:format](regex)s/from/to/g with /L or /U")
        if m.group(3) is not None and m.group(5) == "":
            raise ConfigError(key, f"rule {rule!r} has no number of components in RULE:[n:format]")
        for pattern in (m.group(8), m.group(10)):
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as e:
                    raise ConfigError(key, f"rule {rule!r}: regex {pattern!r} does not compile ({e})") from None


def before_3_0(version: str) -> bool:
    """A Kafka version (as ``kafka_version`` takes it) before 3.0, the
    inter-broker protocol from which (log.)message.format.version is
    ignored (KIP-724): 0.x, 1.x and 2.x."""
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) < 3


BROKER_CONFIG = ConfigDef()
_d = BROKER_CONFIG.define

# -- broker identity and network --------------------------------------------
_d("broker.id", INT, -1, "This broker's id; -1 lets the broker take one from ZooKeeper (/brokers/seqid) when broker.id.generation.enable.", Range(-1, INT_MAX))
_d("broker.id.generation.enable", BOOL, True, "Allow broker.id=-1: generate an id above reserved.broker.max.id.")
_d("reserved.broker.max.id", INT, 1000, "Highest id a user may configure; generated ids start above it.", Range(0, INT_MAX))
_d("broker.rack", STRING, None, "Rack of this broker, written to /brokers/ids/<id>; new partitions spread their replicas over the racks, and consumers with a client.rack may read from a replica in theirs (replica.selector.class).", nullable=True)
_d("replica.selector.class", STRING, None, "KIP-392: how a leader picks the replica a consumer reads from: org.apache.kafka.common.replica.RackAwareReplicaSelector (an in-sync replica in the consumer's client.rack) or org.apache.kafka.common.replica.LeaderSelector; unset: consumers read from the leader.", _replica_selector_class, nullable=True)
_d("listeners", LIST, "PLAINTEXT://:9092", "Comma-separated NAME://host:port the broker binds; empty host = all interfaces, port 0 = any free port.")
_d("advertised.listeners", LIST, None, "Listeners published in ZooKeeper for clients and other brokers; defaults to listeners.", nullable=True)
_d("listener.security.protocol.map", LIST, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Listener name to security protocol (NAME:PROTOCOL, comma-separated).")
_d("inter.broker.listener.name", STRING, None, "Listener brokers use to talk to each other; default: the one named after security.inter.broker.protocol.", nullable=True)
_d("security.inter.broker.protocol", STRING, "PLAINTEXT", "Security protocol between brokers (only when inter.broker.listener.name is unset).", OneOf(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), case_sensitive=True))
_d("num.network.threads", INT, 3, "Kafka's network threads each own a share of the connections (their reads, writes and TLS work). Kavka serves every connection on the broker's one event loop, TLS included, so there is no such pool to size: the key is accepted, because Kafka's sample server.properties sets it, validated, and a value other than the default is logged once as ignored.", Range(1, None))
_d("num.io.threads", INT, 8, "Threads doing the broker's blocking work: fsync, checkpoints, retention and segment deletion, log loading, coordinator scans (Kafka's request handler threads; Kavka handles requests on one event loop).", Range(1, None))
_d("background.threads", INT, 10, "Threads for background tasks (retention, deletion).", Range(1, None))
_d("queued.max.requests", INT, 500, "Requests read ahead (pipelined behind an earlier request of the same connection) and not yet taken up, across all connections; when reached, such reading waits. Every connection may still read its next request, as in Kafka, which reads one per connection at a time.", Range(1, None))
_d("queued.max.request.bytes", LONG, 104857600, "Bytes of requests held in memory (Kafka's memory pool): a connection whose next request does not fit waits, muted, before reading it. Requests larger than half of it are read one at a time besides, so at most this plus socket.request.max.bytes is held. -1 (or 0) = unbounded, Kafka's default; Kavka bounds it by default (a Python broker has no heap limit to fail on first).")
_d("socket.send.buffer.bytes", INT, 102400, "SO_SNDBUF of every accepted socket; -1 = OS default.", Range(-1, None))
_d("socket.receive.buffer.bytes", INT, 102400, "SO_RCVBUF of every accepted socket; -1 = OS default.", Range(-1, None))
_d("socket.listen.backlog.size", INT, 50, "Listen backlog of each listener socket (KIP-306); the kernel caps it at net.core.somaxconn.", Range(1, None))
_d("socket.request.max.bytes", INT, 104857600, "Largest request frame accepted; checked before allocating.", Range(1, None))
_d("max.request.partition.size.limit", INT, 2000, "Most partitions one DescribeTopicPartitions response describes (KIP-966); a request asking for more gets this many and a cursor to the rest.", Range(1, None))
_d("max.connections", INT, INT_MAX, "Connections the broker accepts in total; a connection over it is closed at once. The inter-broker listener's connections count but are never refused by it (KIP-402). Per listener: listener.name.<listener>.max.connections.", Range(0, None))
_d("max.connections.per.ip", INT, INT_MAX, "Connections accepted from one address (all listeners); a connection over it is closed at once. 0 only with max.connections.per.ip.overrides.", Range(0, None))
_d("max.connections.per.ip.overrides", STRING, "", "Per-address limits overriding max.connections.per.ip: hostName:n,ipAddress:n (names resolved when applied).", _ip_overrides)
_d("max.connection.creation.rate", INT, INT_MAX, "New connections a second the broker accepts on every listener but the inter-broker one (KIP-612); over it a new connection is closed at once. Per listener: listener.name.<listener>.max.connection.creation.rate.", Range(0, None))
_d("connections.max.idle.ms", LONG, 600000, "A connection with no request in flight and no bytes read or written for this many ms is closed.", Range(1, None))
_d("request.timeout.ms", INT, 30000, "Timeout of requests this broker sends (controller to broker, follower fetch).", Range(0, None))
_d("message.max.bytes", INT, 1048588, "Largest record batch accepted (topic-level max.message.bytes).", Range(0, None))
_d("fetch.max.bytes", INT, 57671680, "Most bytes a Fetch answer holds whatever the request asks (its first batch goes whole, KIP-74); also caps the min_bytes a fetch waits for.", Range(1024, None))
_d("max.incremental.fetch.session.cache.slots", INT, 1000, "Incremental fetch sessions (KIP-227) the broker keeps; 0 offers none (every Fetch is answered without a session).", Range(0, None))
_d("compression.type", STRING, "producer", "Topic compression; producer keeps the producer's codec.", OneOf(COMPRESSION_TYPES))

# -- metrics (Kavka's: Kafka exports JMX, scraped by the Prometheus JMX exporter agent) --
_d("metrics.port", INT, -1, "Port of the broker's Prometheus endpoint (http://metrics.host:port/metrics, Kafka's metrics named as the JMX exporter names them); -1 = no endpoint and no request timing, 0 = any free port (logged).", Range(-1, 65535))
_d("metrics.host", STRING, "", "Address the Prometheus endpoint binds; empty = all interfaces. The endpoint has no authentication: bind it where only monitoring reaches.")

# -- security: TLS (Kafka's SslConfigs, BrokerSecurityConfigs) ----------------------
# Each may be given per listener as listener.name.<listener>.<key> (LISTENER_KEYS).
_d("ssl.protocol", STRING, "TLSv1.3", "Highest TLS version of the listener's context (TLS: any); ssl.enabled.protocols lists the versions offered.", OneOf(("TLS", *TLS_VERSIONS), case_sensitive=True))
_d("ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", "TLS versions enabled on SSL connections.", OneOf(TLS_VERSIONS, case_sensitive=True))
_d("ssl.cipher.suites", LIST, None, "Cipher suites by their IANA names (TLS_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...); default: OpenSSL's.", nullable=True)
_d("ssl.keystore.type", STRING, "JKS", "PEM, PKCS12, or JKS (read as PKCS12, which keytool writes since Java 9; a legacy JKS file is refused with how to convert it).", OneOf(KEYSTORE_TYPES))
_d("ssl.keystore.location", STRING, None, "The broker's key and certificate chain: a PKCS12 file, or a PEM file holding the private key and the certificates.", nullable=True)
_d("ssl.keystore.password", PASSWORD, None, "Password of the PKCS12 keystore file.", nullable=True)
_d("ssl.key.password", PASSWORD, None, "Password of the private key (PEM: its encryption; PKCS12: when it differs from the store's).", nullable=True)
_d("ssl.keystore.key", PASSWORD, None, "The private key in PEM, inline (with ssl.keystore.type=PEM and ssl.keystore.certificate.chain).", nullable=True)
_d("ssl.keystore.certificate.chain", PASSWORD, None, "The certificate chain in PEM, inline (with ssl.keystore.type=PEM and ssl.keystore.key).", nullable=True)
_d("ssl.truststore.type", STRING, "JKS", "PEM, PKCS12, or JKS (read as PKCS12).", OneOf(KEYSTORE_TYPES))
_d("ssl.truststore.location", STRING, None, "Certificates of the CAs trusted to sign peers' certificates: a PKCS12 or PEM file.", nullable=True)
_d("ssl.truststore.password", PASSWORD, None, "Password of the PKCS12 truststore file.", nullable=True)
_d("ssl.truststore.certificates", PASSWORD, None, "Trusted certificates in PEM, inline (with ssl.truststore.type=PEM).", nullable=True)
_d("ssl.client.auth", STRING, "none", "Client certificates: required, requested (verified when sent) or none.", OneOf(SSL_CLIENT_AUTH))
_d("ssl.endpoint.identification.algorithm", STRING, "https", "https: this broker's own TLS clients (to other brokers) check the server's host name against its certificate; empty: no check.", OneOf(("https", "")), nullable=True)
_d("ssl.principal.mapping.rules", STRING, "DEFAULT", "Rules mapping a client certificate's distinguished name (RFC 2253) to a principal name: RULE:pattern/replacement/[LU], ..., DEFAULT.")

# -- security: SASL and sessions (Kafka's BrokerSecurityConfigs, KIP-368) ----------
_d("sasl.enabled.mechanisms", LIST, "GSSAPI", "SASL mechanisms a SASL listener offers (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER); Kafka's default GSSAPI (Kerberos) is not served.")
_d("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", "SASL mechanism brokers use with each other when the inter-broker listener is SASL.")
_d("sasl.jaas.config", PASSWORD, None, "JAAS login module config, the fallback for listener.name.<listener>.<mechanism>.sasl.jaas.config.", nullable=True)
_d("sasl.server.max.receive.size", INT, 524288, "Largest frame accepted from a client before it has authenticated.", Range(1, None))
_d("connections.max.reauth.ms", LONG, 0, "KIP-368: a SASL session lasts this long, then the client must re-authenticate or be disconnected; 0 = forever.", Range(0, None))
_d("connection.failed.authentication.delay.ms", INT, 100, "How long after answering a failed authentication the connection is closed.", Range(0, None))

# -- authorization (Kafka's AclAuthorizer) ----------------------------------------
_d("authorizer.class.name", STRING, "", "The authorizer: kafka.security.authorizer.AclAuthorizer (or Kafka's older name kafka.security.auth.SimpleAclAuthorizer) keeps ACLs in ZooKeeper and checks every request; empty = no authorizer, every request allowed.", _authorizer_class)
_d("super.users", STRING, "", "Principals allowed everything whatever the ACLs, separated by ';' (User:admin;User:broker).", _principal_list)
_d("allow.everyone.if.no.acl.found", BOOL, False, "With the authorizer on: allow everyone on a resource no ACL applies to (default: deny).")

# -- client quotas (KIP-13, KIP-124, KIP-599) -------------------------------------
_d("quota.window.num", INT, 11, "Sample windows kept to measure client byte rates and request time.", Range(1, None))
_d("quota.window.size.seconds", INT, 1, "Length of each client quota sample window.", Range(1, None))
_d("controller.quota.window.num", INT, 11, "Sample windows of the controller mutation quota (its burst is num x size x rate).", Range(1, None))
_d("controller.quota.window.size.seconds", INT, 1, "Length of each controller mutation quota window.", Range(1, None))

# -- ZooKeeper -----------------------------------------------------------------
_d("zookeeper.connect", STRING, NO_DEFAULT, "host:port[,host:port...][/chroot] of ZooKeeper.")
_d("zookeeper.session.timeout.ms", INT, 18000, "ZooKeeper session timeout.", Range(1, None))
_d("zookeeper.connection.timeout.ms", INT, None, "How long to wait for a ZooKeeper connection; default: the session timeout.", Range(1, None), nullable=True)
_d("zookeeper.max.in.flight.requests", INT, 10, "ZooKeeper requests the broker pipelines before waiting.", Range(1, None))

# -- topics ----------------------------------------------------------------------
_d("num.partitions", INT, 1, "Partitions of auto-created topics and CreateTopics with -1.", Range(1, None))
_d("default.replication.factor", INT, 1, "Replication factor of auto-created topics and CreateTopics with -1.", Range(1, SHORT_MAX))
_d("min.insync.replicas", INT, 1, "ISR size acks=all needs (topic min.insync.replicas).", Range(1, None))
_d("unclean.leader.election.enable", BOOL, False, "Allow electing a replica outside the ISR (may lose committed data).")
_d("auto.create.topics.enable", BOOL, True, "Create unknown topics on Metadata requests.")
_d("delete.topic.enable", BOOL, True, "Let the controller act on /admin/delete_topics.")

# -- replication -----------------------------------------------------------------
_d("replica.lag.time.max.ms", LONG, 30000, "A follower not caught up for this long leaves the ISR.", Range(1, None))
_d("replica.socket.timeout.ms", INT, 30000, "Socket timeout of follower fetches.", Range(1, None))
_d("replica.socket.receive.buffer.bytes", INT, 65536, "SO_RCVBUF of follower fetch sockets; -1 = OS default.", Range(-1, None))
_d("replica.fetch.max.bytes", INT, 1048576, "Bytes a follower asks per partition.", Range(0, None))
_d("replica.fetch.response.max.bytes", INT, 10485760, "Bytes a follower asks per fetch.", Range(0, None))
_d("replica.fetch.min.bytes", INT, 1, "min_bytes of follower fetches.", Range(1, None))
_d("replica.fetch.wait.max.ms", INT, 500, "max_wait_ms of follower fetches; at most replica.lag.time.max.ms.", Range(0, None))
_d("replica.fetch.backoff.ms", INT, 1000, "Pause after a failed follower fetch.", Range(0, None))
_d("num.replica.fetchers", INT, 1, "Fetcher tasks per source broker.", Range(1, None))
_d("replica.high.watermark.checkpoint.interval.ms", LONG, 5000, "How often the HW checkpoint file is written.", Range(1, None))
_d("replica.truncation.mode", STRING, "leader-epoch", "Kavka: follower truncation by leader epoch (KIP-101) or to the HW (the seeds' original design).", OneOf(TRUNCATION_MODES, case_sensitive=True))
_d("leader.replication.throttled.rate", LONG, LONG_MAX, "Bytes/s the leader serves to throttled replicas (seed 002 §8).", Range(0, None))
_d("follower.replication.throttled.rate", LONG, LONG_MAX, "Bytes/s a follower fetches for throttled replicas (seed 002 §8).", Range(0, None))

# -- controller ------------------------------------------------------------------
_d("controller.socket.timeout.ms", INT, 30000, "Timeout of controller-to-broker requests.", Range(1, None))
_d("auto.leader.rebalance.enable", BOOL, True, "Periodically move leadership back to preferred replicas.")
_d("leader.imbalance.per.broker.percentage", INT, 10, "Rebalance a broker's partitions when this % of them are led elsewhere.", Range(0, 100))
_d("leader.imbalance.check.interval.seconds", LONG, 300, "How often the controller checks leader imbalance.", Range(1, None))
_d("controlled.shutdown.enable", BOOL, True, "On SIGTERM, ask the controller to move leadership away first.")
_d("controlled.shutdown.max.retries", INT, 3, "ControlledShutdown attempts before shutting down anyway.", Range(0, None))
_d("controlled.shutdown.retry.backoff.ms", LONG, 5000, "Pause between ControlledShutdown attempts.", Range(0, None))

# -- group coordinator and offsets -----------------------------------------------------
_d("offsets.topic.num.partitions", INT, 50, "Partitions of __consumer_offsets.", Range(1, None))
_d("offsets.topic.replication.factor", INT, 3, "Replication factor of __consumer_offsets (capped by live brokers at creation).", Range(1, SHORT_MAX))
_d("offsets.topic.segment.bytes", INT, 104857600, "segment.bytes of __consumer_offsets.", Range(1, None))
_d("offsets.topic.compression.codec", INT, 0, "Codec of every batch the group coordinator writes to __consumer_offsets (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).", Range(0, 4))
_d("offsets.load.buffer.size", INT, 5242880, "Read size when loading __consumer_offsets.", Range(1, None))
_d("offsets.retention.minutes", INT, 10080, "Committed offsets of empty groups expire after this.", Range(1, None))
_d("offsets.retention.check.interval.ms", LONG, 600000, "How often expired offsets are removed.", Range(1, None))
_d("offsets.commit.timeout.ms", INT, 5000, "How long an offset commit waits for __consumer_offsets replicas.", Range(1, None))
_d("group.min.session.timeout.ms", INT, 6000, "Smallest session timeout a consumer may ask.", Range(0, None))
_d("group.max.session.timeout.ms", INT, 1800000, "Largest session timeout a consumer may ask.", Range(0, None))
_d("group.initial.rebalance.delay.ms", INT, 3000, "Wait for more members before the first rebalance of a new group.", Range(0, None))
_d("group.max.size", INT, INT_MAX, "Most members of one consumer group.", Range(1, None))
# consumer-protocol groups (KIP-848): Kafka 4's names and defaults
_d("group.consumer.assignors", LIST, "uniform,range", "Server-side assignors of consumer-protocol groups (KIP-848); the first is the default, a member may prefer another of the list. Kafka's class names (org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...RangeAssignor) are accepted too.",
   OneOf(("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
          "org.apache.kafka.coordinator.group.assignor.RangeAssignor"), case_sensitive=True))
_d("group.consumer.session.timeout.ms", INT, 45000, "A consumer-protocol member that sends no ConsumerGroupHeartbeat for this long is fenced out of its group.", Range(1, None))
_d("group.consumer.heartbeat.interval.ms", INT, 5000, "How often consumer-protocol members are told to send ConsumerGroupHeartbeat.", Range(1, None))
_d("group.consumer.max.size", INT, INT_MAX, "Most members of one consumer-protocol group.", Range(1, None))

# -- Kerberos (GSSAPI) login tuning (Kafka's SaslConfigs, BrokerSecurityConfigs) --------
# Kafka reads these only for a listener that enables GSSAPI, and accepts them
# otherwise (its tools and clients set them: librdkafka's admin tests alter
# sasl.kerberos.min.time.before.relogin on a broker, and Kafka's
# DynamicListenerConfig takes them live). Kavka does not implement GSSAPI:
# sasl.enabled.mechanisms refuses it, naming the key. So these are validated
# as Kafka's KerberosShortNamer would parse them and accepted; a value other
# than the default is logged once as having no effect
# (kavka.server.ignored_configs).
_NO_GSSAPI = (" Has no effect in Kavka, which does not implement GSSAPI (sasl.enabled.mechanisms refuses it): "
              "validated and accepted so Kafka configurations and tools carry over; a value other than the "
              "default is logged as ignored.")
_d("sasl.kerberos.service.name", STRING, None, "Kerberos principal name Kafka runs as." + _NO_GSSAPI, nullable=True)
_d("sasl.kerberos.kinit.cmd", STRING, "/usr/bin/kinit", "Kerberos kinit command path." + _NO_GSSAPI)
_d("sasl.kerberos.ticket.renew.window.factor", DOUBLE, 0.8, "Kerberos ticket renewal point as a fraction of its lifetime." + _NO_GSSAPI, Range(0.0, 1.0))
_d("sasl.kerberos.ticket.renew.jitter", DOUBLE, 0.05, "Random jitter added to the Kerberos renewal time, as a fraction of the lifetime." + _NO_GSSAPI, Range(0.0, 1.0))
_d("sasl.kerberos.min.time.before.relogin", LONG, 60000, "Kerberos login thread sleep between refresh attempts (ms)." + _NO_GSSAPI, Range(0, None))
_d("sasl.kerberos.principal.to.local.rules", LIST, "DEFAULT", "Rules mapping Kerberos principal names to short names: RULE:[n:format](regex)s/from/to/g/L|U, ..., DEFAULT (Kafka's KerberosShortNamer)." + _NO_GSSAPI, kerberos_rules)

# -- transactions and producer ids -----------------------------------------------------
_d("transaction.state.log.num.partitions", INT, 50, "Partitions of __transaction_state.", Range(1, None))
_d("transaction.state.log.replication.factor", INT, 3, "Replication factor of __transaction_state.", Range(1, SHORT_MAX))
_d("transaction.state.log.min.isr", INT, 2, "min.insync.replicas of __transaction_state.", Range(1, None))
_d("transaction.state.log.segment.bytes", INT, 104857600, "segment.bytes of __transaction_state.", Range(1, None))
_d("transaction.state.log.load.buffer.size", INT, 5242880, "Read size when loading __transaction_state.", Range(1, None))
_d("transaction.max.timeout.ms", INT, 900000, "Largest transaction timeout a producer may ask.", Range(1, None))
_d("transactional.id.expiration.ms", INT, 604800000, "Idle transactional ids expire after this.", Range(1, None))
_d("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000, "How often the coordinator aborts transactions past their timeout.", Range(1, None))
_d("producer.id.expiration.ms", INT, 86400000, "A producer id's state (sequence numbers, epoch) is forgotten this long after its last batch, unless it has an open transaction (KIP-854).", Range(1, None))
_d("producer.id.expiration.check.interval.ms", INT, 600000, "How often every log drops its expired producer ids.", Range(1, None))

# -- log manager (seed 002) ----------------------------------------------------------------
_d("log.dirs", LIST, None, "Comma-separated data directories; default: log.dir.", nullable=True)
_d("log.dir", STRING, "/tmp/kafka-logs", "The data directory when log.dirs is unset.")
_d("num.recovery.threads.per.data.dir", INT, 1, "Threads per data directory recovering logs at startup and flushing at shutdown.", Range(1, None))
_d("log.segment.bytes", INT, 1073741824, "Roll a segment at this size (topic segment.bytes).", Range(14, None))
_d("log.roll.ms", LONG, None, "Roll a segment at this age (topic segment.ms); beats log.roll.hours.", Range(1, None), nullable=True)
_d("log.roll.hours", INT, 168, "Roll a segment at this age when log.roll.ms is unset.", Range(1, None))
_d("log.roll.jitter.ms", LONG, None, "Random jitter subtracted from the roll age (topic segment.jitter.ms); beats log.roll.jitter.hours.", Range(0, None), nullable=True)
_d("log.roll.jitter.hours", INT, 0, "Roll jitter when log.roll.jitter.ms is unset.", Range(0, None))
_d("log.retention.ms", LONG, None, "Delete segments older than this (topic retention.ms); -1 = keep forever; beats minutes and hours.", nullable=True)
_d("log.retention.minutes", INT, None, "Retention in minutes when log.retention.ms is unset; beats hours.", nullable=True)
_d("log.retention.hours", INT, 168, "Retention in hours when neither ms nor minutes is set.")
_d("log.retention.bytes", LONG, -1, "Delete old segments beyond this size per partition (topic retention.bytes); -1 = no limit.")
_d("log.retention.check.interval.ms", LONG, 300000, "How often retention runs.", Range(1, None))
_d("log.cleanup.policy", LIST, "delete", "delete, compact, or both (topic cleanup.policy).", OneOf(CLEANUP_POLICIES))
_d("log.cleaner.enable", BOOL, True, "Run the log cleaner (needed by compacted topics such as __consumer_offsets).")
_d("log.cleaner.threads", INT, 1, "Cleaner threads.", Range(0, None))
_d("log.cleaner.io.max.bytes.per.second", DOUBLE, DOUBLE_MAX, "Cleaner I/O throttle.")
_d("log.cleaner.dedupe.buffer.size", LONG, 134217728, "Memory for the cleaner's key-to-offset map, all threads together.")
_d("log.cleaner.io.buffer.size", INT, 524288, "Cleaner read/write buffer, all threads together.", Range(0, None))
_d("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, "Fill factor of the cleaner's key-to-offset map.", Range(0.01, 1.0))
_d("log.cleaner.backoff.ms", LONG, 15000, "Cleaner sleep when there is nothing to clean.", Range(0, None))
_d("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, "Dirty ratio that makes a log cleanable (topic min.cleanable.dirty.ratio).", Range(0.0, 1.0))
_d("log.cleaner.delete.retention.ms", LONG, 86400000, "Tombstones are kept this long (topic delete.retention.ms).", Range(0, None))
_d("log.cleaner.min.compaction.lag.ms", LONG, 0, "Records younger than this are not compacted (topic min.compaction.lag.ms).", Range(0, None))
_d("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, "Records older than this make the log cleanable (topic max.compaction.lag.ms).", Range(1, None))
_d("log.index.size.max.bytes", INT, 10485760, "Size of a segment's offset and time index (topic segment.index.bytes).", Range(4, None))
_d("log.index.interval.bytes", INT, 4096, "Bytes of log between index entries (topic index.interval.bytes).", Range(0, None))
_d("log.flush.interval.messages", LONG, LONG_MAX, "fsync after this many records (topic flush.messages).", Range(1, None))
_d("log.flush.interval.ms", LONG, None, "fsync after this many ms (topic flush.ms); default log.flush.scheduler.interval.ms.", Range(0, None), nullable=True)
_d("log.flush.scheduler.interval.ms", LONG, LONG_MAX, "How often the flusher checks logs.", Range(0, None))
_d("log.flush.offset.checkpoint.interval.ms", INT, 60000, "How often recovery-point-offset-checkpoint is written.", Range(0, None))
_d("log.flush.start.offset.checkpoint.interval.ms", INT, 60000, "How often log-start-offset-checkpoint is written.", Range(0, None))
_d("log.segment.delete.delay.ms", LONG, 60000, "A .deleted segment is removed after this (topic file.delete.delay.ms).", Range(0, None))
_d("log.preallocate", BOOL, False, "Preallocate segment files (topic preallocate).")
_d("log.message.timestamp.type", STRING, "CreateTime", "CreateTime or LogAppendTime (topic message.timestamp.type).", OneOf(TIMESTAMP_TYPES, case_sensitive=True))
_d("log.message.timestamp.difference.max.ms", LONG, LONG_MAX, "Deprecated (KIP-937): the before/after limits while they are at their defaults (topic message.timestamp.difference.max.ms).", Range(0, None))
_d("log.message.timestamp.before.max.ms", LONG, LONG_MAX, "How far a CreateTime timestamp may lie before the broker's clock (KIP-937; topic message.timestamp.before.max.ms).", Range(0, None))
_d("log.message.timestamp.after.max.ms", LONG, LONG_MAX, "How far a CreateTime timestamp may lie after the broker's clock (KIP-937; topic message.timestamp.after.max.ms).", Range(0, None))
_d("log.message.format.version", STRING, "3.0-IV1", "Deprecated (KIP-724; topic message.format.version): from inter-broker protocol 3.0 Kafka ignores it and writes record format v2, as Kavka always does. A Kafka version is required (0.10.0, 2.8-IV1 ...); one below 3.0 is logged once as ignored.", kafka_version)

del _d

# Topic-level key -> broker keys that default it, highest precedence first
# (Kafka's DescribeConfigs synonyms). Broker keys not listed do not reach
# topic configs. Derived values (retention.ms from minutes/hours ...) are
# computed in broker_config.log_defaults.
TOPIC_SYNONYMS: dict[str, tuple[str, ...]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "max.message.bytes": ("message.max.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "cleanup.policy": ("log.cleanup.policy",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
    "min.insync.replicas": ("min.insync.replicas",),
    "compression.type": ("compression.type",),
    "preallocate": ("log.preallocate",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.format.version": ("log.message.format.version",),
}

# Kafka keys Kavka refuses, with why: a server.properties naming one stops
# the broker with the message (the config-key walk,
# tests/server/test_config_key_walk.py, checks that every other key Kafka's
# table has that Kavka accepts is read by a running broker).
_KRAFT = ("Kavka runs with ZooKeeper (zookeeper.connect), as the seeds design it; KRaft mode "
          "(process.roles, node.id, controller.quorum.voters, controller.listener.names) is not supported: "
          "use a ZooKeeper-mode server.properties")
REFUSED_BROKER_KEYS: dict[str, str] = {
    "log.message.downconversion.enable": "Kavka serves Fetch v4 and later only (KIP-896), so there is nothing to "
                                         "down-convert; remove the key",
    "process.roles": _KRAFT,
    "node.id": _KRAFT,
    "controller.quorum.voters": _KRAFT,
    "controller.quorum.bootstrap.servers": _KRAFT,
    "controller.listener.names": _KRAFT,
}

# Keys a listener may override with listener.name.<listener>.<key>, the
# listener's name lower-case (Kafka's ListenerName.configPrefix), and those a
# listener may set per SASL mechanism with listener.name.<listener>.<mechanism>.<key>
# (ListenerName.saslMechanismConfigPrefix, the mechanism lower-case).
SSL_KEYS: frozenset[str] = frozenset(k for k in BROKER_CONFIG.names() if k.startswith("ssl."))
SASL_LISTENER_KEYS: frozenset[str] = frozenset({"sasl.enabled.mechanisms", "sasl.server.max.receive.size",
                                                "connections.max.reauth.ms"})
# A listener's own connection limits (Kafka's ListenerReconfigurableConfigs),
# which may also change live: listener.name.<listener>.max.connections ...
CONNECTION_LISTENER_KEYS: frozenset[str] = frozenset({"max.connections", "max.connection.creation.rate"})
LISTENER_KEYS: frozenset[str] = SSL_KEYS | SASL_LISTENER_KEYS | CONNECTION_LISTENER_KEYS
MECHANISM_KEYS: frozenset[str] = frozenset({"sasl.jaas.config", "connections.max.reauth.ms"})

# Keys that /config/brokers/<id> and /config/brokers/<default> may set, applied
# live (seed 002 §8): every topic default, plus thread counts, cleaner tuning
# and replication throttles. Listeners and ZooKeeper settings need a restart.
DYNAMIC_BROKER_KEYS: frozenset[str] = frozenset(
    # Kafka's DynamicLogConfig leaves out log.message.format.version.
    {k for keys in TOPIC_SYNONYMS.values() for k in keys if k != "log.message.format.version"}
    | {
        "num.network.threads",
        "num.io.threads",
        "background.threads",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "max.connection.creation.rate",
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    }
    # Kafka's DynamicListenerConfig reconfigures the Kerberos keys live.
    | {k for k in BROKER_CONFIG.names() if k.startswith("sasl.kerberos.")}
)
