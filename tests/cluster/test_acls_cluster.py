"""ACLs on a real cluster (broker processes, real ZooKeeper) with
``authorizer.class.name`` set: ``kavka acls --add/--list/--remove`` with
kafka-acls.sh's output and shortcuts, every broker answering from its own
cache (kept current by the change notifications), a restarted broker
loading them, the znodes exactly where Kafka keeps them; confluent-kafka's
AdminClient create_acls/describe_acls/delete_acls; DescribeAcls/CreateAcls
without DESCRIBE/ALTER on the cluster refused and audited; no authorizer:
SECURITY_DISABLED."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.cluster.cluster_helpers import ZkView, wait_until

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": "User:ANONYMOUS"}  # PLAINTEXT clients (and brokers) are User:ANONYMOUS

pytestmark = pytest.mark.cluster


def kavka(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kavka", "acls", *args], input=input, capture_output=True,
                          text=True, timeout=60)


def block(heading: str, *entries: str) -> str:
    return f"{heading} \n " + "\n".join("\t" + e for e in entries) + " \n\n"


def entry(principal: str, op: str, perm: str = "ALLOW", host: str = "*") -> str:
    return f"(principal={principal}, host={host}, operation={op}, permissionType={perm})"


def resource(rtype: str, name: str, ptype: str = "LITERAL") -> str:
    return f"ResourcePattern(resourceType={rtype}, name={name}, patternType={ptype})"


def test_kavka_acls_add_list_remove_on_every_broker(make_cluster) -> None:
    cluster = make_cluster(brokers=2, config=AUTHORIZER)
    b0, b1 = (cluster.brokers[i].address for i in (0, 1))

    r = kavka("--bootstrap-server", b0, "--add", "--allow-principal", "User:alice", "--operation", "Read",
              "--operation", "write", "--topic", "orders")
    assert r.returncode == 0, r.stderr
    orders = resource("TOPIC", "orders")
    expected = block(f"Current ACLs for resource `{orders}`:", entry("User:alice", "READ"), entry("User:alice", "WRITE"))
    assert r.stdout == block(f"Adding ACLs for resource `{orders}`:", entry("User:alice", "READ"),
                             entry("User:alice", "WRITE")) + expected

    # The other broker learns it from the change notification, not a restart.
    wait_until(lambda: kavka("--bootstrap-server", b1, "--list", "--topic", "orders").stdout == expected, 20,
               "broker 1 to list the ACL added through broker 0")

    r = kavka("--bootstrap-server", b1, "--add", "--producer", "--idempotent", "--topic", "pay", "--transactional-id",
              "tx", "--allow-principal", "User:p")
    assert r.returncode == 0, r.stderr
    r = kavka("--bootstrap-server", b1, "--add", "--consumer", "--topic", "pay", "--group", "g",
              "--allow-principal", "User:c", "--allow-host", "10.0.0.7")
    assert r.returncode == 0, r.stderr
    r = kavka("--bootstrap-server", b1, "--add", "--resource-pattern-type", "prefixed", "--topic", "pa",
              "--deny-principal", "User:mallory", "--operation", "All")
    assert r.returncode == 0, r.stderr

    def listing(*extra: str, via: str = b0) -> str:
        got = kavka("--bootstrap-server", via, "--list", *extra)
        assert got.returncode == 0, got.stderr
        return got.stdout

    full = "".join([
        block(f"Current ACLs for resource `{orders}`:", entry("User:alice", "READ"), entry("User:alice", "WRITE")),
        block(f"Current ACLs for resource `{resource('TOPIC', 'pay')}`:",
              entry("User:c", "READ", host="10.0.0.7"), entry("User:c", "DESCRIBE", host="10.0.0.7"),
              entry("User:p", "WRITE"), entry("User:p", "CREATE"), entry("User:p", "DESCRIBE")),
        block(f"Current ACLs for resource `{resource('TOPIC', 'pa', 'PREFIXED')}`:",
              entry("User:mallory", "ALL", "DENY")),
        block(f"Current ACLs for resource `{resource('GROUP', 'g')}`:", entry("User:c", "READ", host="10.0.0.7")),
        block(f"Current ACLs for resource `{resource('CLUSTER', 'kafka-cluster')}`:",
              entry("User:p", "IDEMPOTENT_WRITE")),
        block(f"Current ACLs for resource `{resource('TRANSACTIONAL_ID', 'tx')}`:",
              entry("User:p", "WRITE"), entry("User:p", "DESCRIBE")),
    ])
    wait_until(lambda: listing() == full and listing(via=b1) == full, 20, "both brokers to list every ACL")
    assert listing("--topic", "payments", "--resource-pattern-type", "match") == block(
        f"Current ACLs for resource `{resource('TOPIC', 'pa', 'PREFIXED')}`:", entry("User:mallory", "ALL", "DENY"))
    assert listing("--principal", "User:alice") == "ACLs for principal `User:alice`\n" + expected

    # Kafka's layout in ZooKeeper.
    with ZkView(cluster) as zk:
        data, _ = zk.client.get("/kafka-acl/Topic/orders")
        assert json.loads(data) == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
        assert zk.client.exists("/kafka-acl-extended/prefixed/Topic/pa")
        assert zk.client.exists("/kafka-acl/TransactionalId/tx") and zk.client.exists("/kafka-acl/Cluster/kafka-cluster")
        notes = [zk.client.get(f"/kafka-acl-changes/{c}")[0] for c in sorted(zk.client.get_children("/kafka-acl-changes"))]
        assert b"TOPIC:orders" in notes
        ext = [json.loads(zk.client.get(f"/kafka-acl-extended-changes/{c}")[0])
               for c in zk.client.get_children("/kafka-acl-extended-changes")]
        assert {"version": 1, "resourceType": "TOPIC", "name": "pa", "patternType": "PREFIXED"} in ext

    # A restarted broker loads them all.
    cluster.restart_broker(1)
    cluster.wait_ready({0, 1})
    assert listing(via=b1) == full

    # --remove asks first; "n" keeps, --force does not ask.
    r = kavka("--bootstrap-server", b0, "--remove", "--topic", "orders", input="n\n")
    assert r.returncode == 0 and "Are you sure you want to delete all ACLs for resource filter " \
        f"`{orders}`? (y/n)" in r.stdout
    assert listing("--topic", "orders") == expected
    r = kavka("--bootstrap-server", b0, "--remove", "--topic", "orders", "--allow-principal", "User:alice",
              "--operation", "Read", input="y\n")
    assert r.returncode == 0, r.stderr
    assert listing("--topic", "orders") == block(f"Current ACLs for resource `{orders}`:", entry("User:alice", "WRITE"))
    r = kavka("--bootstrap-server", b0, "--remove", "--force", "--topic", "pay", "--resource-pattern-type", "match")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: "pay" not in listing(via=b1) and "mallory" not in listing(via=b1), 20,
               "broker 1 to see the MATCH removal (literal pay and prefixed pa)")


def test_confluent_admin_client_manages_acls(make_cluster) -> None:
    cluster = make_cluster(brokers=1, config=AUTHORIZER)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    lit = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    pre = AclBinding(ResourceType.GROUP, "app-", ResourcePatternType.PREFIXED, "User:bob", "10.0.0.1",
                     AclOperation.ALL, AclPermissionType.DENY)
    for f in admin.create_acls([lit, pre], request_timeout=20).values():
        assert f.result(timeout=30) is None

    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    assert set(admin.describe_acls(every, request_timeout=20).result(timeout=30)) == {lit, pre}
    match = AclBindingFilter(ResourceType.GROUP, "app-x", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    assert admin.describe_acls(match, request_timeout=20).result(timeout=30) == [pre]

    # A refused binding fails on its own (the cluster resource has one name).
    bad = AclBinding(ResourceType.BROKER, "other", ResourcePatternType.LITERAL, "User:x", "*",
                     AclOperation.ALTER, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException, match="kafka-cluster|UNKNOWN"):
        for f in admin.create_acls([bad], request_timeout=20).values():
            f.result(timeout=30)

    topics = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)
    deleted = admin.delete_acls([topics], request_timeout=20)
    assert [f.result(timeout=30) for f in deleted.values()] == [[lit]]
    assert admin.describe_acls(every, request_timeout=20).result(timeout=30) == [pre]


def test_the_acl_apis_need_describe_or_alter_on_the_cluster(make_cluster) -> None:
    cluster = make_cluster(brokers=1, config={"authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer",
                                              "allow.everyone.if.no.acl.found": "true"})
    b = cluster.bootstrap
    # No ACL on the cluster yet: allow.everyone lets ANONYMOUS add the first ones.
    r = kavka("--bootstrap-server", b, "--add", "--cluster", "--allow-principal", "User:ANONYMOUS",
              "--allow-principal", "User:admin", "--operation", "Describe", "--operation", "ClusterAction")
    assert r.returncode == 0, r.stderr
    # Now ANONYMOUS may DESCRIBE the cluster (list) but not ALTER it (add, remove).
    assert kavka("--bootstrap-server", b, "--list").returncode == 0
    r = kavka("--bootstrap-server", b, "--add", "--topic", "t", "--allow-principal", "User:a")
    assert r.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.stderr, r
    r = kavka("--bootstrap-server", b, "--remove", "--force", "--cluster")
    assert r.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.stderr, r
    log = cluster.brokers[0].directory / "logs" / "kafka-authorizer.log"
    wait_until(lambda: "Principal = User:ANONYMOUS is Denied Operation = Alter from host = 127.0.0.1 on resource = "
               "Cluster:LITERAL:kafka-cluster for request = CreateAcls" in log.read_text(), 10, "the audit log line")


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(make_cluster) -> None:
    plain = make_cluster(brokers=1)
    r = kavka("--bootstrap-server", plain.bootstrap, "--list")
    assert r.returncode == 1 and "SECURITY_DISABLED" in r.stderr, r
    r = kavka("--bootstrap-server", plain.bootstrap, "--add", "--topic", "t", "--allow-principal", "User:a")
    assert r.returncode == 1 and "SECURITY_DISABLED" in r.stderr, r
