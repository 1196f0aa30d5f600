"""What ``kavka up --secure`` adds to a local cluster: certificates, users,
the brokers' security settings and ready client settings.

- Certificates (``kavka.tools.local_pki``) under ``<data-dir>/security``.
- Users, SCRAM-SHA-512 and SCRAM-SHA-256 credentials stored where Kafka
  keeps them (``/config/users/<user>``, announced through
  ``/config/changes``) before the brokers start: ``admin`` (a super user,
  for operators), ``broker`` (the brokers' own identity on the
  inter-broker listener, a super user too, as Kafka's inter-broker
  principal must be) and ``client`` (an application user, allowed
  everything on every topic, group and transactional id, and to create
  topics and write idempotently: ACLs stored with the users).
- Each broker: a ``SASL_SSL`` listener for clients and for inter-broker
  traffic (``inter.broker.listener.name``, SCRAM-SHA-512 with the
  ``broker`` user's JAAS config), an ``SSL`` listener that requires a client
  certificate (mutual TLS; the certificate's CN is the principal), its PEM
  keystore and the CA as truststore, and the ACL authorizer with
  ``super.users=User:admin;User:broker``. Its ``server.properties`` holds a
  password, so it is written 0600.
- ``client.properties`` (user ``client``) and ``admin.properties`` (user
  ``admin``) in librdkafka's keys (``security.protocol=SASL_SSL``,
  ``sasl.mechanism=SCRAM-SHA-512``, ``sasl.username``, ``sasl.password``,
  ``ssl.ca.location``), which confluent-kafka (as a dict), kcat (``-F``) and
  Kavka's tools (``--command-config``) take as they are; and
  ``client-mtls.properties`` for the mutual-TLS listener
  (``security.protocol=SSL`` with the client certificate). All 0600.

A second ``kavka up --secure`` on the same ``--data-dir`` reuses the
certificates and passwords (``credentials.json``, 0600): the brokers' logs
and the users stored in ZooKeeper stay valid.

Synchronous; called by ``LocalCluster`` from its one thread.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kavka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.client_properties import client_security_from_properties
from kavka.security.client_security import ClientSecurity
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.tools.local_pki import LocalPki, create_local_pki
from kavka.zk.acls import LiteralAclChangeZNode, ResourceAclsZNode
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.notifications import ConfigChangeNotificationZNode

ADMIN_USER, BROKER_USER, CLIENT_USER = "admin", "broker", "client"
USERS = (ADMIN_USER, BROKER_USER, CLIENT_USER)
MECHANISM = "SCRAM-SHA-512"
SASL_LISTENER, MTLS_LISTENER = "SASL_SSL", "SSL"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
# The principal of a mutual-TLS client is its certificate's CN (Kafka's
# ssl.principal.mapping.rules), so the client certificate is User:client.
MTLS_PRINCIPAL_RULES = "RULE:^CN=([^,]+),.*$/$1/,RULE:^.*CN=([^,]+)$/$1/,DEFAULT"


def _write_private(path: Path, text: str) -> None:
    """``path`` with ``text``, readable by its owner only from the start."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _properties_text(props: Mapping[str, str], heading: str) -> str:
    return "\n".join([f"# {heading}", *(f"{k}={v}" for k, v in props.items())]) + "\n"


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class SecureSetup:
    """One secured local cluster's certificates and users (see the module
    docstring). ``passwords`` maps each of ``USERS`` to its password."""

    directory: Path
    pki: LocalPki
    passwords: Mapping[str, str]

    def __repr__(self) -> str:  # passwords never in a repr
        return f"SecureSetup({str(self.directory)!r})"

    @classmethod
    def prepare(cls, directory: Path, broker_ids: Iterable[int]) -> SecureSetup:
        """Make (or reuse, when a previous run left them) the certificates
        and passwords in ``directory``."""
        ids = list(broker_ids)
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        pki = LocalPki(directory)
        credentials = directory / "credentials.json"
        if not pki.complete(ids):
            pki = create_local_pki(directory, ids, CLIENT_USER)
        passwords: dict[str, str] = {}
        if credentials.is_file():
            try:
                stored = json.loads(credentials.read_text())
                passwords = {u: str(stored[u]) for u in USERS}
            except (ValueError, KeyError, TypeError):
                passwords = {}
        if not passwords:
            passwords = {u: secrets.token_urlsafe(18) for u in USERS}
            _write_private(credentials, json.dumps(passwords, indent=1) + "\n")
        return cls(directory, pki, passwords)

    # -- brokers -----------------------------------------------------------
    def broker_config(self, broker_id: int, port: int, mtls_port: int) -> dict[str, str]:
        """The security keys of one broker's server.properties."""
        jaas = (f"{SCRAM_LOGIN_MODULE} required username={_jaas_quote(BROKER_USER)} "
                f"password={_jaas_quote(self.passwords[BROKER_USER])};")
        return {
            "listeners": f"{SASL_LISTENER}://127.0.0.1:{port},{MTLS_LISTENER}://127.0.0.1:{mtls_port}",
            "listener.security.protocol.map": f"{SASL_LISTENER}:SASL_SSL,{MTLS_LISTENER}:SSL",
            "inter.broker.listener.name": SASL_LISTENER,
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.{SASL_LISTENER.lower()}.{MECHANISM.lower()}.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.pki.broker_keystore(broker_id)),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.pki.ca),
            f"listener.name.{MTLS_LISTENER.lower()}.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": MTLS_PRINCIPAL_RULES,
            "authorizer.class.name": ACL_AUTHORIZER,
            "super.users": f"User:{ADMIN_USER};User:{BROKER_USER}",
        }

    def store_users(self, zk) -> None:
        """Each user's SCRAM credentials in ``/config/users/<user>`` (Kafka's
        format), with a change notification for brokers already running.
        ``zk`` is a started kazoo client on the cluster's chroot."""
        for user in USERS:
            config = {}
            for mechanism in (ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256):
                credential = ScramFormatter(mechanism).generate_credential(self.passwords[user])
                config[mechanism.mechanism_name] = credential.to_config_value()
            node = ConfigEntityZNode("users", user, config)
            if zk.exists(node.znode_path):
                zk.set(node.znode_path, node.encode())
            else:
                zk.create(node.znode_path, node.encode(), makepath=True)
            zk.create(ConfigChangeNotificationZNode.PREFIX, ConfigChangeNotificationZNode("users", user).encode(),
                      sequence=True, makepath=True)

    def store_acls(self, zk) -> None:
        """The ``client`` user's ACLs, where Kafka's AclAuthorizer keeps
        them (``/kafka-acl/<type>/<name>``, merged with what is there), each
        change announced under ``/kafka-acl-changes``."""
        principal = f"User:{CLIENT_USER}"
        allow = [(ResourceType.TOPIC, "*", AclOperation.ALL), (ResourceType.GROUP, "*", AclOperation.ALL),
                 (ResourceType.TRANSACTIONAL_ID, "*", AclOperation.ALL),
                 (ResourceType.CLUSTER, "kafka-cluster", AclOperation.CREATE),
                 (ResourceType.CLUSTER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
                 (ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE)]
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for resource_type, name, operation in allow:
            pattern = ResourcePattern(resource_type, name, PatternType.LITERAL)
            by_pattern.setdefault(pattern, set()).add(
                AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW))
        for pattern, entries in by_pattern.items():
            path = ResourceAclsZNode.path(pattern)
            if zk.exists(path):
                data, stat = zk.get(path)
                current = ResourceAclsZNode.decode(data, path).entries if data else frozenset()
                zk.set(path, ResourceAclsZNode(pattern, frozenset(current | entries)).encode(), version=stat.version)
            else:
                zk.create(path, ResourceAclsZNode(pattern, frozenset(entries)).encode(), makepath=True)
            zk.create(LiteralAclChangeZNode.PREFIX, LiteralAclChangeZNode(pattern).encode(), sequence=True,
                      makepath=True)

    # -- clients -----------------------------------------------------------
    def client_properties(self, user: str = CLIENT_USER) -> dict[str, str]:
        """librdkafka's keys for ``user`` over SASL_SSL + SCRAM-SHA-512."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM, "sasl.username": user,
                "sasl.password": self.passwords[user], "ssl.ca.location": str(self.pki.ca)}

    def mtls_properties(self) -> dict[str, str]:
        """librdkafka's keys for the mutual-TLS listener (the client certificate)."""
        return {"security.protocol": "SSL", "ssl.ca.location": str(self.pki.ca),
                "ssl.certificate.location": str(self.pki.client_certificate),
                "ssl.key.location": str(self.pki.client_key)}

    def security(self, user: str = ADMIN_USER) -> ClientSecurity:
        """Kavka's client security for ``user`` (readiness checks, ACL setup)."""
        return client_security_from_properties(self.client_properties(user), f"{self.directory} ({user})")

    @property
    def client_properties_path(self) -> Path:
        return self.directory / "client.properties"

    @property
    def admin_properties_path(self) -> Path:
        return self.directory / "admin.properties"

    @property
    def mtls_properties_path(self) -> Path:
        return self.directory / "client-mtls.properties"

    def write_client_files(self) -> None:
        _write_private(self.client_properties_path, _properties_text(
            self.client_properties(CLIENT_USER), f"user {CLIENT_USER} (SASL_SSL, SCRAM-SHA-512), written by kavka up --secure"))
        _write_private(self.admin_properties_path, _properties_text(
            self.client_properties(ADMIN_USER), f"user {ADMIN_USER}, a super user; written by kavka up --secure"))
        _write_private(self.mtls_properties_path, _properties_text(
            self.mtls_properties(), f"mutual TLS as User:{CLIENT_USER} (the SSL listener); written by kavka up --secure"))
